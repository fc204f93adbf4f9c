package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/internal/logtest"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/policy"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

type ingestEnv struct {
	*env
	worker *ingest.Worker
	logs   *logtest.Buffer
}

func setupIngest(t *testing.T, policyYAML string, cfg ingest.Config) *ingestEnv {
	t.Helper()
	db := pgtest.NewSchema(t)
	ctx := context.Background()
	wr := revise.New(db.Pool, revise.Config{})
	require.NoError(t, store.EnsureTenant(ctx, db.Pool, "acme"))
	logs := &logtest.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	pol, err := policy.Parse([]byte(policyYAML), "test")
	require.NoError(t, err)
	w := ingest.NewWorker(ingest.WorkerConfig{DB: db.Pool, Policy: pol, Logger: logger})
	cfg.DB, cfg.Policy, cfg.Staged = db.Pool, w.Policy, w.Notify
	srv := httptest.NewServer(server.New(server.Config{
		DB: db.Pool, Writer: wr, Logger: logger, Ingest: ingest.New(cfg), Policy: w.Policy,
		Keys: []server.Key{{Tenant: "acme", Name: "acme-test", Secret: acmeKey, Role: server.RoleCurator}},
	}))
	t.Cleanup(srv.Close)
	return &ingestEnv{env: &env{t: t, url: srv.URL, db: db}, worker: w, logs: logs}
}

func (e *ingestEnv) drain() {
	e.t.Helper()
	_, err := e.worker.Drain(context.Background())
	require.NoError(e.t, err)
}

func event(kind, thread string, fields map[string]any) map[string]any {
	m := map[string]any{"kind": kind, "agent_id": "agent-1", "thread_id": thread}
	for k, v := range fields {
		m[k] = v
	}
	return m
}

type stagedBody struct {
	Events []api.StagedEvent `json:"events"`
}

func TestPostEventsAtomicAndIdempotent(t *testing.T) {
	t.Parallel()
	e := setupIngest(t, "", ingest.Config{})

	one := event("user_input", "t1", map[string]any{"text": "hi", "idempotency_key": "k1"})
	res := e.do("POST", "/v1/events", acmeKey, one)
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	var first stagedBody
	res.decode(t, &first)
	require.Len(t, first.Events, 1)
	require.False(t, first.Events[0].Duplicate)

	// A retry, alone or inside a batch, is absorbed with the original id;
	// so is an event with the same content, agent and thread.
	plain := event("observation", "t1", map[string]any{"text": "same", "time": "2026-11-01T00:00:00Z"})
	res = e.do("POST", "/v1/events", acmeKey, []any{one, plain, plain})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	var again stagedBody
	res.decode(t, &again)
	require.Equal(t, first.Events[0].ID, again.Events[0].ID)
	require.True(t, again.Events[0].Duplicate)
	require.Equal(t, again.Events[1].ID, again.Events[2].ID)
	require.True(t, again.Events[2].Duplicate)
	require.Equal(t, 2, e.count("SELECT count(*) FROM candidates"))

	// One bad event refuses the batch: nothing of it is stored.
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	res = e.do("POST", "/v1/events", acmeKey, []any{
		event("observation", "t2", map[string]any{"text": "fine"}),
		event("dream", "t2", nil),
		event("observation", "", map[string]any{"text": "no thread"}),
		event("observation", "t2", map[string]any{"text": "later", "time": future}),
		event("tool_call", "t2", nil),
	})
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	p := res.problem(t)
	var pointers []string
	for _, fe := range p.Errors {
		pointers = append(pointers, fe.Pointer)
	}
	require.Contains(t, pointers, "/1/kind")
	require.Contains(t, pointers, "/2/thread_id")
	require.Contains(t, pointers, "/3/time")
	require.Contains(t, pointers, "/4/tool")
	require.Equal(t, 2, e.count("SELECT count(*) FROM candidates"))

	res = e.do("POST", "/v1/events", acmeKey, "{\"kind\": \"observation\", \"agent_id\": \"a\", \"thread_id\": \"t\", \"text\": \"\xff\"}")
	require.Equal(t, http.StatusUnprocessableEntity, res.status)
	require.Equal(t, "urn:engram:problem:invalid-utf8", res.problem(t).Type)
	res = e.do("POST", "/v1/events", acmeKey, `{"kind": "observation",`)
	require.Equal(t, http.StatusBadRequest, res.status)
}

func TestRateLimitAndBacklog(t *testing.T) {
	t.Parallel()
	e := setupIngest(t, "", ingest.Config{AgentRate: 1, AgentBurst: 2, MaxBacklog: 3})
	batch := func(n int, agent string) []any {
		var out []any
		for i := range n {
			ev := event("observation", "t", map[string]any{"text": fmt.Sprint(i)})
			ev["agent_id"] = agent
			out = append(out, ev)
		}
		return out
	}
	require.Equal(t, http.StatusAccepted, e.do("POST", "/v1/events", acmeKey, batch(2, "a")).status)
	res := e.do("POST", "/v1/events", acmeKey, batch(1, "a"))
	require.Equal(t, http.StatusTooManyRequests, res.status)
	require.NotEmpty(t, res.header.Get("Retry-After"))
	require.Equal(t, "urn:engram:problem:rate-limited", res.problem(t).Type)

	require.Equal(t, http.StatusAccepted, e.do("POST", "/v1/events", acmeKey, batch(1, "b")).status)
	time.Sleep(1100 * time.Millisecond) // the backlog count is cached for a second
	res = e.do("POST", "/v1/events", acmeKey, batch(1, "c"))
	require.Equal(t, http.StatusServiceUnavailable, res.status, string(res.body))
	require.Equal(t, "5", res.header.Get("Retry-After"))
	require.Equal(t, 3, e.count("SELECT count(*) FROM candidates"))
}

func TestStreamAcknowledgesAsBatchesCommit(t *testing.T) {
	t.Parallel()
	e := setupIngest(t, "", ingest.Config{})
	pr, pw := io.Pipe()
	req, err := http.NewRequest("POST", e.url+"/v1/events:stream", pr)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+acmeKey)
	req.Header.Set("Content-Type", "application/x-ndjson")

	type result struct {
		res *http.Response
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		done <- result{res, err}
	}()
	line := func(v any) {
		b, _ := json.Marshal(v)
		_, err := pw.Write(append(b, '\n'))
		require.NoError(t, err)
	}
	line(event("user_input", "s1", map[string]any{"text": "first"}))
	r := <-done
	require.NoError(t, r.err)
	defer r.res.Body.Close()
	require.Equal(t, http.StatusOK, r.res.StatusCode)
	acks := bufio.NewScanner(r.res.Body)

	type ackLine struct {
		Line  int             `json:"line"`
		ID    string          `json:"id"`
		Error *server.Problem `json:"error"`
	}
	next := func() ackLine {
		require.True(t, acks.Scan(), "an acknowledgement arrives while the stream stays open")
		var a ackLine
		require.NoError(t, json.Unmarshal(acks.Bytes(), &a))
		return a
	}
	a := next()
	require.Equal(t, 1, a.Line)
	require.NotEmpty(t, a.ID)

	// A malformed line gets its line number; the stream stays usable.
	_, err = pw.Write([]byte("{not json\n"))
	require.NoError(t, err)
	line(event("observation", "s1", map[string]any{"text": "third"}))
	a = next()
	require.Equal(t, 2, a.Line)
	require.NotNil(t, a.Error)
	require.Equal(t, "urn:engram:problem:invalid-event", a.Error.Type)
	a = next()
	require.Equal(t, 3, a.Line)
	require.NotEmpty(t, a.ID)

	require.NoError(t, pw.Close())
	require.False(t, acks.Scan())
	require.Equal(t, 2, e.count("SELECT count(*) FROM candidates"))
}

// Planted secrets and personal data reach no table and no log line.
func TestNoSecretReachesATableOrALog(t *testing.T) {
	t.Parallel()
	e := setupIngest(t, "secrets: {literals: [\"hunter2-internal\"]}", ingest.Config{})
	planted := map[string]string{
		"openai":   "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
		"github":   "ghp_0123456789abcdefghijABCDEFGHIJklmnop",
		"aws":      "AKIAIOSFODNN7EXAMPLE",
		"jwt":      "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
		"url":      "s3cr3tP4ss",
		"assign":   "correct-horse-battery",
		"literal":  "hunter2-internal",
		"email":    "jane.doe@example.com",
		"card":     "4111 1111 1111 1111",
		"iban":     "DE89370400440532013000",
		"pemblock": "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
	}
	text := fmt.Sprintf("key %s token %s aws %s jwt %s db postgres://app:%s@db:5432/x password=%s lit %s mail %s card %s iban %s\n"+
		"-----BEGIN PRIVATE KEY-----\n%s\n-----END PRIVATE KEY-----",
		planted["openai"], planted["github"], planted["aws"], planted["jwt"], planted["url"], planted["assign"],
		planted["literal"], planted["email"], planted["card"], planted["iban"], planted["pemblock"])
	res := e.do("POST", "/v1/events", acmeKey, []any{
		event("observation", "t1", map[string]any{"text": text, "tags": []string{"owner:" + planted["email"]}}),
		event("tool_output", "t1", map[string]any{"tool": map[string]any{"name": "env", "result": map[string]any{"OPENAI_API_KEY": planted["openai"]}}}),
		event("fact", "t1", map[string]any{"fact": map[string]any{"subject": "user", "predicate": "email", "object": planted["email"]}}),
		event("error", "t1", map[string]any{"error": map[string]any{"message": "auth failed for Bearer " + planted["jwt"]}}),
	})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	// A refused event's error body must not echo it either.
	bad := event("observation", "t1", map[string]any{"text": planted["openai"], "colour": planted["github"]})
	res = e.do("POST", "/v1/events", acmeKey, bad)
	require.Equal(t, http.StatusUnprocessableEntity, res.status)
	for name, v := range planted {
		require.NotContains(t, string(res.body), v, name)
	}
	e.drain()

	var dump strings.Builder
	rows, err := e.db.Pool.Query(context.Background(), `
		SELECT row_to_json(t)::text FROM candidates t UNION ALL SELECT row_to_json(t)::text FROM records t
		UNION ALL SELECT row_to_json(t)::text FROM record_versions t UNION ALL SELECT row_to_json(t)::text FROM audit_log t
		UNION ALL SELECT row_to_json(t)::text FROM relations t UNION ALL SELECT row_to_json(t)::text FROM threads t`)
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		dump.WriteString(s)
	}
	require.NoError(t, rows.Err())
	require.Contains(t, dump.String(), "[REDACTED:", "redaction markers are there")
	for name, v := range planted {
		require.NotContains(t, dump.String(), v, "%s reached a table", name)
		require.NotContains(t, e.logs.String(), v, "%s reached the log", name)
	}
	var sens string
	require.NoError(t, e.db.Pool.QueryRow(context.Background(), `SELECT sensitivity FROM records WHERE type = 'episodic'`).Scan(&sens))
	require.Equal(t, "hyper", sens, "the episode's sensitivity rose to its most sensitive content")
}

func TestSecretsRejectedWhenPolicySaysSo(t *testing.T) {
	t.Parallel()
	e := setupIngest(t, "secrets: {on_secret: reject}", ingest.Config{})
	res := e.do("POST", "/v1/events", acmeKey, event("observation", "t1", map[string]any{"text": "AKIAIOSFODNN7EXAMPLE"}))
	require.Equal(t, http.StatusUnprocessableEntity, res.status)
	p := res.problem(t)
	require.Equal(t, "urn:engram:problem:secret-leakage", p.Type)
	require.NotContains(t, string(res.body), "AKIAIOSFODNN7EXAMPLE")

	// Values that only their keys show to be secrets.
	for name, ev := range map[string]map[string]any{
		"environment":    event("observation", "t1", map[string]any{"text": "x", "environment": map[string]any{"AWS_SECRET_ACCESS_KEY": "s3cr3t-value-1"}}),
		"tool arguments": event("tool_call", "t1", map[string]any{"tool": map[string]any{"name": "db", "arguments": map[string]any{"password": "s3cr3t-value-1"}}}),
		"tool result":    event("tool_output", "t1", map[string]any{"tool": map[string]any{"name": "db", "result": map[string]any{"api_key": "s3cr3t-value-1"}}}),
		"fact object":    event("fact", "t1", map[string]any{"fact": map[string]any{"subject": "db", "predicate": "login", "object": map[string]any{"DB_PASSWORD": "s3cr3t-value-1"}}}),
		"fact condition": event("fact", "t1", map[string]any{"fact": map[string]any{"subject": "db", "predicate": "host", "object": "h", "conditions": map[string]any{"token": "s3cr3t-value-1"}}}),
	} {
		res := e.do("POST", "/v1/events", acmeKey, ev)
		require.Equal(t, http.StatusUnprocessableEntity, res.status, "%s: %s", name, res.body)
		require.Equal(t, "urn:engram:problem:secret-leakage", res.problem(t).Type, name)
		require.NotContains(t, string(res.body), "s3cr3t-value-1", name)
	}
	require.Zero(t, e.count("SELECT count(*) FROM candidates"))
}

func TestExplainThreadsAndDeadLetters(t *testing.T) {
	t.Parallel()
	e := setupIngest(t, "rules: [{name: prod, match: {environment: {env: prod}}, set: {sensitivity: high}}]", ingest.Config{})
	res := e.do("POST", "/v1/policy:explain", acmeKey, event("tool_call", "t1", map[string]any{
		"tool": map[string]any{"name": "deploy"}, "environment": map[string]any{"env": "prod"}}))
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var x ingest.Explanation
	res.decode(t, &x)
	require.Equal(t, []string{"prod"}, x.Decision.Rules)
	require.Zero(t, e.count("SELECT count(*) FROM candidates"), "explaining stores nothing")

	e.do("POST", "/v1/events", acmeKey, event("observation", "t1", map[string]any{"text": "x"}))
	e.drain()
	res = e.do("GET", "/v1/threads/t1", acmeKey, nil)
	require.Equal(t, http.StatusOK, res.status)
	var th store.Thread
	res.decode(t, &th)
	require.NotNil(t, th.WorkingID)
	require.Equal(t, http.StatusNotFound, e.do("GET", "/v1/threads/nope", acmeKey, nil).status)

	res = e.do("GET", "/v1/candidates?status=dead", acmeKey, nil)
	require.Equal(t, http.StatusOK, res.status)
	require.JSONEq(t, `{"candidates": []}`, string(res.body))
	require.Equal(t, http.StatusBadRequest, e.do("GET", "/v1/candidates?status=zombie", acmeKey, nil).status)
}

// A stream's lines are numbered as an editor numbers them, blank lines
// too, and a line that is not JSON is answered in words: the character,
// its byte and where it stands, never the decoder's text.
func TestStreamNumbersEveryLineAndSaysWhyALineIsNotJSON(t *testing.T) {
	t.Parallel()
	e := setupIngest(t, "", ingest.Config{})
	ev := func(text string) string {
		b, _ := json.Marshal(event("observation", "s1", map[string]any{"text": text}))
		return string(b)
	}
	body := strings.Join([]string{
		ev("one"),       // 1
		"",              // 2
		"hello world",   // 3
		"   ",           // 4
		"",              // 5
		ev("six"),       // 6
		`{"kind": tru}`, // 7
		`{"kind":"observation"} {"kind":"observation"}`, // 8
		`{"kind": "observation", "text": "cut`,          // 9
		`{"kind" "observation"}`,                        // 10
	}, "\n") + "\n"
	req, err := http.NewRequest("POST", e.url+"/v1/events:stream", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+acmeKey)
	req.Header.Set("Content-Type", "application/x-ndjson")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	got := map[int]string{}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		var a struct {
			Line  int             `json:"line"`
			ID    string          `json:"id"`
			Error *server.Problem `json:"error"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &a))
		if a.Error != nil {
			got[a.Line] = a.Error.Detail
		} else {
			got[a.Line] = "ok"
		}
	}
	require.Equal(t, map[int]string{
		1:  "ok",
		3:  `not JSON: unexpected 'h' at byte 1, where a value should start (an event is a JSON object: {"kind": …})`,
		6:  "ok",
		7:  "not JSON: unexpected '}' at byte 13, in a literal (true, false or null)",
		8:  "more than one JSON value: an event is one JSON object (one a line in a stream)",
		9:  "the JSON ends in the middle of a value",
		10: "not JSON: unexpected '\"' at byte 9, after a key, where ':' should be",
	}, got)
	for _, d := range got {
		require.NotContains(t, d, "invalid character")
		require.NotContains(t, d, "world")
	}
}
