package schemas_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/schemas"
)

// validEvents holds a valid event of each kind, every optional field set
// somewhere, for the equivalence tests to mutate.
var validEvents = []string{
	`{"kind": "user_input", "agent_id": "a", "thread_id": "t", "text": "the build is broken", "time": "2026-01-01T00:00:00Z",
	  "environment": {"os": "linux", "cores": 2, "ci": true}, "tags": ["ci", "build"], "scope": "repo:engram", "idempotency_key": "k1"}`,
	`{"kind": "observation", "agent_id": "a", "thread_id": "t", "text": "disk full", "next_actions": ["clean /tmp"], "open_questions": ["which disk?"]}`,
	`{"kind": "tool_call", "agent_id": "a", "thread_id": "t", "tool": {"name": "make", "call_id": "c1", "arguments": ["build", {"j": 2}], "result": null}}`,
	`{"kind": "tool_output", "agent_id": "a", "thread_id": "t", "tool": {"name": "make", "result": {"exit": 2, "out": "ok"}}}`,
	`{"kind": "error", "agent_id": "a", "thread_id": "t", "error": {"message": "exit 2", "code": "E2", "tool": "make"}}`,
	`{"kind": "outcome", "agent_id": "a", "thread_id": "t", "outcome": {"status": "partial", "summary": "half built"}, "time": "2026-01-01T10:20:30.123+02:00"}`,
	`{"kind": "fact", "agent_id": "a", "thread_id": "t", "fact": {"subject": "repo", "predicate": "build_tool", "object": "make",
	  "conditions": {"os": "linux", "arch": ["amd64"], "n": 1, "deep": {"k": null}}, "valid_from": "2026-01-01T00:00:00Z", "valid_to": "2026-02-01T00:00:00Z",
	  "confidence": 0.75, "evidence": [{"kind": "tool_call", "ref": "evt://1", "hash": "sha256:00", "timestamp": "2026-01-01T00:00:00Z", "extra": 1}, {"kind": "human", "ref": "r"}]}}`,
	`{"kind": "fact", "agent_id": "a", "thread_id": "t", "fact": {"subject": "s", "predicate": "p", "object": {"nested": [1, 2]}, "confidence": 1}}`,
}

// replacements are the values a mutation puts in place of a field: every
// JSON type, the bounds of every constraint in the Event schema, and
// either side of them.
var replacements = []any{
	nil, true, false,
	json.Number("0"), json.Number("-0.0"), json.Number("1"), json.Number("1.0"), json.Number("0.5"), json.Number("-1"),
	json.Number("1.0000000000000000000001"), json.Number("0.99999999999999999999"), json.Number("-1e-400"), json.Number("1e-400"),
	json.Number("1e400"), json.Number("-1e400"), json.Number("7"), json.Number("-0"), json.Number("1e0"), json.Number("10E-1"),
	json.Number("000000000000001"), json.Number("100000000000000000"), json.Number("0.000000000000000000000000001"),
	0.5, 2.0, -0.25,
	"", "x", "0", strings.Repeat("é", 200), strings.Repeat("é", 201), strings.Repeat("a", 1000), strings.Repeat("🙂", 1001),
	"2026-01-01T00:00:00Z", "2026-01-01t23:59:60.5+01:00", "2026-02-30T00:00:00Z", "2026-01-01T00:00:00", "2026-01-01 00:00:00Z", "yesterday",
	"user_input", "tool_call", "tool_output", "observation", "error", "outcome", "fact", "success", "failure", "partial",
	"event", "artifact", "human", "reasoning", "record", "USER_INPUT",
	map[string]any{}, map[string]any{"name": "n"}, map[string]any{"message": "m", "status": "success"},
	map[string]any{"subject": "s", "predicate": "p", "object": nil}, map[string]any{"kind": "event", "ref": "r"},
	map[string]any{"kind": 1, "x/y": nil, "a~b": []any{}},
	[]any{}, []any{"a"}, []any{"", 1, nil, "ok", map[string]any{}}, []any{map[string]any{"kind": "nope"}, "x"},
}

// oddKeys are extra property names: the ones a JSON pointer or the
// generic validator's messages must escape.
var oddKeys = []string{"extra", "a/b", "~0", "it's", `say "hi"`, `back\slash`, "", " os", "ünï", "%zz", "%41", "tab\there", "nul\x00", "😀"}

// decodeEvent decodes a fresh copy of an event the way ingestion does.
func decodeEvent(t testing.TB, doc string) any {
	t.Helper()
	var v any
	require.NoError(t, schemas.Decode([]byte(doc), &v))
	return v
}

// path is a field's place in a document: keys and indexes.
type path []any

// paths lists every value's path in v, root first.
func paths(v any, at path) []path {
	out := []path{at}
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			out = append(out, paths(e, append(at[:len(at):len(at)], k))...)
		}
	case []any:
		for i, e := range t {
			out = append(out, paths(e, append(at[:len(at):len(at)], i))...)
		}
	}
	return out
}

// at returns the value at p in v, and its parent.
func at(v any, p path) (parent, value any) {
	for _, s := range p {
		parent = v
		switch s := s.(type) {
		case string:
			v = v.(map[string]any)[s]
		case int:
			v = v.([]any)[s]
		}
	}
	return parent, v
}

// set replaces the value at p (not the root) with x, or deletes it when
// del is set and its parent is an object.
func set(v any, p path, x any, del bool) {
	parent, _ := at(v, p)
	switch s := p[len(p)-1].(type) {
	case string:
		if del {
			delete(parent.(map[string]any), s)
		} else {
			parent.(map[string]any)[s] = x
		}
	case int:
		parent.([]any)[s] = x
	}
}

// mutate applies a random mutation to v, returning the new root.
func mutate(r *rand.Rand, v any) any {
	ps := paths(v, nil)
	p := ps[r.IntN(len(ps))]
	_, x := at(v, p)
	switch n := r.IntN(10); {
	case n < 5 && len(p) > 0:
		set(v, p, clone(replacements[r.IntN(len(replacements))]), false)
	case n < 7 && len(p) > 0:
		set(v, p, nil, true)
	case n < 9:
		switch t := x.(type) {
		case map[string]any:
			t[oddKeys[r.IntN(len(oddKeys))]] = clone(replacements[r.IntN(len(replacements))])
		case []any:
			grown := append(t, clone(replacements[r.IntN(len(replacements))]))
			if len(p) == 0 {
				return grown
			}
			set(v, p, grown, false)
		}
	default:
		if len(p) == 0 {
			return clone(replacements[r.IntN(len(replacements))])
		}
		// Lengthen an array past its maxItems.
		if a, ok := x.([]any); ok && len(a) > 0 {
			for len(a) < 65+r.IntN(3) {
				a = append(a, a[r.IntN(len(a))])
			}
			set(v, p, a, false)
		}
	}
	return v
}

// clone deep-copies a decoded JSON value, so that no two places of a
// document share a map or slice.
func clone(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = clone(e)
		}
		return m
	case []any:
		a := make([]any, len(t))
		for i, e := range t {
			a[i] = clone(e)
		}
		return a
	}
	return v
}

// requireSameVerdict asserts that the specialised validator answers v
// exactly as the generic one does, and returns the violations.
func requireSameVerdict(t testing.TB, v any) []schemas.Violation {
	t.Helper()
	want := schemas.ValidateValue("Event", v)
	got := schemas.ValidateEvent(v)
	doc, _ := json.Marshal(v)
	if want == nil {
		require.NoError(t, got, "%s", doc)
		return nil
	}
	require.Error(t, got, "%s: the generic validator says %v", doc, want)
	var wv, gv *schemas.ValidationError
	if !errors.As(want, &wv) {
		require.EqualError(t, got, want.Error(), "%s", doc)
		return nil
	}
	require.ErrorAs(t, got, &gv, "%s", doc)
	require.Equal(t, wv.Violations, gv.Violations, "%s", doc)
	return gv.Violations
}

func TestValidateEventValid(t *testing.T) {
	t.Parallel()
	for _, doc := range validEvents {
		require.NoError(t, schemas.ValidateEvent(decodeEvent(t, doc)), doc)
		requireSameVerdict(t, decodeEvent(t, doc))
	}
}

// TestValidateEventEveryMutation changes each field of each valid event in
// every way the replacements allow, one at a time, and adds every odd key
// to every object: the specialised validator must agree with the generic
// one on each.
func TestValidateEventEveryMutation(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	note := func(vs []schemas.Violation) {
		for _, v := range vs {
			seen[v.Message] = true
		}
	}
	cases := 0
	for _, doc := range validEvents {
		for _, p := range paths(decodeEvent(t, doc), nil) {
			if len(p) > 0 {
				v := decodeEvent(t, doc)
				set(v, p, nil, true)
				note(requireSameVerdict(t, v))
				cases++
			}
			for _, x := range replacements {
				if len(p) == 0 {
					note(requireSameVerdict(t, clone(x)))
					cases++
					continue
				}
				v := decodeEvent(t, doc)
				set(v, p, clone(x), false)
				note(requireSameVerdict(t, v))
				cases++
			}
			if _, x := at(decodeEvent(t, doc), p); x != nil {
				if _, ok := x.(map[string]any); ok {
					for _, k := range oddKeys {
						v := decodeEvent(t, doc)
						_, m := at(v, p)
						m.(map[string]any)[k] = "x"
						note(requireSameVerdict(t, v))
						cases++
					}
				}
			}
		}
	}
	t.Logf("%d mutations, %d distinct messages", cases, len(seen))
	// The mutations reach every kind of violation the schema can give.
	for _, msg := range []string{
		"is required", "is not a known property", "is not a valid date-time", "must be >= 0", "must be <= 1",
		"length must be >= 1, but got 0", "length must be <= 200, but got 201", "length must be <= 1000, but got 1001",
		"expected object, but got string", "expected array, but got null", "expected string, but got number",
		"expected number, but got boolean", "expected string or number or boolean, but got array",
		"expected string or number or boolean or object or array, but got null",
		`value must be one of "user_input", "tool_call", "tool_output", "observation", "error", "outcome", "fact"`,
		`value must be one of "success", "failure", "partial"`,
		`value must be one of "event", "artifact", "tool_call", "observation", "outcome", "human", "reasoning", "record"`,
	} {
		require.True(t, seen[msg], "no mutation gave %q", msg)
	}
}

// TestValidateEventRandomMutations piles several random mutations onto
// each valid event: many violations at once, nested in one another.
func TestValidateEventRandomMutations(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(29, 15))
	maxItems := false
	for range 4000 {
		v := decodeEvent(t, validEvents[r.IntN(len(validEvents))])
		for range 1 + r.IntN(6) {
			v = mutate(r, v)
		}
		for _, viol := range requireSameVerdict(t, v) {
			maxItems = maxItems || strings.HasPrefix(viol.Message, "maximum ")
		}
	}
	require.True(t, maxItems, "some mutation lengthened an array past its maxItems")
}

// TestValidateEventForeignValues: a value no JSON decoder makes is left to
// the generic validator, which refuses it as it always has.
func TestValidateEventForeignValues(t *testing.T) {
	t.Parallel()
	for _, x := range []any{[]string{"a"}, int16(3), map[string]string{"a": "b"}, struct{}{}} {
		for _, field := range []string{"tags", "agent_id", "environment", "text"} {
			v := decodeEvent(t, validEvents[0]).(map[string]any)
			v[field] = x
			requireSameVerdict(t, v)
		}
		requireSameVerdict(t, x)
	}
	// Go numbers the generic validator reads as numbers.
	for _, x := range []any{int(0), int64(2), uint8(1), float32(0.5), float64(-1)} {
		v := decodeEvent(t, validEvents[6])
		v.(map[string]any)["fact"].(map[string]any)["confidence"] = x
		requireSameVerdict(t, v)
	}
}

// TestValidateEventSchemasUnchanged pins the schema files ValidateEvent is
// written from: a change to either must be carried into event.go (and the
// equivalence tests above extended to it) before this digest is updated.
func TestValidateEventSchemasUnchanged(t *testing.T) {
	t.Parallel()
	for name, digest := range map[string]string{
		"Event":      "50729e6bec6a5d04aa8517d10fe271b73e4dca5ca466d033beaeb1d6b37eaaa2",
		"Provenance": "7a42f50a490d4683bb28f68b12709de27c0c66a12a816da699e597e3b170ffd2",
	} {
		b, ok := schemas.Raw(name)
		require.True(t, ok)
		sum := sha256.Sum256(b)
		require.Equal(t, digest, hex.EncodeToString(sum[:]),
			fmt.Sprintf("the %s schema changed: make ValidateEvent (schemas/event.go) follow it, then update this digest", name))
	}
}

func BenchmarkValidateEvent(b *testing.B) {
	docs := make([]any, len(validEvents))
	for i, doc := range validEvents {
		docs[i] = decodeEvent(b, doc)
	}
	for _, bc := range []struct {
		name     string
		validate func(any) error
	}{
		{"generic", func(v any) error { return schemas.ValidateValue("Event", v) }},
		{"specialised", schemas.ValidateEvent},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				if err := bc.validate(docs[i%len(docs)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
