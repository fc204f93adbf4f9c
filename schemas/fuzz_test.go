package schemas_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/schemas"
)

// FuzzDecode checks the strict decoder every client-facing parser uses and
// the storability check beside it. Decode accepts exactly what
// encoding/json calls one valid JSON value; what it accepts re-encodes and
// re-decodes to the same value; every NUL CheckStorable must see, it
// reports, at a pointer that resolves in the document.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"a": [1, 2.5e3, "x", true, null, {"b/c~": "\u00e9"}]}`, ` "x" `, `12345678901234567890`,
		`{} xyz {"oops"`, `{}}`, "{}\u00a0", ``, `{"a": "\u0000", "\u0000": 1}`,
		`["\ud800", "\ud83d\ude00", "\\ud800"]`, `[1e131072, 0e-16384, 1e-16383]`, `{"a":`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		var v any
		err := schemas.Decode(doc, &v)
		require.Equal(t, json.Valid(doc), err == nil, "%v", err)
		storable := schemas.CheckStorable(doc)
		if err != nil {
			require.NoError(t, storable, "a document that is not JSON is left to its decoder")
			return
		}

		out, err := json.Marshal(v)
		require.NoError(t, err)
		var back any
		require.NoError(t, schemas.Decode(out, &back), "%s", out)
		require.Equal(t, v, back)

		var vs []schemas.Violation
		if storable != nil {
			var ve *schemas.ValidationError
			require.True(t, errors.As(storable, &ve))
			require.NotEmpty(t, ve.Violations)
			vs = ve.Violations
		}
		for _, viol := range vs {
			require.True(t, resolves(v, viol.Pointer), "%q does not resolve in %s", viol.Pointer, doc)
		}
		walkStrings(v, "", func(pointer string, s string, key bool) {
			if !strings.ContainsRune(s, 0) {
				return
			}
			reported := false
			for _, viol := range vs {
				reported = reported || viol.Pointer == pointer
			}
			require.True(t, reported, "NUL at %q (key: %v) not reported", pointer, key)
		})
	})
}

// FuzzValidate feeds every schema anything: each memory type's payload, the
// whole record, the event. Each answers nil or a [*schemas.ValidationError]
// with violations at pointers into the document (a missing member's, at
// where it belongs in an object the document has), and answers the same
// way twice.
func FuzzValidate(f *testing.F) {
	for _, seed := range []string{
		rfcSemanticExample, rfcCompetenceExample,
		`{"kind": "semantic", "subject": "u", "predicate": "p", "object": 1, "validity": {"mode": "global"}}`,
		`{"kind": "episodic", "timeline": [{"t": "2026-01-01T00:00:00Z", "event_kind": "error", "ref": "evt://1"}]}`,
		`{"kind": "working", "thread_id": "t", "state": "s", "next_actions": ["a"]}`,
		`{"kind": "plan_graph", "nodes": [], "edges": []}`,
		`{"kind": "observation", "agent_id": "a", "thread_id": "t", "text": "x", "time": "2026-01-01T00:00:00Z"}`,
		`{"kind": "semantic", "a/b": {"~": 1}}`, `{"type": "dream"}`, `[]`, `{`, ``,
	} {
		f.Add([]byte(seed))
	}
	types := []string{"episodic", "working", "semantic", "competence", "plan_graph", "dream"}
	f.Fuzz(func(t *testing.T, doc []byte) {
		var v any
		decoded := schemas.Decode(doc, &v) == nil
		check := func(what string, validate func() error) {
			err := validate()
			require.Equal(t, err, validate(), "%s answers the same twice", what)
			if err == nil {
				require.True(t, decoded, "%s accepted what is not JSON", what)
				return
			}
			var ve *schemas.ValidationError
			require.True(t, errors.As(err, &ve), "%s: %v", what, err)
			require.NotEmpty(t, ve.Violations)
			for _, viol := range ve.Violations {
				require.NotEmpty(t, viol.Message)
				if decoded {
					at := viol.Pointer
					if viol.Message == "is required" {
						at = at[:max(strings.LastIndexByte(at, '/'), 0)]
					}
					require.True(t, resolves(v, at), "%s: %q does not resolve", what, viol.Pointer)
				}
			}
		}
		for _, typ := range types {
			check(typ, func() error { return schemas.ValidatePayload(typ, doc) })
		}
		check("record", func() error { return schemas.ValidateRecord(doc) })
		check("event", func() error { return schemas.Validate("Event", doc) })
	})
}

// resolves reports whether the JSON pointer p (RFC 6901) names a value in v.
func resolves(v any, p string) bool {
	if p == "" {
		return true
	}
	if !strings.HasPrefix(p, "/") {
		return false
	}
	for _, tok := range strings.Split(p[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return false
			}
			v = c[i]
		default:
			return false
		}
	}
	return true
}

// walkStrings calls fn for every string and key in v, with the pointer of
// the value (for a key, of its object).
func walkStrings(v any, pointer string, fn func(pointer, s string, key bool)) {
	switch c := v.(type) {
	case string:
		fn(pointer, c, false)
	case map[string]any:
		for k, e := range c {
			fn(pointer, k, true)
			walkStrings(e, pointer+"/"+schemas.EscapePointer(k), fn)
		}
	case []any:
		for i, e := range c {
			walkStrings(e, pointer+"/"+strconv.Itoa(i), fn)
		}
	}
}
