package retrieve

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/signature"
)

// taskSignal is a text of the task an error may be read from (a signal,
// or the text), with its signature.
type taskSignal struct {
	text, sig string
}

// signalsOf are the task's signals, then its text, with their
// signatures; then its intent, as the trigger of a procedure learned from
// episodes with no error names it ("intent:<label>", package consolidate).
func signalsOf(t Task) []taskSignal {
	var out []taskSignal
	for _, s := range append(slices.Clone(t.Signals), t.Text) {
		if sig := signature.Of(s); sig != "" {
			out = append(out, taskSignal{text: s, sig: sig})
		}
	}
	if label := strings.ToLower(strings.TrimSpace(t.Intent)); label != "" {
		out = append(out, taskSignal{text: intentPrefix + label, sig: signature.Of(intentPrefix + label)})
	}
	return out
}

// signatures remembers the signatures of procedures' trigger signals
// (signature.Of, a dozen regular expressions over the text): a retrieval
// reads them for every procedure it ranks, and the procedures a tenant's
// tasks meet are few and change seldom. It holds at most maxSignatures,
// and starts again when full. The zero value is ready to use.
type signatures struct {
	mu sync.Mutex
	m  map[string]string
}

const maxSignatures = 10_000

func (s *signatures) of(signal string) string {
	s.mu.Lock()
	sig, ok := s.m[signal]
	s.mu.Unlock()
	if ok {
		return sig
	}
	sig = signature.Of(signal)
	s.mu.Lock()
	if s.m == nil || len(s.m) >= maxSignatures {
		s.m = make(map[string]string)
	}
	s.m[signal] = sig
	s.mu.Unlock()
	return sig
}

// intentPrefix starts the trigger of a procedure learned from a task
// with no error: its intent label.
const intentPrefix = "intent:"

// sameProblem is the first of signals whose signature is a trigger's (sig):
// the same problem, met again with other values (substrate RFC §8:
// procedures are found by their trigger).
func sameProblem(sig string, signals []taskSignal) (string, bool) {
	if sig == "" {
		return "", false
	}
	for _, s := range signals {
		if s.sig == sig {
			return s.text, true
		}
	}
	return "", false
}

// templateMatch is the first of signals that is an occurrence of a
// learned error template (a trigger's [memory.Trigger.Template]): the
// same problem, whatever values its wildcards hold.
func templateMatch(tpl string, signals []taskSignal) (string, bool) {
	t := signature.ParseTemplate(tpl)
	for _, s := range signals {
		if _, ok := signature.Match(t, s.text); ok {
			return s.text, true
		}
	}
	return "", false
}

// reVar is a variable in a recipe's templated arguments.
var reVar = regexp.MustCompile(`\{([A-Za-z_][A-Za-z_0-9]*)\}`)

// followable reports whether a client can follow a recipe as it is: it
// has steps, and every variable its arguments hold is bound (substrate
// RFC §15A.9: a recipe an agent can follow without the episodes).
func followable(recipe []memory.Step, bound map[string]string) bool {
	if len(recipe) == 0 {
		return false
	}
	for _, st := range recipe {
		b, _ := json.Marshal(st.ArgsSchema["arguments"])
		for _, m := range reVar.FindAllSubmatch(b, -1) {
			if _, ok := bound[string(m[1])]; !ok {
				return false
			}
		}
	}
	return true
}

// matchTrigger matches a procedure to the task by its best trigger and
// records how in why: the trigger's signal, whether it is the task's
// problem (a signature match), the share of its words the task names, and
// on a signature match the bindings of the recipe's variables. It returns
// the trigger's conditions and whether it is the task's problem.
func matchTrigger(why *Why, p memory.CompetencePayload, t Task, signals []taskSignal, sigs *signatures) (memory.Conditions, bool) {
	trig, sig, signal := bestTrigger(p.Triggers, t, signals, sigs)
	why.MatchedSignal = trig.Signal
	cover := coverage(sig, taskWords(t))
	if signal != "" {
		why.SignatureMatch, cover = true, 1
		why.Bindings = bindings(p.Recipe, trig, signal)
		why.Followable = followable(p.Recipe, why.Bindings)
	}
	why.SignalCoverage = &cover
	return trig.Conditions, signal != ""
}

// coverage is the share of the words of a trigger's signature (sig, its
// placeholders left out) that are among want: 1 for a procedure without a
// trigger to judge by.
func coverage(sig string, want map[string]bool) float64 {
	have := words(signature.Bare(sig))
	if len(have) == 0 {
		return 1
	}
	n := 0
	for w := range have {
		if want[w] {
			n++
		}
	}
	return float64(n) / float64(len(have))
}

// taskWords are the words of the task's text, intent and signals.
func taskWords(t Task) map[string]bool {
	return words(strings.Join(append([]string{t.Text, t.Intent}, t.Signals...), " "))
}

// bindings are the values of a recipe's variables in a signal of the
// trigger's signature: each variable a step says where in the trigger to
// find (args_schema.variables[name].from_signal, a [signature.Source]),
// found at that place in the signal (substrate RFC §15A.9: variables bound
// from the task). A variable the signal does not hold is left out; nil when
// none is bound.
func bindings(recipe []memory.Step, trig memory.Trigger, signal string) map[string]string {
	var vals []signature.Value
	out := map[string]string{}
	for _, st := range recipe {
		vars, _ := st.ArgsSchema["variables"].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(vars)) {
			src, ok := sourceOf(vars[name])
			if _, bound := out[name]; bound || !ok {
				continue
			}
			if vals == nil {
				vals = signature.Values(signal)
				if trig.Template != "" {
					vals, _ = signature.Match(signature.ParseTemplate(trig.Template), signal)
				}
			}
			if v, ok := src.In(vals); ok {
				out[name] = v
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// sourceOf reads where a variable is in the trigger from its entry in an
// args_schema (decoded JSON), if it says.
func sourceOf(v any) (signature.Source, bool) {
	m, _ := v.(map[string]any)
	raw, ok := m["from_signal"]
	if !ok {
		return signature.Source{}, false
	}
	b, err := json.Marshal(raw)
	var src signature.Source
	if err != nil || json.Unmarshal(b, &src) != nil || src.Placeholder == "" {
		return signature.Source{}, false
	}
	return src, true
}
