package consolidate

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
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
	if len(steps) == 0 {
		return nil
	}
	tp := templater{used: map[string]int{}, named: map[string]string{}}
	if len(triggers) == len(steps) {
		tp.values = make([][]triggerValue, len(steps))
		for e, tr := range triggers {
			tp.values[e] = triggerValues(tr)
		}
	}
	out := make([]Template, len(steps[0]))
	for i := range steps[0] {
		first := steps[0][i]
		t := Template{Tool: first.Tool, Args: map[string]any{}, Vars: map[string]string{}, From: map[string]signature.Source{}}
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
// episodes.
func (tp *templater) value(key string, values []any, t *Template) any {
	if allEqual(values) {
		return values[0]
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
		words[i] = strings.Fields(s)
	}
	if !slices.ContainsFunc(words, func(w []string) bool { return len(w) != len(words[0]) }) && len(words[0]) > 1 {
		out := make([]string, len(words[0]))
		for j := range words[0] {
			col := make([]string, len(words))
			for i := range words {
				col[i] = words[i][j]
			}
			out[j] = tp.word(key, col, t)
		}
		return strings.Join(out, " ")
	}
	return tp.word(key, strs, t)
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
	return !slices.ContainsFunc(values[1:], func(v any) bool { return !reflect.DeepEqual(v, values[0]) })
}

// argsSchema is a step's args_schema: the templated arguments and the
// variables among them, each with the argument it was found in and, when
// the trigger names it, where in the trigger (from_signal, a
// [signature.Source]: retrieval binds it from the task's signal).
func argsSchema(t Template) map[string]any {
	out := map[string]any{"arguments": t.Args}
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
// not taken for its directory. A value of one character is left out: it
// would be found in too many arguments by chance.
func triggerValues(trigger string) []triggerValue {
	var out []triggerValue
	for _, v := range signature.Values(trigger) {
		if utf8.RuneCountInString(v.Text) < 2 {
			continue
		}
		src := signature.Source{Placeholder: v.Placeholder, Index: v.Index}
		out = append(out, triggerValue{text: v.Text, src: src})
		if v.Placeholder != signature.Path {
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
			out[i] = fmt.Sprintf("\x00%s\x00%d\x00%s", s.src.Placeholder, s.src.Index, s.src.TrimSuffix)
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
