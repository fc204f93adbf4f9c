package eval

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// pastError is an error of a past successful session and what followed
// it: every call that succeeded until it was resolved (Steps), and the
// calls that advanced its fix (Fix).
type pastError struct {
	message string
	words   []string
	steps   []Call
	fix     []Call
}

// pastErrors are the resolved errors of a successful session.
func pastErrors(s *Session) []pastError {
	if !s.Solved() {
		return nil
	}
	var out []pastError
	var cur *pastError
	for _, st := range s.Steps {
		if st.Error != "" {
			out = append(out, pastError{message: st.Error, words: strings.Fields(st.Error)})
			cur = &out[len(out)-1]
			continue
		}
		if cur == nil || st.Failed {
			continue
		}
		cur.steps = append(cur.steps, st.Call)
		if st.Advanced {
			cur.fix = append(cur.fix, st.Call)
		}
		if st.Resolved {
			cur = nil
		}
	}
	return out
}

// SessionReplay is the raw-episode control of the session worlds: after an
// error it replays the calls that succeeded after the most similar past
// error (by shared words) of a successful past session, until that error
// was resolved, the values that differ between the two messages
// substituted; then it explores what is left. Its memory is its own
// journal of the sessions it lived, kept until deployment.
type SessionReplay struct {
	Seed    uint64
	journal []pastError
}

// Name implements [SessionAgent].
func (*SessionReplay) Name() string { return rawAgent }

// Solve implements [SessionAgent].
func (a *SessionReplay) Solve(ctx context.Context, s *Session) (Attempt, error) {
	at := Attempt{Source: FromExplore, Retrieved: true}
	err := drive(ctx, s, func(_ context.Context, s *Session, t *Trouble) error {
		rng := sessionRNG(a.Seed, s, t)
		t.Retrieved = true
		past, ok := mostSimilar(a.journal, t.Message)
		if !ok {
			lookAround(s, rng)
			work(s, t, rng)
			t.Source = FromExplore
			return nil
		}
		plan := substituteCalls(past.steps, valuePairs(past.message, t.Message))
		worked, _ := work(s, t, rng, plan)
		t.Source, t.Followed, t.Useful = FromEpisode, true, worked == 0
		at.Source, at.Followed = FromEpisode, true
		return nil
	})
	if err != nil {
		return Attempt{}, err
	}
	if !s.Deployment {
		a.journal = append(a.journal, pastErrors(s)...)
	}
	at.Useful = at.Followed && s.Solved()
	return at, nil
}

// minSimilarity is the share of words (Jaccard) a past error must share
// with an error to be replayed for it: two messages of one tool with
// other values share half their words or more; two errors of different
// tools, a word or two ("error:", "denied").
const minSimilarity = 0.3

// mostSimilar is the past error whose message shares the largest share of
// words with message (Jaccard), the latest on a tie; none shares less
// than minSimilarity.
func mostSimilar(journal []pastError, message string) (pastError, bool) {
	words := strings.Fields(message)
	best, score := -1, 0.0
	for i, p := range journal {
		if sc := jaccard(words, p.words); sc >= minSimilarity && sc >= score {
			best, score = i, sc
		}
	}
	if best < 0 {
		return pastError{}, false
	}
	return journal[best], true
}

// similarTop are the indexes of the n past errors most similar to message,
// best first.
func similarTop(journal []pastError, message string, n int) []int {
	words := strings.Fields(message)
	type scored struct {
		i  int
		sc float64
	}
	var all []scored
	for i, p := range journal {
		if sc := jaccard(words, p.words); sc >= minSimilarity {
			all = append(all, scored{i, sc})
		}
	}
	slices.SortStableFunc(all, func(a, b scored) int {
		switch {
		case a.sc > b.sc:
			return -1
		case a.sc < b.sc:
			return 1
		}
		return b.i - a.i // the latest first
	})
	var out []int
	for _, s := range all[:min(n, len(all))] {
		out = append(out, s.i)
	}
	return out
}

func jaccard(a, b []string) float64 {
	set := map[string]int{}
	for _, w := range a {
		set[w] |= 1
	}
	for _, w := range b {
		set[w] |= 2
	}
	both := 0
	for _, v := range set {
		if v == 3 {
			both++
		}
	}
	if len(set) == 0 {
		return 0
	}
	return float64(both) / float64(len(set))
}

// valuePairs compares two messages word by word and returns, for each
// word that differs, the old and the new value without their common
// prefix and suffix ('requests' and 'toml' give requests and toml).
func valuePairs(old, cur string) [][2]string {
	ow, cw := strings.Fields(old), strings.Fields(cur)
	var out [][2]string
	for i := range min(len(ow), len(cw)) {
		o, c := ow[i], cw[i]
		if o == c {
			continue
		}
		for len(o) > 0 && len(c) > 0 && o[0] == c[0] {
			o, c = o[1:], c[1:]
		}
		for len(o) > 0 && len(c) > 0 && o[len(o)-1] == c[len(c)-1] {
			o, c = o[:len(o)-1], c[:len(c)-1]
		}
		if o != "" && !slices.Contains(out, [2]string{o, c}) {
			out = append(out, [2]string{o, c})
		}
	}
	// Longest first, so that a value is not replaced inside a longer one.
	slices.SortStableFunc(out, func(a, b [2]string) int { return len(b[0]) - len(a[0]) })
	return out
}

func substituteCalls(calls []Call, pairs [][2]string) []Call {
	out := make([]Call, len(calls))
	for i, c := range calls {
		out[i] = Call{Tool: c.Tool, Args: replaceDeep(c.Args, pairs)}
	}
	return out
}

func replaceDeep(v any, pairs [][2]string) any {
	switch x := v.(type) {
	case string:
		// One pass, so that a value replaced is not replaced again.
		var olds []string
		for _, p := range pairs {
			olds = append(olds, p[0], p[1])
		}
		return strings.NewReplacer(olds...).Replace(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = replaceDeep(e, pairs)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = replaceDeep(e, pairs)
		}
		return out
	}
	return v
}

// Normalisation of the frequency table: quoted strings, paths and words
// with digits are an error's values; masked, the rest is its template.
var (
	reQuoted = regexp.MustCompile("'[^']*'|\"[^\"]*\"|`[^`]*`")
	reValue  = regexp.MustCompile(`\S*/\S*|\S*[0-9]\S*`)
)

// errorValues are the values of an error message, in order, and its
// template: the message with each masked.
func errorValues(message string) (template string, values []string) {
	template = reQuoted.ReplaceAllStringFunc(message, func(q string) string {
		values = append(values, q[1:len(q)-1])
		return "<q>"
	})
	template = reValue.ReplaceAllStringFunc(template, func(v string) string {
		if v == "<q>" {
			return v
		}
		values = append(values, v)
		return "<v>"
	})
	return template, values
}

// templated is calls with each value of an error replaced by its
// placeholder {vN}, longest value first.
func templated(calls []Call, values []string) []Call {
	var pairs [][2]string
	for i, v := range values {
		if v != "" {
			pairs = append(pairs, [2]string{v, "{v" + strconv.Itoa(i) + "}"})
		}
	}
	slices.SortStableFunc(pairs, func(a, b [2]string) int { return len(b[0]) - len(a[0]) })
	return substituteCalls(calls, pairs)
}

func bindValues(calls []Call, values []string) []Call {
	vars := map[string]string{}
	for i, v := range values {
		vars["v"+strconv.Itoa(i)] = v
	}
	out := make([]Call, len(calls))
	for i, c := range calls {
		out[i] = c.Bind(vars)
	}
	return out
}

// FrequencyTable is the control that counts, for each error template (the
// message with its quoted strings, paths and words with digits masked),
// the fixes that followed it in the agent's own past sessions — the calls
// that advanced the fix, their values templated — and follows the most
// frequent, bound to the new error's values. It knows nothing of engram.
type FrequencyTable struct {
	Seed  uint64
	table map[string]map[string]*tableEntry
}

type tableEntry struct {
	calls []Call
	count int
	last  int
}

// Name implements [SessionAgent].
func (*FrequencyTable) Name() string { return tableAgent }

// tableAgent names the frequency-table control.
const tableAgent = "frequency table"

// Solve implements [SessionAgent].
func (a *FrequencyTable) Solve(ctx context.Context, s *Session) (Attempt, error) {
	at := Attempt{Source: FromExplore, Retrieved: true}
	err := drive(ctx, s, func(_ context.Context, s *Session, t *Trouble) error {
		rng := sessionRNG(a.Seed, s, t)
		t.Retrieved = true
		plans := a.top(t.Message, 1)
		if len(plans) == 0 {
			lookAround(s, rng)
			work(s, t, rng)
			t.Source = FromExplore
			return nil
		}
		worked, _ := work(s, t, rng, plans...)
		t.Source, t.Followed, t.Useful = FromEpisode, true, worked == 0
		at.Source, at.Followed = FromEpisode, true
		return nil
	})
	if err != nil {
		return Attempt{}, err
	}
	if !s.Deployment {
		a.learn(s)
	}
	at.Useful = at.Followed && s.Solved()
	return at, nil
}

// learn counts the fixes of a session's resolved errors (of a failed
// session too: each error resolved is a fix seen).
func (a *FrequencyTable) learn(s *Session) {
	if a.table == nil {
		a.table = map[string]map[string]*tableEntry{}
	}
	open := false
	var fix []Call
	message := ""
	for _, st := range s.Steps {
		if st.Error != "" {
			message, fix, open = st.Error, nil, true
			continue
		}
		if !open {
			continue
		}
		if st.Advanced {
			fix = append(fix, st.Call)
		}
		if st.Resolved {
			a.count(message, fix, s.Index)
			open = false
		}
	}
}

func (a *FrequencyTable) count(message string, fix []Call, at int) {
	if len(fix) == 0 {
		return
	}
	tmpl, values := errorValues(message)
	calls := templated(fix, values)
	var key strings.Builder
	for _, c := range calls {
		key.WriteString(c.String())
	}
	row := a.table[tmpl]
	if row == nil {
		row = map[string]*tableEntry{}
		a.table[tmpl] = row
	}
	e := row[key.String()]
	if e == nil {
		e = &tableEntry{calls: calls}
		row[key.String()] = e
	}
	e.count++
	e.last = at
}

// top are the n most frequent fixes of the message's template, bound to
// its values.
func (a *FrequencyTable) top(message string, n int) [][]Call {
	tmpl, values := errorValues(message)
	var es []*tableEntry
	for _, e := range a.table[tmpl] {
		es = append(es, e)
	}
	slices.SortFunc(es, func(x, y *tableEntry) int {
		if x.count != y.count {
			return y.count - x.count
		}
		return y.last - x.last
	})
	var out [][]Call
	for _, e := range es[:min(n, len(es))] {
		c := bindValues(e.calls, values)
		if !unboundCalls(c) {
			out = append(out, c)
		}
	}
	return out
}

func unboundCalls(cs []Call) bool {
	for _, c := range cs {
		if c.Unbound() {
			return true
		}
	}
	return false
}
