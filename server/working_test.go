package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// A thread's working memory follows its events (substrate RFC §6, §15A.7;
// issue 28, finding 8): planning on the user's request, executing while
// tools run, blocked on an error or a failed call, waiting on the
// questions put to the user until they answer, done with the outcome;
// next actions and open questions as events name them; last_updated at
// the latest event. Each batch revises it once through the write path,
// however many events the batch brings.
func TestWorkingMemoryFollowsTheThread(t *testing.T) {
	t.Parallel()
	e := setupFull(t)
	thread := func() store.Thread {
		t.Helper()
		res := e.do("GET", "/v1/threads/setup", acmeKey, nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		var th store.Thread
		res.decode(t, &th)
		require.NotNil(t, th.WorkingID)
		return th
	}
	working := func() (memory.Record, memory.WorkingPayload) {
		t.Helper()
		res := e.do("GET", "/v1/records/"+thread().WorkingID.String(), acmeKey, nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		var rec memory.Record
		res.decode(t, &rec)
		var p memory.WorkingPayload
		require.NoError(t, json.Unmarshal(rec.Payload, &p))
		require.NotNil(t, p.LastUpdated)
		return rec, p
	}
	ev := func(kind, time string, fields map[string]any) map[string]any {
		fields["time"] = time
		return event(kind, "setup", fields)
	}

	e.streamEvents(ev("user_input", "2026-01-28T10:00:00Z", map[string]any{"text": "set up the project",
		"next_actions": []string{"initialise the backend", "choose a frontend"}}))
	rec, p := working()
	require.Equal(t, "planning", p.State)
	require.Equal(t, []string{"initialise the backend", "choose a frontend"}, p.NextActions)
	require.Equal(t, "2026-01-28T10:00:00Z", p.LastUpdated.Format("2006-01-02T15:04:05Z07:00"))
	first := rec.Version

	// Three events, one batch: one revision.
	e.streamEvents(
		ev("tool_call", "2026-01-28T10:01:00Z", map[string]any{"tool": map[string]any{"name": "go", "arguments": []string{"mod", "init"}}}),
		ev("tool_output", "2026-01-28T10:01:05Z", map[string]any{"tool": map[string]any{"name": "go", "result": map[string]any{"exit_code": 0}}}),
		ev("observation", "2026-01-28T10:01:06Z", map[string]any{"text": "the backend is initialised", "next_actions": []string{"choose a frontend"}}),
	)
	rec, p = working()
	require.Equal(t, "executing", p.State)
	require.Equal(t, []string{"choose a frontend"}, p.NextActions)
	require.Equal(t, first+1, rec.Version, "one revision for the batch")
	res := e.do("GET", "/v1/records/"+rec.ID.String()+"/audit", acmeKey, nil)
	var trail api.AuditTrail
	res.decode(t, &trail)
	require.Equal(t, "update", trail.Entries[len(trail.Entries)-1].Action, "through the write path, audited")

	e.streamEvents(ev("error", "2026-01-28T10:02:00Z", map[string]any{"error": map[string]any{"message": "npm: command not found"}}))
	_, p = working()
	require.Equal(t, "blocked", p.State)
	require.Contains(t, p.ContextSummary, "npm: command not found")

	e.streamEvents(ev("tool_output", "2026-01-28T10:03:00Z", map[string]any{"tool": map[string]any{"name": "bash", "result": map[string]any{"exit_code": 127}}}))
	_, p = working()
	require.Equal(t, "blocked", p.State, "a failed call blocks too")

	e.streamEvents(ev("observation", "2026-01-28T10:04:00Z", map[string]any{"text": "asked the user",
		"open_questions": []string{"React or Vue?"}}))
	_, p = working()
	require.Equal(t, "waiting", p.State)
	require.Equal(t, []string{"React or Vue?"}, p.OpenQuestions)

	e.streamEvents(ev("user_input", "2026-01-28T10:05:00Z", map[string]any{"text": "React"}))
	_, p = working()
	require.Equal(t, "planning", p.State)
	require.Empty(t, p.OpenQuestions, "the user's answer closes the questions")

	e.streamEvents(ev("outcome", "2026-01-28T10:06:00Z", map[string]any{"outcome": map[string]any{"status": "success", "summary": "set up"}}))
	th := thread()
	require.Equal(t, "closed", th.Status)
	rec, p = working()
	require.Equal(t, "done", p.State)
	require.Equal(t, memory.Deleted, rec.Status, "discarded once the task concludes (§6)")
	require.Equal(t, "2026-01-28T10:06:00Z", p.LastUpdated.Format("2006-01-02T15:04:05Z07:00"))
}
