package ingest_test

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/schemas"
)

// prepareSeeds are the fuzz tests' hand-written events: valid ones of
// several kinds, and what a client gets wrong.
var prepareSeeds = []string{
	`{"kind": "user_input", "agent_id": "a", "thread_id": "t", "text": "the build is broken"}`,
	`{"kind": "tool_call", "agent_id": "a", "thread_id": "t", "tool": {"name": "make", "arguments": ["build"]}, "tags": ["ci"]}`,
	`{"kind": "fact", "agent_id": "a", "thread_id": "t", "fact": {"subject": "repo", "predicate": "build_tool", "object": "make", "conditions": {"os": "linux"}}}`,
	`{"kind": "outcome", "agent_id": "a", "thread_id": "t", "outcome": {"status": "success"}, "time": "2026-01-01T00:00:00Z"}`,
	`{"kind": "observation", "agent_id": "a", "thread_id": "t", "text": "key sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 mail a@b.co"}`,
	`{"kind": "observation", "agent_id": "a", "thread_id": "t", "text": "x\u0000"}`,
	`{"kind": "observation", "agent_id": "a", "thread_id": "t", "text": "\ud800"}`,
	`{"kind": "observation", "agent_id": "a", "thread_id": "t", "environment": {"n": 1e-16384}}`,
	`{"kind": "observation", "agent_id": "a", "thread_id": "t", "text": "x"} xyz {"oops"`,
	`{"kind": "observation", "agent_id": "a", "thread_id": "t", "text": "x", "time": "2999-01-01T00:00:00Z"}`,
	"{\"kind\": \"observation\", \"text\": \"\xff\"}",
	`[1, 2]`, `null`, ``, `{`,
}

// FuzzPrepare feeds the event decoder anything a client could send. An
// event is either refused with an [*ingest.EventError] naming its index, or
// accepted as a candidate that is strict JSON, storable, valid against the
// Event schema and redacted to a fixed point; the same input always meets
// the same fate.
func FuzzPrepare(f *testing.F) {
	for _, seed := range prepareSeeds {
		f.Add([]byte(seed))
	}
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	in := ingest.New(ingest.Config{Now: func() time.Time { return now }})
	kinds := []string{"invalid-event", "invalid-utf8", "too-large", "future-time", "secret-leakage"}

	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := in.Prepare(7, raw)
		again, err2 := in.Prepare(7, raw)
		if err != nil {
			var ee *ingest.EventError
			require.True(t, errors.As(err, &ee), "%T: %v", err, err)
			require.Equal(t, 7, ee.Index)
			require.Contains(t, kinds, ee.Kind)
			for _, v := range ee.Violations {
				require.True(t, v.Pointer == "" || strings.HasPrefix(v.Pointer, "/"), v.Pointer)
			}
			require.Error(t, err2)
			require.Equal(t, err.Error(), err2.Error(), "the same input, the same refusal")
			return
		}
		require.NoError(t, err2, "the same input, accepted again")

		// Only strict, storable JSON is accepted.
		var v any
		require.True(t, utf8.Valid(raw))
		require.NoError(t, schemas.Decode(raw, &v))
		require.NoError(t, schemas.CheckStorable(raw))

		// What would be staged is a valid, storable event.
		require.True(t, utf8.Valid(c.Event))
		require.NoError(t, schemas.CheckStorable(c.Event))
		require.NoError(t, schemas.Validate("Event", c.Event))
		require.NotEmpty(t, c.AgentID)
		require.NotEmpty(t, c.ThreadID)
		require.True(t, c.Sensitivity.Valid())
		require.False(t, c.Time.After(now.Add(ingest.DefaultMaxSkew)))
		require.Equal(t, c.Event, again.Event)
		require.Equal(t, c.DedupKey, again.DedupKey)
		require.Equal(t, c.Redactions, again.Redactions)
		require.NotEqual(t, c.ID, again.ID)

		// Redaction is a fixed point: the staged event, sent again, is
		// accepted as it is and redacts nothing.
		if len(c.Event) <= ingest.DefaultMaxEventBytes {
			re, err := in.Prepare(0, c.Event)
			require.NoError(t, err)
			require.JSONEq(t, string(c.Event), string(re.Event))
			require.Empty(t, re.Redactions)
			require.Equal(t, c.DedupKey, re.DedupKey, "a retry of the staged event is absorbed")
		}
	})
}
