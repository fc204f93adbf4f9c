package signature

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Wildcard is the placeholder a learned template puts where the messages
// of one problem named different instance values that the fixed
// normalisation of [Of] does not see: a bare package name ("tokio-28"), a
// program ("jq"), a host. A variable bound from it has the source
// {Placeholder: Wildcard, Index: k}: the k-th wildcard of the template.
const Wildcard = "<*>"

// Template is an error template learned from a stream of messages (the way
// log template miners such as Drain and Spell learn them): the problem
// line's words, each in its normalised form, with a [Wildcard] where the
// messages of the problem named different values. Its String form is what
// a procedure's trigger keeps (memory.Trigger.Template) and [Match] reads.
type Template []string

// String is the template as one line, its words joined by single spaces.
func (t Template) String() string { return strings.Join(t, " ") }

// Wildcards is how many wildcards the template has.
func (t Template) Wildcards() int {
	n := 0
	for _, w := range t {
		if w == Wildcard {
			n++
		}
	}
	return n
}

// ParseTemplate reads a template's String form.
func ParseTemplate(s string) Template { return strings.Fields(s) }

// Line is a message as templates read it: the words of its problem line,
// as they were (Raw) and each normalised on its own (Norm), so that word k
// of two messages of one problem compare; and its [Values]. Reading a
// message is the cost of matching it against templates: a Line read once
// ([ReadLine]) is matched against any number of them, and is plain data
// that can be kept for a message met again.
type Line struct {
	Raw    []string `json:"raw"`
	Norm   []string `json:"norm"`
	Values []Value  `json:"values"`
}

// ReadLine reads a message for templates.
func ReadLine(message string) Line {
	l := readWords(message)
	l.Values = Values(message)
	return l
}

// readWords is a message's Line without its values.
func readWords(message string) Line {
	var l Line
	for _, f := range strings.Fields(problemLine(message)) {
		l.Raw = append(l.Raw, f)
		l.Norm = append(l.Norm, strings.ToLower(normaliseWord(f)))
	}
	return l
}

// normaliseWord is [Normalise] of one word, without its trimming: a word
// that is all punctuation stays as it is.
func normaliseWord(w string) string {
	// A word of letters alone holds nothing Normalise replaces (no digit,
	// separator, quote or placeholder): it is the word in lower case. Most
	// words of an error message are such, and Normalise's expressions are
	// the cost of matching messages against templates.
	if lettersOnly(w) {
		return strings.ToLower(w)
	}
	n := Normalise(w)
	if n == "" {
		return w
	}
	return n
}

// lettersOnly reports whether w is letters alone.
func lettersOnly(w string) bool {
	for _, r := range w {
		if !unicode.IsLetter(r) {
			return false
		}
	}
	return w != ""
}

// Match reports whether a message is an occurrence of a template: as many
// words, each the template's word once normalised or under a wildcard. It
// returns the message's values: those of [Values], then one per wildcard
// ({Placeholder: Wildcard, Index: k}, the word without the punctuation
// around it).
func Match(tpl Template, message string) ([]Value, bool) {
	// A message of another length is none: said before any word is
	// normalised.
	if len(tpl) == 0 || len(strings.Fields(problemLine(message))) != len(tpl) {
		return nil, false
	}
	wild, ok := readWords(message).wildcards(tpl)
	if !ok {
		return nil, false
	}
	return append(Values(message), wild...), true
}

// Match is [Match] of the message l was read from.
func (l Line) Match(tpl Template) ([]Value, bool) {
	wild, ok := l.wildcards(tpl)
	if !ok {
		return nil, false
	}
	return append(slices.Clone(l.Values), wild...), true
}

// Matches reports whether the message l was read from is an occurrence of
// tpl.
func (l Line) Matches(tpl Template) bool {
	if len(tpl) == 0 || len(l.Norm) != len(tpl) {
		return false
	}
	for i, w := range l.Norm {
		if tpl[i] != w && tpl[i] != Wildcard {
			return false
		}
	}
	return true
}

// wildcards are the values at tpl's wildcards of the message l was read
// from, when it is an occurrence of tpl.
func (l Line) wildcards(tpl Template) ([]Value, bool) {
	if len(tpl) == 0 || len(l.Norm) != len(tpl) {
		return nil, false
	}
	var wild []Value
	for i, w := range l.Norm {
		switch tpl[i] {
		case w:
		case Wildcard:
			wild = append(wild, Value{Placeholder: Wildcard, Index: len(wild), Text: bare(l.Raw[i])})
		default:
			return nil, false
		}
	}
	return wild, true
}

// bare is a word without the punctuation around it: "jq:" is "jq",
// "(tokio-28)" is "tokio-28".
func bare(w string) string {
	return strings.TrimFunc(w, func(r rune) bool { return strings.ContainsRune(`()[]{}<>,;:'"`+"`", r) })
}

// Miner learns a tenant's error templates from its messages, one at a
// time, in a bounded number of clusters (at most Limit; the messages past
// it keep their fixed signature). Two messages fall in one cluster when
// they have as many words, the same first word, and differ only where an
// instance value goes (see mergeable). The zero value is not ready: use
// [NewMiner].
type Miner struct {
	limit    int
	clusters map[string][]*cluster // by word count and first word
	n        int
}

// cluster is one template and how many messages it holds.
type cluster struct {
	tpl  Template
	size int
}

// DefaultTemplateLimit bounds a tenant's learned templates.
const DefaultTemplateLimit = 2000

// NewMiner returns a miner of at most limit templates
// ([DefaultTemplateLimit] when limit is not positive).
func NewMiner(limit int) *Miner {
	if limit <= 0 {
		limit = DefaultTemplateLimit
	}
	return &Miner{limit: limit, clusters: map[string][]*cluster{}}
}

// Add takes a message into the miner's templates.
func (m *Miner) Add(message string) { m.AddLine(readWords(message)) }

// AddLine takes a message read by [ReadLine] into the miner's templates.
func (m *Miner) AddLine(l Line) {
	if len(l.Norm) == 0 {
		return
	}
	tpl := slices.Clone(Template(l.Norm))
	key := bucket(tpl)
	for _, c := range m.clusters[key] {
		if merged, ok := merge(c.tpl, tpl, l.Raw); ok {
			c.tpl, c.size = merged, c.size+1
			return
		}
	}
	if m.n >= m.limit {
		return
	}
	m.clusters[key] = append(m.clusters[key], &cluster{tpl: tpl, size: 1})
	m.n++
}

// Template is the learned template a message is an occurrence of, and
// whether it has a wildcard: without one, the message's fixed signature
// ([Of]) says as much.
func (m *Miner) Template(message string) (Template, bool) { return m.TemplateOf(readWords(message)) }

// TemplateOf is [Miner.Template] of a message read by [ReadLine].
func (m *Miner) TemplateOf(l Line) (Template, bool) {
	if len(l.Norm) == 0 {
		return nil, false
	}
	for _, c := range m.clusters[bucket(l.Norm)] {
		if l.Matches(c.tpl) {
			return c.tpl, c.tpl.Wildcards() > 0
		}
	}
	return nil, false
}

// bucket is where a template is looked for: by word count and first
// word, a first word that is a value (an instance's code, "E8949")
// standing for any.
func bucket(t Template) string {
	first := t[0]
	if valueLike(first) || first == Wildcard {
		first = Wildcard
	}
	return string(rune(min(len(t), 1000))) + "\x00" + first
}

// merge is template t widened to hold a message (its normalised words
// norm, its words raw): a wildcard at each word where they differ, when
// they may be one problem (see mergeable).
func merge(t, norm Template, raw []string) (Template, bool) {
	var diff []int
	equal := 0
	for i := range t {
		switch {
		case t[i] == norm[i]:
			equal++
		case t[i] != Wildcard:
			diff = append(diff, i)
		}
	}
	if len(diff) == 0 {
		return t, true
	}
	if !mergeable(t, raw, diff, equal) {
		return nil, false
	}
	out := slices.Clone(t)
	for _, i := range diff {
		out[i] = Wildcard
	}
	return out, true
}

// mergeable reports whether two messages that differ at the words diff
// (and share equal words) are one problem with different values: the
// first word is shared (or is a value on both sides: a code that varies
// with the instance), most words are, and either one word differs among
// at least three shared ones ("bash: jq: command not found", "bash: rg:
// command not found"), or every differing word looks like an instance
// value on both sides — a digit, a separator or mixed case in it
// ("tokio-28", "numpy-12", "db-3.internal") — so that "npm: checksum
// failure" and "npm: lockfile conflict" stay two problems.
func mergeable(t Template, raw []string, diff []int, equal int) bool {
	if diff[0] == 0 && (!valueLike(raw[0]) || !valueLike(t[0])) || equal*2 < len(t) {
		return false
	}
	if len(diff) == 1 && equal >= 3 {
		return true
	}
	for _, i := range diff {
		if !valueLike(raw[i]) || !valueLike(t[i]) {
			return false
		}
	}
	return true
}

// valueLike reports whether a word looks like an instance value rather
// than a word of the message: it holds a digit, a placeholder, a
// separator inside it, or an upper-case letter after its first.
func valueLike(w string) bool {
	w = bare(w)
	if w == "" {
		return false
	}
	if strings.Contains(w, "<") {
		return true
	}
	first := true
	for i, r := range w {
		switch {
		case unicode.IsDigit(r):
			return true
		case !first && unicode.IsUpper(r):
			return true
		case strings.ContainsRune("-_.@/:=+", r) && i > 0 && i+utf8.RuneLen(r) < len(w):
			return true
		}
		first = false
	}
	return false
}

// Fix is the template with the wildcards keep refuses made the words a
// message has there (a template specialised to one value: a fix that
// holds for "jq" only), and, for each wildcard kept, its index in the
// result. ok is false when the message is no occurrence of the template.
func (t Template) Fix(message string, keep func(k int) bool) (Template, map[int]int, bool) {
	return t.FixLine(readWords(message), keep)
}

// FixLine is [Template.Fix] of a message read by [ReadLine].
func (t Template) FixLine(l Line, keep func(k int) bool) (Template, map[int]int, bool) {
	if len(l.Norm) != len(t) {
		return nil, nil, false
	}
	out := slices.Clone(t)
	remap := map[int]int{}
	k := 0
	for i, w := range t {
		if w != Wildcard {
			continue
		}
		if keep(k) {
			remap[k] = len(remap)
		} else {
			out[i] = l.Norm[i]
		}
		k++
	}
	return out, remap, true
}

// WildcardValues are the words of a message at a template's wildcards, in
// order, as [Match] binds them; nil when it is no occurrence.
func (t Template) WildcardValues(message string) []string {
	if len(t) == 0 || len(strings.Fields(problemLine(message))) != len(t) {
		return nil
	}
	return t.WildcardValuesOf(readWords(message))
}

// WildcardValuesOf is [Template.WildcardValues] of a message read by
// [ReadLine].
func (t Template) WildcardValuesOf(l Line) []string {
	wild, ok := l.wildcards(t)
	if !ok {
		return nil
	}
	var out []string
	for _, v := range wild {
		out = append(out, v.Text)
	}
	return out
}
