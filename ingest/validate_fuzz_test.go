package ingest_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/policy"
	"github.com/engram-dev/engram/schemas"
)

// FuzzEventValidator holds the Event validator staging uses,
// [schemas.ValidateEvent], to the generic JSON Schema validator's answers:
// the same violations, at the same pointers, with the same messages, for
// any document a client could send — as decoded, and as redacted, which is
// what Prepare validates. It is seeded with FuzzPrepare's events and
// corpus (testdata/fuzz/FuzzPrepare).
func FuzzEventValidator(f *testing.F) {
	for _, seed := range prepareSeeds {
		f.Add([]byte(seed))
	}
	for _, seed := range corpus(f, "FuzzPrepare") {
		f.Add(seed)
	}
	for _, seed := range []string{
		`{"kind": "fact", "agent_id": "", "thread_id": 7, "x/y~": 1, "fact": {"subject": "", "object": null, "confidence": -0.5,
		  "conditions": {"": null, "a/b": []}, "evidence": [{"kind": "nope"}, 3, {"ref": 1, "timestamp": "2026-02-30T00:00:00Z"}]}}`,
		`{"kind": "tool_call", "agent_id": "a", "thread_id": "t", "tool": {"name": "", "extra": 1}, "tags": ["", 2], "time": "2026-01-01t00:00:60Z"}`,
		`{"kind": "error", "agent_id": "a", "thread_id": "t", "error": {"message": ""}, "outcome": {"status": "done", "it's": 1}, "environment": {"os": {}}}`,
		`{"kind": "outcome", "agent_id": "a", "thread_id": "t", "outcome": "success", "next_actions": [""], "open_questions": null, "scope": 5}`,
		`{"kind": "fact", "agent_id": "a", "thread_id": "t", "fact": {"subject": "s", "predicate": "p", "object": 1, "confidence": 1.0000000000000000001}}`,
		`{"kind": "KIND", "agent_id": "a", "thread_id": "t", "idempotency_key": ""}`,
		`{}`, `[]`, `"event"`, `1`,
	} {
		f.Add([]byte(seed))
	}
	redactor := policy.Default().Redactor()

	f.Fuzz(func(t *testing.T, raw []byte) {
		var v any
		if schemas.Decode(raw, &v) != nil {
			return
		}
		requireSameVerdict(t, v)

		// Redaction rewrites values and keys in place.
		var fresh any
		require.NoError(t, schemas.Decode(raw, &fresh))
		redacted, _ := redactor.Value(fresh)
		requireSameVerdict(t, redacted)
	})
}

// requireSameVerdict asserts that [schemas.ValidateEvent] answers v
// exactly as the generic validator does.
func requireSameVerdict(t *testing.T, v any) {
	t.Helper()
	want := schemas.ValidateValue("Event", v)
	got := schemas.ValidateEvent(v)
	doc, _ := json.Marshal(v)
	if want == nil {
		require.NoError(t, got, "%s", doc)
		return
	}
	require.Error(t, got, "%s: the generic validator says %v", doc, want)
	var wv, gv *schemas.ValidationError
	if !errors.As(want, &wv) {
		require.EqualError(t, got, want.Error(), "%s", doc)
		return
	}
	require.ErrorAs(t, got, &gv, "%s", doc)
	require.Equal(t, wv.Violations, gv.Violations, "%s", doc)
}

// corpus reads the inputs of a fuzz test's corpus in testdata, each file
// one []byte value in the "go test fuzz v1" encoding.
func corpus(f *testing.F, name string) [][]byte {
	f.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", name, "*"))
	require.NoError(f, err)
	var out [][]byte
	for _, file := range files {
		b, err := os.ReadFile(file)
		require.NoError(f, err)
		header, value, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
		require.Equal(f, "go test fuzz v1", header, file)
		q, ok := strings.CutPrefix(value, "[]byte(")
		q, ok2 := strings.CutSuffix(q, ")")
		require.True(f, ok && ok2, "%s: not one []byte", file)
		s, err := strconv.Unquote(q)
		require.NoError(f, err, file)
		out = append(out, []byte(s))
	}
	require.NotEmpty(f, out, "no corpus in testdata/fuzz/%s", name)
	return out
}
