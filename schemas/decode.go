package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"
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

// nulEscape is how U+0000 appears in JSON text: a raw NUL byte is not valid
// JSON anywhere, so a document without this escape holds no NUL.
var nulEscape = []byte(`\u0000`)

// CheckNUL reports every string and object key of doc, a JSON document, that
// holds the NUL character U+0000, which PostgreSQL's text and jsonb cannot
// store: nil, or a [*ValidationError] with one violation per value (at its
// pointer) or key (at its object's pointer, since the key itself cannot be
// shown). A document that is not JSON is left to its decoder to refuse.
func CheckNUL(doc []byte) error {
	if !bytes.Contains(doc, nulEscape) {
		return nil
	}
	var v any
	if err := Decode(doc, &v); err != nil {
		return nil
	}
	return NUL(v)
}

// NUL is [CheckNUL] for a document already decoded into an any (objects as
// map[string]any, arrays as []any).
func NUL(v any) error {
	var vs []Violation
	walkNUL(v, "", &vs)
	if len(vs) == 0 {
		return nil
	}
	return newValidationError(vs)
}

func walkNUL(v any, pointer string, vs *[]Violation) {
	switch v := v.(type) {
	case string:
		if strings.IndexByte(v, 0) >= 0 {
			*vs = append(*vs, Violation{Pointer: pointer, Message: "must not contain the NUL character (U+0000)"})
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if strings.IndexByte(k, 0) >= 0 {
				*vs = append(*vs, Violation{Pointer: pointer, Message: "has a key holding the NUL character (U+0000)"})
				continue
			}
			walkNUL(v[k], pointer+"/"+EscapePointer(k), vs)
		}
	case []any:
		for i, x := range v {
			walkNUL(x, pointer+"/"+strconv.Itoa(i), vs)
		}
	}
}

// EscapePointer escapes a key for a JSON pointer (RFC 6901 §3).
func EscapePointer(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}
