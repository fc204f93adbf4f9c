package schemas_test

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/schemas"
)

func TestDecodeTakesExactlyOneValue(t *testing.T) {
	t.Parallel()
	for doc, want := range map[string]error{
		` {"a": 1} ` + "\t\r\n": nil,
		`[1, 2]`:                nil,
		`"x"`:                   nil,
		``:                      io.EOF,
		" \n ":                  io.EOF,
		`{} {}`:                 schemas.ErrTrailingData,
		`{} xyz {"oops"`:        schemas.ErrTrailingData,
		`{}}`:                   schemas.ErrTrailingData,
		"{}\u00a0":              schemas.ErrTrailingData,
		"{}\v":                  schemas.ErrTrailingData,
		`1 2`:                   schemas.ErrTrailingData,
	} {
		var v any
		require.ErrorIs(t, schemas.Decode([]byte(doc), &v), want, "%q", doc)
	}
	var v any
	require.NoError(t, schemas.Decode([]byte(`{"n": 12345678901234567890}`), &v))
	require.Equal(t, json.Number("12345678901234567890"), v.(map[string]any)["n"], "an any keeps exact numbers")

	var s struct{ A int }
	require.ErrorContains(t, schemas.Decode([]byte(`{"A": 1, "b": 2}`), &s), "unknown field")
	var syntax *json.SyntaxError
	require.ErrorAs(t, schemas.Decode([]byte(`{"A": }`), &s), &syntax)
}

func TestCheckStorableFindsWhatCannotBeStored(t *testing.T) {
	t.Parallel()
	violations := func(doc string) []schemas.Violation {
		err := schemas.CheckStorable([]byte(doc))
		if err == nil {
			return nil
		}
		var ve *schemas.ValidationError
		require.ErrorAs(t, err, &ve, doc)
		return ve.Violations
	}
	pointers := func(doc string) []string {
		var out []string
		for _, v := range violations(doc) {
			out = append(out, v.Pointer)
		}
		return out
	}
	for doc, want := range map[string][]string{
		`{"a": "x\u0000"}`:                     {"/a"},
		`"\u0000"`:                             {""},
		`[1, "ok", {"b": ["", "\u0000"]}]`:     {"/2/b/1"},
		`{"a/b": {"c~d": "\u0000"}}`:           {"/a~1b/c~0d"},
		`{"k\u0000": 1, "ok": "\ud800"}`:       {"", "/ok"},
		`{"a": {"\udc00": {"x": "\u0000"}}}`:   {"/a", "/a/\ufffd/x"},
		`{"a": "\ud83d\ude00", "b": "\uD83D"}`: {"/b"},
		`{"a": "\ude00\ud83d"}`:                {"/a"},
		`{"a": "\ud83d\u0041"}`:                {"/a"},
		`{"a": "\\u0000 \\ud800"}`:             nil,
		`{"a": "\u00e9\u0001"}`:                nil,
		`{"a": "\u0000"} {"b": 1}`:             nil, // not one value: the decoder's to refuse
		`{"a": "\u0000"`:                       nil,
	} {
		require.Equal(t, want, pointers(doc), doc)
	}
	require.Contains(t, violations(`{"a": "\u0000"}`)[0].Message, "U+0000")
	require.Contains(t, violations(`{"\u0000": 1}`)[0].Message, "key")

	// Numbers: PostgreSQL 15's numeric input refuses the scales and
	// exponents; a double cannot hold the magnitudes.
	for lit, fits := range map[string]bool{
		"1.5e-16383": false, "1.0e-16383": false, "0e-16384": false, "0.0e-16383": false, "1e-16384": false,
		"1e-16383": true, "0e999999": true, "1e308": true, "-1.7976931348623157e308": true, "1e309": false,
		"1e700": false, "-1e131072": false, "1E+300": true, "0.1e309": true, "4.9e-324": true, "1e-400": true,
		"1e-99999999999999999999": false, "0e-99999999999999999999": false, "1e99999999999999999999": false,
		"0e1073741822": true, "0e1073741823": false, "12.5": true, "-0": true, "0.000001e-3": true,
		"1" + strings.Repeat("0", 308): true, "1" + strings.Repeat("0", 309): false,
		"0." + strings.Repeat("0", 16382) + "1": true, "0." + strings.Repeat("0", 16383) + "1": false,
	} {
		doc := `{"n": [` + lit + `]}`
		if fits {
			require.Nil(t, violations(doc), lit)
		} else {
			require.Equal(t, []string{"/n/0"}, pointers(doc), lit)
		}
	}
}

// Violations point into the document with plain JSON pointers, not the
// percent-encoded URI fragment form the validator keeps (FuzzValidate found
// /conditions/%20os).
func TestViolationPointersArePlainJSONPointers(t *testing.T) {
	t.Parallel()
	err := schemas.ValidatePayload("semantic", []byte(`{"kind": "semantic", "subject": "u", "predicate": "p", "object": 0,
		"validity": {"mode": "conditional", "conditions": {" os": null, "a/b%": null}}}`))
	var ve *schemas.ValidationError
	require.ErrorAs(t, err, &ve)
	var pointers []string
	for _, v := range ve.Violations {
		pointers = append(pointers, v.Pointer)
	}
	require.Equal(t, []string{"/validity/conditions/ os", "/validity/conditions/a~1b%"}, pointers)
}
