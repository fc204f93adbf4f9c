package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
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

// EscapePointer escapes a key for a JSON pointer (RFC 6901 §3).
func EscapePointer(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}
