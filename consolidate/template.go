package consolidate

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/engram-dev/engram/signature"
)

// Template is one step of a procedure learned from several episodes: its
// arguments with the values that varied replaced by named variables.
type Template struct {
	Tool string
	// Args are the templated arguments: a string that varied has its
	// varying words as {name}.
	Args map[string]any
	// Vars name the variables and the argument each was found in.
	Vars map[string]string
	// From says where in the trigger each variable the trigger names is:
	// one whose value was, in every episode, the same value of its
	// trigger's message (a path, a path's directory, a quoted name).
	From map[string]signature.Source
	// Wrapped: the calls' arguments were a list or a scalar (Args holds
	// them as {"args": …}).
	Wrapped bool
}

// Templates aligns the same step of several episodes (steps[e][i] is the
// e-th episode's i-th step) and replaces what varied by named variables,
// named for the argument key, or "path" for a path inside a command
// (substrate RFC §15A.9: a recipe an agent can follow without the
// episodes). triggers[e], when given, is the e-th episode's trigger: an
// argument that held, in every episode, values of its trigger at the same
// places has them as variables bound from the trigger ([Template.From]),
// so that "rm -rf /srv/a-1/cache" under "… in /srv/a-1/obj.o" becomes "rm
// -rf {path}/cache" with {path} the trigger's first path less "/obj.o".
func Templates(steps [][]Action, triggers []string) []Template {
	var values [][]triggerValue
	if len(triggers) == len(steps) {
		values = make([][]triggerValue, len(steps))
		for e, tr := range triggers {
			values[e] = triggerValues(tr, nil, nil)
		}
	}
	return templates(steps, values)
}

// templates is [Templates] with each episode's trigger values (values[e],
// nil when the triggers are not known).
func templates(steps [][]Action, values [][]triggerValue) []Template {
	if len(steps) == 0 {
		return nil
	}
	tp := templater{used: map[string]int{}, named: map[string]string{}, values: values}
	out := make([]Template, len(steps[0]))
	for i := range steps[0] {
		first := steps[0][i]
		t := Template{Tool: first.Tool, Args: map[string]any{}, Vars: map[string]string{}, From: map[string]signature.Source{}, Wrapped: first.Wrapped}
		for _, k := range slices.Sorted(maps.Keys(first.Args)) {
			values := make([]any, len(steps))
			for e := range steps {
				values[e] = steps[e][i].Args[k]
			}
			t.Args[k] = tp.value(k, values, &t)
		}
		out[i] = t
	}
	return out
}

// templater names the variables of one procedure's templates. A variable
// is named once per distinct column of values (what it was in each
// episode): the same value used twice — a directory a command names in two
// places, or in two steps — is one variable.
type templater struct {
	used  map[string]int
	named map[string]string
	// values are, for each episode, the values its trigger names; nil when
	// the triggers are not known.
	values [][]triggerValue
}

// name is the variable for a column of values, named from base.
func (tp *templater) name(base string, col []string) string {
	key := base + "\x00" + strings.Join(col, "\x00")
	if n, ok := tp.named[key]; ok && col != nil {
		return n
	}
	tp.used[base]++
	n := base
	if tp.used[base] > 1 {
		n = fmt.Sprintf("%s%d", base, tp.used[base])
	}
	tp.named[key] = n
	return n
}

// value is the templated form of one argument's values across the
// episodes: lists element by element and objects key by key when they
// have one shape, strings word by word as a shell splits them when they
// have as many words; only what varied becomes a variable.
func (tp *templater) value(key string, values []any, t *Template) any {
	if allEqual(values) {
		return values[0]
	}
	switch first := values[0].(type) {
	case []any:
		cols, ok := columns(values, len(first), func(v any, j int) (any, bool) {
			l, ok := v.([]any)
			if !ok || len(l) != len(first) {
				return nil, false
			}
			return l[j], true
		})
		if ok {
			out := make([]any, len(first))
			for j, col := range cols {
				out[j] = tp.value(key, col, t)
			}
			return out
		}
	case map[string]any:
		keys := slices.Sorted(maps.Keys(first))
		cols, ok := columns(values, len(keys), func(v any, j int) (any, bool) {
			m, ok := v.(map[string]any)
			if !ok || len(m) != len(keys) {
				return nil, false
			}
			x, ok := m[keys[j]]
			return x, ok
		})
		if ok {
			out := make(map[string]any, len(keys))
			for j, col := range cols {
				out[keys[j]] = tp.value(keys[j], col, t)
			}
			return out
		}
	}
	strs := make([]string, len(values))
	for i, v := range values {
		s, ok := v.(string)
		if !ok {
			n := tp.name(varName(key), nil)
			t.Vars[n] = key
			return "{" + n + "}"
		}
		strs[i] = s
	}
	// Word by word, when the strings have as many words.
	words := make([][]string, len(strs))
	for i, s := range strs {
		words[i] = shellWords(s)
	}
	if !slices.ContainsFunc(words, func(w []string) bool { return len(w) != len(words[0]) }) && len(words[0]) > 1 {
		out := make([]string, len(words[0]))
		for j := range words[0] {
			col := make([]string, len(words))
			for i := range words {
				col[i] = words[i][j]
			}
			out[j] = tp.word(wordName(key, words, j), col, t)
		}
		return joinWords(out)
	}
	return tp.word(key, strs, t)
}

// installVerbs are the words after which a command names packages.
var installVerbs = []string{"install", "add", "uninstall", "remove", "upgrade", "reinstall", "get"}

// wordName is the name base of the variable of the j-th word of a
// command (words, one list a supporting step): "package" after an
// install verb every step shares (flags between skipped), else the
// argument key's.
func wordName(key string, words [][]string, j int) string {
	for k := j - 1; k >= 0; k-- {
		w := words[0][k]
		if slices.ContainsFunc(words, func(ws []string) bool { return ws[k] != w }) {
			break
		}
		if strings.HasPrefix(w, "-") {
			continue
		}
		if slices.Contains(installVerbs, w) {
			return "package"
		}
		break
	}
	return key
}

// columns are the j-th elements of each value (for j < n), when at(v, j)
// finds them in every value.
func columns(values []any, n int, at func(v any, j int) (any, bool)) ([][]any, bool) {
	cols := make([][]any, n)
	for j := range n {
		cols[j] = make([]any, len(values))
		for e, v := range values {
			x, ok := at(v, j)
			if !ok {
				return nil, false
			}
			cols[j][e] = x
		}
	}
	return cols, true
}

// joinWords joins shell words with single spaces, a heredoc's body (a
// word that starts a line) without one.
func joinWords(ws []string) string {
	var b strings.Builder
	for i, w := range ws {
		if i > 0 && !strings.HasPrefix(w, "\n") {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	return b.String()
}

// word is one word's template: itself when it never varied; else the
// values of the triggers it holds as variables, when it holds them alike
// in every episode; else a variable, keeping a common path suffix
// ("{path}/cache").
func (tp *templater) word(key string, col []string, t *Template) string {
	if !slices.ContainsFunc(col, func(s string) bool { return s != col[0] }) {
		return col[0]
	}
	if w, ok := tp.fromTrigger(key, col, t); ok {
		return w
	}
	if w, ok := tp.pieces(key, col, t); ok {
		return w
	}
	base := varName(key)
	if slices.ContainsFunc(col, func(s string) bool { return strings.ContainsAny(s, `/\`) }) {
		base = "path"
	}
	suffix := commonSuffix(col)
	if i := strings.IndexAny(suffix, `/\`); i >= 0 {
		suffix = suffix[i:]
	} else {
		suffix = ""
	}
	if slices.Contains(col, suffix) || len(suffix) == 1 {
		suffix = ""
	}
	values := make([]string, len(col))
	for i, c := range col {
		values[i] = strings.TrimSuffix(c, suffix)
	}
	n := tp.name(base, values)
	if _, ok := t.Vars[n]; !ok {
		t.Vars[n] = key
	}
	return "{" + n + "}" + suffix
}

// rePiece cuts a word into pieces at the separators inside it.
var rePiece = regexp.MustCompile(`::|==|[=@:,]`)

// pieces templates a word that varied piece by piece, when every
// episode's word has the same separators at the same places and some
// piece never varied: "tests/test_a.py::test_x" and
// "tests/test_b.py::test_y" are "{path}::{test}".
func (tp *templater) pieces(key string, col []string, t *Template) (string, bool) {
	split := func(w string) ([]string, []string) {
		return rePiece.Split(w, -1), rePiece.FindAllString(w, -1)
	}
	parts0, seps0 := split(col[0])
	if len(parts0) < 2 {
		return "", false
	}
	parts := make([][]string, len(col))
	for e, w := range col {
		p, seps := split(w)
		if len(p) != len(parts0) || !slices.Equal(seps, seps0) {
			return "", false
		}
		parts[e] = p
	}
	var b strings.Builder
	fixed := false
	for j := range parts0 {
		pc := make([]string, len(col))
		for e := range col {
			pc[e] = parts[e][j]
		}
		if !slices.ContainsFunc(pc, func(s string) bool { return s != pc[0] }) {
			fixed = fixed || pc[0] != ""
			b.WriteString(pc[0])
		} else {
			b.WriteString(tp.word(pieceName(key, seps0, j), pc, t))
		}
		if j < len(seps0) {
			b.WriteString(seps0[j])
		}
	}
	return b.String(), fixed
}

// pieceName names the variable of the j-th piece of a word: after "::",
// a test; before "==" or "@", a package; after them, a version.
func pieceName(key string, seps []string, j int) string {
	switch {
	case j > 0 && seps[j-1] == "::":
		return "test"
	case j < len(seps) && (seps[j] == "==" || seps[j] == "@"):
		return "package"
	case j > 0 && (seps[j-1] == "==" || seps[j-1] == "@"):
		return "version"
	}
	return key
}

// fromTrigger templates a word that varied by the values of the episodes'
// triggers it holds, when every episode's word is the same text around
// values taken from the same places of its trigger: "{path}/cache" from
// "/srv/a-1/cache" under "… in /srv/a-1/obj.o" and "/tmp/b-2/cache" under
// "… in /tmp/b-2/obj.o". A value the same in every episode stays as it is.
func (tp *templater) fromTrigger(key string, col []string, t *Template) (string, bool) {
	if tp.values == nil {
		return "", false
	}
	segs := make([][]segment, len(col))
	for e, w := range col {
		segs[e] = mark(w, tp.values[e])
		if !slices.Equal(shapeOf(segs[e]), shapeOf(segs[0])) {
			return "", false
		}
	}
	var b strings.Builder
	for j, s := range segs[0] {
		vcol := make([]string, len(col))
		for e := range col {
			vcol[e] = segs[e][j].text
		}
		if !s.value || !slices.ContainsFunc(vcol, func(v string) bool { return v != vcol[0] }) {
			b.WriteString(s.text)
			continue
		}
		base := varName(key)
		if s.src.Placeholder == signature.Path {
			base = "path"
		}
		n := tp.name(base, vcol)
		if _, ok := t.Vars[n]; !ok {
			t.Vars[n] = key
		}
		if _, ok := t.From[n]; !ok {
			t.From[n] = s.src
		}
		b.WriteString("{" + n + "}")
	}
	return b.String(), true
}

// varName names a variable for an argument key.
func varName(key string) string {
	switch strings.ToLower(key) {
	case "args", "arguments", "command", "cmd", "":
		return "value"
	case "file", "filename", "dir", "directory", "filepath", "file_path":
		return "path"
	case "pkg":
		return "package"
	}
	return strings.ToLower(key)
}

func commonSuffix(ss []string) string {
	s := ss[0]
	for _, t := range ss[1:] {
		n := 0
		for n < len(s) && n < len(t) && s[len(s)-1-n] == t[len(t)-1-n] {
			n++
		}
		s = s[len(s)-n:]
	}
	return s
}

func allEqual(values []any) bool {
	if first, ok := values[0].(string); ok {
		// Most arguments are strings: compared as such, without reflection
		// (reflect.DeepEqual says the same of a string and anything).
		return !slices.ContainsFunc(values[1:], func(v any) bool { s, ok := v.(string); return !ok || s != first })
	}
	return !slices.ContainsFunc(values[1:], func(v any) bool { return !reflect.DeepEqual(v, values[0]) })
}

// argsSchema is a step's args_schema: the templated arguments and the
// variables among them, each with the argument it was found in and, when
// the trigger names it, where in the trigger (from_signal, a
// [signature.Source]: retrieval binds it from the task's signal).
func argsSchema(t Template) map[string]any {
	out := map[string]any{"arguments": t.Args}
	if t.Wrapped {
		// Given back in the shape the tool was called with: a list, a string.
		out["arguments"] = t.Args["args"]
	}
	if len(t.Vars) > 0 {
		vars := map[string]any{}
		for n, k := range t.Vars {
			v := map[string]any{"type": "string", "from_argument": k}
			if src, ok := t.From[n]; ok {
				v["from_signal"] = src
			}
			vars[n] = v
		}
		out["variables"] = vars
	}
	return out
}

// triggerValue is a value of a trigger an argument may hold, and where it
// is in the trigger: one of the message's [signature.Values], or a
// directory of one of its paths (the path less a suffix).
type triggerValue struct {
	text string
	src  signature.Source
}

// reDrive is a Windows drive alone, no directory to bind.
var reDrive = regexp.MustCompile(`^[A-Za-z]:$`)

// triggerValues are the values of a trigger message an argument may hold,
// longest first (the first found of equal ones first), so that a path is
// not taken for its directory: its paths and quoted names
// ([signature.Values]) and, when the trigger is an occurrence of a
// learned template with wildcards (tpl), the values at its wildcards;
// each path's directories; and the name of a versioned value ("tokio" of
// "tokio-28", "foo" of "foo==1.2"). A value of one character is left out:
// it would be found in too many arguments by chance.
//
// line, when given, is the trigger read by [signature.ReadLine].
func triggerValues(trigger string, tpl signature.Template, line *signature.Line) []triggerValue {
	key := trigger + "\x00" + strings.Join(tpl, "\x00")
	if out, ok := valuesMemo.get(key); ok {
		return slices.Clone(out)
	}
	out := findTriggerValues(trigger, tpl, line)
	valuesMemo.put(key, out)
	return slices.Clone(out)
}

// valuesMemo remembers the values of the triggers a pass reads again and
// again — once for each candidate a problem might support — since
// extracting them (signature's expressions) was most of a pass's time.
var valuesMemo = memo[[]triggerValue]{limit: 1 << 14}

// memo is a bounded map of results, safe for concurrent use; it forgets
// everything when full.
type memo[V any] struct {
	mu    sync.Mutex
	limit int
	m     map[string]V
}

func (c *memo[V]) get(k string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *memo[V]) put(k string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= c.limit {
		c.m = make(map[string]V)
	}
	c.m[k] = v
}

// matches reports whether a trigger is an occurrence of a template
// ([signature.Match]), remembered like [triggerValues]: a pass asks it of
// every problem for every procedure it writes.
func matches(tpl signature.Template, trigger string) bool {
	key := trigger + "\x00" + strings.Join(tpl, "\x00")
	if ok, found := matchMemo.get(key); found {
		return ok
	}
	_, ok := signature.Match(tpl, trigger)
	matchMemo.put(key, ok)
	return ok
}

var matchMemo = memo[bool]{limit: 1 << 14}

// findTriggerValues is [triggerValues], computed.
func findTriggerValues(trigger string, tpl signature.Template, line *signature.Line) []triggerValue {
	var vals []signature.Value
	switch {
	case tpl.Wildcards() > 0 && line != nil:
		vals, _ = line.Match(tpl)
	case tpl.Wildcards() > 0:
		vals, _ = signature.Match(tpl, trigger) // Values, and one a wildcard; none if it does not match
	case line != nil:
		vals = line.Values
	default:
		vals = signature.Values(trigger)
	}
	var out []triggerValue
	for _, v := range vals {
		if utf8.RuneCountInString(v.Text) < 2 {
			continue
		}
		src := signature.Source{Placeholder: v.Placeholder, Index: v.Index}
		out = append(out, triggerValue{text: v.Text, src: src})
		if v.Placeholder != signature.Path {
			out = append(out, names(v.Text, src)...)
			continue
		}
		for i, r := range v.Text {
			dir := v.Text[:i]
			if (r != '/' && r != '\\') || strings.Trim(dir, `/\.~`) == "" || reDrive.MatchString(dir) {
				continue
			}
			out = append(out, triggerValue{text: dir, src: signature.Source{Placeholder: v.Placeholder, Index: v.Index, TrimSuffix: v.Text[i:]}})
		}
	}
	slices.SortStableFunc(out, func(a, b triggerValue) int { return cmp.Compare(len(b.text), len(a.text)) })
	return out
}

// reVersion is what follows a name's separator when it is a version.
var reVersion = regexp.MustCompile(`^v?\d[\w.+-]*$`)

// names are the names a versioned value holds: the part before a version
// separator ("==", ">=", "@", ":", "-") whose rest is a version.
func names(text string, src signature.Source) []triggerValue {
	var out []triggerValue
	for _, sep := range []string{"==", ">=", "<=", "~=", "@", ":", "-"} {
		i := strings.LastIndex(text, sep)
		if i <= 1 || !reVersion.MatchString(text[i+len(sep):]) {
			continue
		}
		s := src
		s.Before = sep
		out = append(out, triggerValue{text: text[:i], src: s})
		break
	}
	return out
}

// segment is a piece of an argument: text as it is, or a value of the
// trigger (value set) and where it is in the trigger.
type segment struct {
	text  string
	value bool
	src   signature.Source
}

// mark cuts s into text and the values of vals it holds, each standing
// apart (not part of a longer name), the longest where several start.
func mark(s string, vals []triggerValue) []segment {
	var out []segment
	lit := 0
	for i := 0; i < len(s); {
		if v, ok := valueAt(s, i, vals); ok {
			if lit < i {
				out = append(out, segment{text: s[lit:i]})
			}
			out = append(out, segment{text: v.text, value: true, src: v.src})
			i += len(v.text)
			lit = i
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	if lit < len(s) {
		out = append(out, segment{text: s[lit:]})
	}
	return out
}

// valueAt is the first of vals that s holds at i, standing apart.
func valueAt(s string, i int, vals []triggerValue) (triggerValue, bool) {
	if r, _ := utf8.DecodeLastRuneInString(s[:i]); i > 0 && nameRune(r) {
		return triggerValue{}, false
	}
	for _, v := range vals {
		if !strings.HasPrefix(s[i:], v.text) {
			continue
		}
		if r, _ := utf8.DecodeRuneInString(s[i+len(v.text):]); i+len(v.text) < len(s) && nameRune(r) {
			continue
		}
		return v, true
	}
	return triggerValue{}, false
}

// nameRune reports whether a rune can be part of a name or a path element:
// a value next to one is part of a longer name.
func nameRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("_.@+-", r)
}

// shapeOf is what two episodes' segments must share to be one template:
// the text, and where each value is in the trigger.
func shapeOf(segs []segment) []string {
	out := make([]string, len(segs))
	for i, s := range segs {
		out[i] = s.text
		if s.value {
			out[i] = fmt.Sprintf("\x00%s\x00%d\x00%s\x00%s", s.src.Placeholder, s.src.Index, s.src.TrimSuffix, s.src.Before)
		}
	}
	return out
}

// placeholders is s with the values of the trigger it holds replaced by
// their placeholders.
func placeholders(s string, vals []triggerValue) string {
	var b strings.Builder
	for _, seg := range mark(s, vals) {
		if seg.value {
			b.WriteString(seg.src.Placeholder)
		} else {
			b.WriteString(seg.text)
		}
	}
	return b.String()
}
