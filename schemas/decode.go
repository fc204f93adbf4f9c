package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
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

// EscapePointer escapes a key for a JSON pointer (RFC 6901 §3).
func EscapePointer(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// Malformed says, in words rather than the decoder's, why doc is not the
// one JSON value [Decode] wants: which character is unexpected, at which
// byte (from 1), and where it stands; a truncated document; a second
// value. It quotes one character of doc at most, so that it echoes
// nothing a document holds.
func Malformed(doc []byte, err error) string {
	var syntax *json.SyntaxError
	switch {
	case errors.Is(err, ErrTrailingData):
		return "more than one JSON value: an event is one JSON object (one a line in a stream)"
	case errors.Is(err, io.EOF):
		return "no JSON value"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON ends in the middle of a value"
	case errors.As(err, &syntax) && syntax.Offset >= 1 && int(syntax.Offset) <= len(doc):
		r, _ := utf8.DecodeRune(doc[syntax.Offset-1:])
		msg := fmt.Sprintf("not JSON: unexpected %s at byte %d", quoteRune(r), syntax.Offset)
		for _, p := range syntaxPlaces {
			if strings.Contains(syntax.Error(), p.phrase) {
				msg += ", " + p.where
				break
			}
		}
		if syntax.Offset == 1 {
			msg += " (an event is a JSON object: {\"kind\": …})"
		}
		return msg
	}
	return "not JSON: " + err.Error()
}

// syntaxPlaces puts encoding/json's syntax error contexts in words, the
// longer of two that overlap first.
var syntaxPlaces = []struct{ phrase, where string }{
	{"looking for beginning of object key string", "where a quoted key should start"},
	{"looking for beginning of value", "where a value should start"},
	{"after object key:value pair", "after a value, where ',' or '}' should be"},
	{"after object key", "after a key, where ':' should be"},
	{"after array element", "after an element, where ',' or ']' should be"},
	{"in string literal", "inside a string, where control characters must be escaped"},
	{"in string escape code", "in a string's escape sequence"},
	{"after decimal point in numeric literal", "in a number, after its decimal point"},
	{"in exponent of numeric literal", "in a number's exponent"},
	{"in numeric literal", "in a number"},
	{" in literal ", "in a literal (true, false or null)"},
}

// quoteRune quotes a character for a message: printable as itself,
// otherwise by its code point.
func quoteRune(r rune) string {
	if r == utf8.RuneError || !unicode.IsPrint(r) {
		return fmt.Sprintf("U+%04X", r)
	}
	return strconv.QuoteRune(r)
}
