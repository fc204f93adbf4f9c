package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// ErrTrailingData is a document holding something other than JSON whitespace
// after its value.
var ErrTrailingData = errors.New("unexpected data after the JSON value")

// Decode decodes exactly one JSON value from doc into v: anything after the
// value but JSON whitespace (RFC 8259 §2) is [ErrTrailingData], an empty
// document is io.EOF, and a struct refuses fields it does not know. Every
// parser of a client's JSON goes through it — request bodies, events, the
// lines of an event stream — so all of them accept the same documents.
//
// A value decoded into a bare *any keeps its numbers as [json.Number], so
// that integers and bounds compare exactly when it is validated; typed
// targets decode numbers as encoding/json does. Errors are encoding/json's
// own (*json.SyntaxError, *json.UnmarshalTypeError, ...), unwrapped, for the
// caller to turn into a precise problem.
func Decode(doc []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	if _, ok := v.(*any); ok {
		dec.UseNumber()
	}
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if len(bytes.TrimLeft(doc[dec.InputOffset():], " \t\r\n")) > 0 {
		return ErrTrailingData
	}
	return nil
}

// CheckText reports every string and object key of doc, a JSON document,
// whose text PostgreSQL's text and jsonb cannot store: one holding the NUL
// character U+0000, or an unpaired UTF-16 surrogate escape such as
// "\ud800", which is not Unicode text (RFC 7493 §2.1; encoding/json would
// quietly decode it as U+FFFD, but a raw payload keeps it). It returns nil,
// or a [*ValidationError] with one violation per value, at its pointer, or
// per key, at its object's pointer: the key itself cannot be shown. A
// document that is not one JSON value is left to its decoder to refuse.
//
// Both can only be written as \u escapes — a raw NUL byte is not JSON and
// a raw surrogate is not UTF-8 — so a document with no such escape costs one
// scan; only one with an escape is walked, token by token, to find where.
func CheckText(doc []byte) error {
	if !suspectEscape(doc) {
		return nil
	}
	var (
		stack []textFrame
		vs    []Violation
	)
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil // malformed: the decoder says why
		}
		switch tok := tok.(type) {
		case json.Delim:
			if tok == '{' || tok == '[' {
				stack = append(stack, textFrame{object: tok == '{', wantKey: tok == '{'})
				continue
			}
			stack = stack[:len(stack)-1]
		case string:
			raw := doc[start:dec.InputOffset()]
			what := badEscape(raw[bytes.IndexByte(raw, '"'):])
			if n := len(stack); n > 0 && stack[n-1].wantKey {
				if what != "" {
					vs = append(vs, Violation{Pointer: textPointer(stack[:n-1]), Message: "has a key holding " + what})
				}
				stack[n-1].key, stack[n-1].wantKey = tok, false
				continue
			}
			if what != "" {
				vs = append(vs, Violation{Pointer: textPointer(stack), Message: "must not hold " + what})
			}
		}
		// A value ended: the document's, or its container's next member.
		if len(stack) == 0 {
			break
		}
		if top := &stack[len(stack)-1]; top.object {
			top.wantKey = true
		} else {
			top.index++
		}
	}
	if len(vs) == 0 {
		return nil
	}
	return newValidationError(vs)
}

// textFrame is a container [CheckText] is in, and where in it.
type textFrame struct {
	object  bool
	key     string // the member being read, in an object
	index   int    // the element being read, in an array
	wantKey bool
}

// textPointer is the JSON pointer of the value the innermost frame is at.
func textPointer(stack []textFrame) string {
	var b strings.Builder
	for _, f := range stack {
		b.WriteByte('/')
		if f.object {
			b.WriteString(EscapePointer(f.key))
		} else {
			b.WriteString(strconv.Itoa(f.index))
		}
	}
	return b.String()
}

// suspectEscape reports whether doc holds a \u escape of NUL or of a
// surrogate. An escaped backslash before a "u" is a false alarm, which only
// costs a walk.
func suspectEscape(doc []byte) bool {
	for {
		i := bytes.Index(doc, []byte(`\u`))
		if i < 0 || len(doc) < i+6 {
			return false
		}
		hex := doc[i+2 : i+6]
		if string(hex) == "0000" || (hex[0]|0x20) == 'd' && strings.IndexByte("89abcdefABCDEF", hex[1]) >= 0 {
			return true
		}
		doc = doc[i+2:]
	}
}

// badEscape names what an encoded JSON string (from its opening quote)
// holds that cannot be stored, or returns "".
func badEscape(s []byte) string {
	for i := 1; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		i++
		if i+4 >= len(s) || s[i] != 'u' {
			continue
		}
		r := hex4(s[i+1:])
		i += 4
		switch {
		case r == 0:
			return "the NUL character (U+0000)"
		case r >= 0xD800 && r < 0xDC00:
			if i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
				if lo := hex4(s[i+3:]); lo >= 0xDC00 && lo < 0xE000 {
					i += 6
					continue
				}
			}
			return unpaired
		case r >= 0xDC00 && r < 0xE000:
			return unpaired
		}
	}
	return ""
}

const unpaired = "an unpaired UTF-16 surrogate escape (\\uD800–\\uDFFF), which is not Unicode text"

// hex4 reads the four hex digits of a \u escape the decoder accepted.
func hex4(s []byte) rune {
	n, err := strconv.ParseUint(string(s[:4]), 16, 16)
	if err != nil {
		return -1
	}
	return rune(n)
}

// EscapePointer escapes a key for a JSON pointer (RFC 6901 §3).
func EscapePointer(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}
