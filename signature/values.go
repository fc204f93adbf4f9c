package signature

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Value is a value an error message names where its signature has a
// placeholder a variable can be bound from: the Index-th path ([Path]) or
// the Index-th quoted name ([Quoted]) of the message's problem line,
// counted from 0 in the order they appear.
type Value struct {
	Placeholder string
	Index       int
	Text        string
}

// Source says where in an error message a variable's value is: the value
// of its kind (Placeholder) and rank (Index) among the message's [Values],
// without TrimSuffix (a directory is the path of a file in it without
// "/obj.o"). A learned procedure keeps it for each variable its trigger
// names, in its step's args_schema as variables[name].from_signal, so that
// retrieval can bind the variable from the next occurrence's message
// (substrate RFC §15A.9: a recipe an agent can follow without the
// episodes).
type Source struct {
	Placeholder string `json:"placeholder"`
	Index       int    `json:"index"`
	TrimSuffix  string `json:"trim_suffix,omitempty"`
	// Before, when set, takes the value's part before the last Before in
	// it: the name of a versioned value ("tokio" of "tokio-28" with "-",
	// "foo" of "foo==1.2" with "==").
	Before string `json:"before,omitempty"`
}

// In is the value s names among vals, a message's [Values]: none when the
// message has no such value or the value does not end with the suffix.
func (s Source) In(vals []Value) (string, bool) {
	for _, v := range vals {
		if v.Placeholder != s.Placeholder || v.Index != s.Index {
			continue
		}
		text, ok := strings.CutSuffix(v.Text, s.TrimSuffix)
		if s.Before != "" {
			i := strings.LastIndex(text, s.Before)
			if i <= 0 {
				return "", false
			}
			text = text[:i]
		}
		return text, ok && text != ""
	}
	return "", false
}

// reLineCol is the :line[:col] a path may end with.
var reLineCol = regexp.MustCompile(`(?::\d+)+$`)

// Values are the paths and quoted names of a message's problem line, in
// order: a path without the :line:col that may follow it, a quoted name
// without its quotes. They are found as [Of] finds them, so that two
// messages of one signature have their values in the same places: what a
// URL or a UUID holds is neither, and a path in quotes is a quoted name.
func Values(message string) []Value {
	var x extraction
	s := x.replace(strings.Map(unmark, problemLine(message)), reURL, "", nil)
	s = x.replace(s, reUUID, "", nil)
	s = x.replace(s, reQuoted, Quoted, nil)
	s = x.replace(s, rePath, Path, isPath)
	s = x.replace(s, reFileLine, Path, nil)
	var out []Value
	count := map[string]int{}
	for _, r := range s {
		k, ok := x.index(r)
		if !ok || x.kinds[k] == "" {
			continue
		}
		kind, text := x.kinds[k], x.texts[k]
		if kind == Quoted {
			_, first := utf8.DecodeRuneInString(text)
			_, last := utf8.DecodeLastRuneInString(text)
			text = text[first : len(text)-last]
		} else {
			text = reLineCol.ReplaceAllString(text, "")
		}
		out = append(out, Value{Placeholder: kind, Index: count[kind], Text: text})
		count[kind]++
	}
	return out
}

// markBase is the first of the runes an extraction puts in a line where it
// took a value out: private-use runes, which no pattern of this package
// matches (they are not \w, a digit, a separator or a quote), so that the
// next patterns see the line as [Normalise] sees it with placeholders.
const (
	markBase = 0xF0000
	markLast = 0xFFFFD
)

// unmark replaces a rune of a message that would read as a mark.
func unmark(r rune) rune {
	if r >= markBase && r <= markLast {
		return utf8.RuneError
	}
	return r
}

// extraction is a line's values taken out in the order [Normalise] replaces
// them: the k-th is marked in the line by the rune markBase+k.
type extraction struct {
	texts []string
	// kinds are the values' placeholders; "" for what is no value to bind
	// (a URL, a UUID).
	kinds []string
}

// replace takes the matches of re in s that keep accepts (all when nil)
// out as values of kind, and returns s with marks in their place.
func (x *extraction) replace(s string, re *regexp.Regexp, kind string, keep func(string) bool) string {
	return re.ReplaceAllStringFunc(s, func(m string) string {
		if keep != nil && !keep(m) {
			return m
		}
		x.texts = append(x.texts, x.expand(m))
		x.kinds = append(x.kinds, kind)
		return string(rune(markBase + len(x.texts) - 1))
	})
}

// expand puts back in s the values already taken out of it (a URL in
// quotes).
func (x *extraction) expand(s string) string {
	var b strings.Builder
	for _, r := range s {
		if k, ok := x.index(r); ok {
			b.WriteString(x.texts[k])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// index is the value a rune marks, if it is a mark.
func (x *extraction) index(r rune) (int, bool) {
	k := int(r) - markBase
	return k, k >= 0 && k < len(x.texts)
}
