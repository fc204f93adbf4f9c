package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/schemas/rfc"
)

// streamThreads streams events to d as NDJSON and waits until the policy
// plane has classified them: each thread has its episode, and a thread
// that ends with an outcome is closed.
func (d *daemon) streamThreads(t *testing.T, events ...map[string]any) {
	t.Helper()
	var b strings.Builder
	closes := map[string]bool{}
	for _, ev := range events {
		j, err := json.Marshal(ev)
		require.NoError(t, err)
		b.Write(j)
		b.WriteByte('\n')
		thread := ev["thread_id"].(string)
		closes[thread] = closes[thread] || ev["kind"] == "outcome"
	}
	req, err := http.NewRequest("POST", "http://"+d.addr+"/v1/events:stream", strings.NewReader(b.String()))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/x-ndjson")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	for thread, closed := range closes {
		require.Eventually(t, func() bool {
			code, body := d.call(t, testKey, "GET", "/v1/threads/"+url.PathEscape(thread), nil)
			var th struct {
				Status string `json:"status"`
			}
			_ = json.Unmarshal(body, &th)
			return code == http.StatusOK && (th.Status == "closed" || !closed)
		}, 30*time.Second, 20*time.Millisecond, "thread %s", thread)
	}
}

// Every record engram writes in a realistic flow on the default
// configuration — events streamed over HTTP, their episodes and working
// memory, a consolidation pass's procedures and facts, facts and a plan
// written by an agent, feedback — validates against the RFC's canonical
// schemas (substrate RFC §15A, transcribed in schemas/rfc) through the
// export, GET /v1/records/{id}?form=rfc (§4; issue 28, finding 6).
func TestEveryRecordPassesTheRFCSchemasThroughTheExport(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a daemon")
	}
	t.Parallel()
	db := pgtest.NewSchema(t)
	d := startDaemonWith(t, buildEngramd(t), "DATABASE_URL="+db.URL, "ENGRAM_LISTEN="+freeAddr(t),
		"ENGRAM_API_KEYS=curator@acme:"+testKey+",*:"+opsKey)

	ev := func(kind, thread string, fields map[string]any) map[string]any {
		m := map[string]any{"kind": kind, "agent_id": "coder", "thread_id": thread}
		for k, v := range fields {
			m[k] = v
		}
		return m
	}
	var events []map[string]any
	for _, pkg := range []string{"lodash", "chalk", "yaml"} {
		th := "fix-" + pkg
		events = append(events,
			ev("user_input", th, map[string]any{"text": "make the tests pass", "environment": map[string]any{"os": "linux"}}),
			ev("tool_call", th, map[string]any{"tool": map[string]any{"name": "bash", "arguments": map[string]any{"command": "npm test"},
				"result": map[string]any{"exit_code": 1, "stderr": "Error: Cannot find module '" + pkg + "'"}}}),
			ev("error", th, map[string]any{"error": map[string]any{"message": "Error: Cannot find module '" + pkg + "'", "tool": "bash"}}),
			ev("tool_call", th, map[string]any{"tool": map[string]any{"name": "bash", "arguments": map[string]any{"command": "npm install " + pkg},
				"result": map[string]any{"exit_code": 0}}}),
			ev("tool_call", th, map[string]any{"tool": map[string]any{"name": "bash", "arguments": map[string]any{"command": "npm test"},
				"result": map[string]any{"exit_code": 0, "stdout": "12 passing"}}}),
			ev("fact", th, map[string]any{"fact": map[string]any{"subject": "project", "predicate": "test_runner", "object": "mocha",
				"conditions": map[string]any{"runtime": map[string]any{"name": "node"}}}}),
			ev("outcome", th, map[string]any{"outcome": map[string]any{"status": "success", "summary": "tests pass"}}),
		)
	}
	events = append(events,
		ev("user_input", "open-task", map[string]any{"text": "set up the staging database"}),
		ev("tool_call", "open-task", map[string]any{"tool": map[string]any{"name": "psql", "arguments": map[string]any{"command": "createdb staging"}}}),
		ev("error", "open-task", map[string]any{"error": map[string]any{"message": "permission denied to create database"}}),
	)
	d.streamThreads(t, events...)
	d.runJobAndWait(t, "consolidate")

	post := func(body map[string]any) memory.Record {
		t.Helper()
		code, out := d.call(t, testKey, "POST", "/v1/records", body)
		require.Contains(t, []int{http.StatusCreated, http.StatusOK}, code, string(out))
		var rec memory.Record
		require.NoError(t, json.Unmarshal(out, &rec))
		return rec
	}
	fact := post(map[string]any{"type": "semantic", "confidence": 0.9,
		"provenance": map[string]any{"sources": []any{map[string]any{"kind": "human", "ref": "chat://jane/1"}}},
		"payload": map[string]any{"kind": "semantic", "subject": "user", "predicate": "prefers_editor", "object": "emacs",
			"validity": map[string]any{"mode": "global"}, "revision_policy": "replace"}})
	post(map[string]any{"type": "plan_graph", "confidence": 0.8,
		"relations": []any{map[string]any{"predicate": "informed_by", "target_id": fact.ID}},
		"payload": map[string]any{"kind": "plan_graph", "plan_id": "setup-db", "version": "1", "intent": "setup_database",
			"constraints": map[string]any{"conditions": map[string]any{"platform": "linux"}},
			"nodes":       []any{map[string]any{"id": "a", "op": "createdb"}, map[string]any{"id": "b", "op": "migrate"}},
			"edges":       []any{map[string]any{"from": "a", "to": "b", "kind": "control"}}}})

	code, body := d.call(t, testKey, "POST", "/v1/retrieve", map[string]any{"task": map[string]any{"text": "make the tests pass",
		"signals": []any{"Error: Cannot find module 'dayjs'"}}})
	require.Equal(t, http.StatusOK, code, string(body))
	var got api.RetrieveResult
	require.NoError(t, json.Unmarshal(body, &got))
	code, body = d.call(t, testKey, "POST", "/v1/feedback", map[string]any{"retrieval_id": got.RetrievalID, "outcome": "used_success"})
	require.Equal(t, http.StatusOK, code, string(body))

	// Every record, whatever its status.
	types := map[memory.Type]int{}
	recordSources := 0
	cursor := ""
	for {
		code, body := d.call(t, testKey, "GET", "/v1/records?status=all&limit=100&cursor="+url.QueryEscape(cursor), nil)
		require.Equal(t, http.StatusOK, code, string(body))
		var page api.RecordPage
		require.NoError(t, json.Unmarshal(body, &page))
		for _, rec := range page.Records {
			types[rec.Type]++
			code, doc := d.call(t, testKey, "GET", "/v1/records/"+rec.ID.String()+"?form=rfc", nil)
			require.Equal(t, http.StatusOK, code, string(doc))
			require.NoError(t, rfc.ValidateRecord(doc), "%s %s: %s", rec.Type, rec.ID, doc)
			for _, s := range rec.Provenance.Sources {
				if s.Kind == "record" {
					recordSources++
				}
			}
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	for _, typ := range []memory.Type{memory.Episodic, memory.Working, memory.Semantic, memory.Competence, memory.PlanGraph} {
		require.Positive(t, types[typ], "a %s record was written: %v", typ, types)
	}
	require.Positive(t, recordSources, fmt.Sprintf("learned records cite records: %v", types))
}
