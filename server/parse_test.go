package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

// setupFull is a server as a new user runs it, with every plane:
// ingestion, whose events the policy plane classifies when the test drains
// it (the default policy), decay, and retrieval with the default
// configuration; keys of two tenants and an operator.
func setupFull(t *testing.T) *ingestEnv {
	t.Helper()
	return setupGates(t, revise.Gates{})
}

// setupGates is setupFull with the write path's gates configured.
func setupGates(t *testing.T, gates revise.Gates) *ingestEnv {
	t.Helper()
	require.NoError(t, gates.Validate())
	db := pgtest.NewSchema(t)
	wr := revise.New(db.Pool, revise.Config{Gates: gates})
	for _, tenant := range []string{"acme", "other"} {
		require.NoError(t, store.EnsureTenant(context.Background(), db.Pool, tenant))
	}
	w := ingest.NewWorker(ingest.WorkerConfig{DB: db.Pool, Writer: wr})
	settings, err := decay.NewSettings(decay.DefaultConfig())
	require.NoError(t, err)
	rs, err := retrieve.NewSettings(retrieve.DefaultConfig())
	require.NoError(t, err)
	srv := httptest.NewServer(server.New(server.Config{
		DB: db.Pool, Writer: wr, Logger: slog.New(slog.DiscardHandler),
		Ingest: ingest.New(ingest.Config{DB: db.Pool, Policy: w.Policy, Staged: w.Notify}),
		Decay:  decay.New(db.Pool, wr, settings), Retrieve: retrieve.New(db.Pool, rs),
		Keys: testKeys,
	}))
	t.Cleanup(srv.Close)
	return &ingestEnv{env: &env{t: t, url: srv.URL, db: db}, worker: w}
}

// stored counts the rows of every table a request could write to.
func (e *env) stored() int {
	return e.count(`SELECT (SELECT count(*) FROM candidates) + (SELECT count(*) FROM records)
		+ (SELECT count(*) FROM record_versions) + (SELECT count(*) FROM audit_log)
		+ (SELECT count(*) FROM relations) + (SELECT count(*) FROM feedback) + (SELECT count(*) FROM retrievals)`)
}

func (e *env) create(body any) memory.Record {
	e.t.Helper()
	res := e.do("POST", "/v1/records", acmeKey, body)
	require.Equal(e.t, http.StatusCreated, res.status, string(res.body))
	var rec memory.Record
	res.decode(e.t, &rec)
	return rec
}

// stream sends lines to POST /v1/events:stream and returns the
// acknowledgements by line.
func (e *env) stream(lines ...string) map[int]ackLine {
	e.t.Helper()
	return e.streamAs(acmeKey, lines...)
}

// streamAs is stream with key.
func (e *env) streamAs(key string, lines ...string) map[int]ackLine {
	e.t.Helper()
	req, err := http.NewRequest("POST", e.url+"/v1/events:stream", strings.NewReader(strings.Join(lines, "\n")+"\n"))
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/x-ndjson")
	res, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	require.Equal(e.t, http.StatusOK, res.StatusCode)
	acks := map[int]ackLine{}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		var a ackLine
		require.NoError(e.t, json.Unmarshal(sc.Bytes(), &a), sc.Text())
		acks[a.Line] = a
	}
	require.NoError(e.t, sc.Err())
	return acks
}

type ackLine struct {
	Line  int             `json:"line"`
	ID    string          `json:"id"`
	Error *server.Problem `json:"error"`
}

func pointers(p server.Problem) []string {
	var out []string
	for _, fe := range p.Errors {
		out = append(out, fe.Pointer)
	}
	return out
}

// A NUL character (U+0000), which PostgreSQL's text and jsonb cannot hold,
// is refused wherever a client may send one: 422 naming the field in a body,
// 400 naming the parameter in a path or query, one line's error on a
// stream. Nothing of a refused request is stored.
func TestNULIsRefusedEverywhere(t *testing.T) {
	t.Parallel()
	e := setupFull(t)
	fact := e.create(factBody("go", nil))
	other := e.create(factBody("go", map[string]any{"os": "linux"}))
	working := e.create(map[string]any{"type": "working", "payload": map[string]any{"kind": "working", "thread_id": "t1", "state": "planning"}})
	episode := e.create(map[string]any{"type": "episodic", "payload": map[string]any{"kind": "episodic", "timeline": []any{}}})
	before := e.stored()

	const nul = "a\x00b"
	ev := func(fields map[string]any) map[string]any {
		return event("observation", "t1", fields)
	}
	factWith := func(subject string, conds map[string]any) map[string]any {
		b := factBody("go", conds)
		b["payload"].(map[string]any)["subject"] = subject
		return b
	}
	rec := func(id memory.Record, op string) string { return "/v1/records/" + id.ID.String() + op }

	bodies := []struct {
		method, path string
		body         any
		pointer      string
	}{
		{"POST", "/v1/events", ev(map[string]any{"text": nul}), "/text"},
		{"POST", "/v1/events", []any{ev(map[string]any{"text": "fine"}), ev(map[string]any{"tags": []string{"x", nul}})}, "/1/tags/1"},
		{"POST", "/v1/events", ev(map[string]any{"environment": map[string]any{nul: "linux"}}), "/environment"},
		{"POST", "/v1/events", ev(map[string]any{"text": "x", nul: "y"}), ""},
		{"POST", "/v1/records", factWith(nul, nil), "/payload/subject"},
		{"POST", "/v1/records", factWith("user", map[string]any{"os": nul}), "/payload/validity/conditions/os"},
		{"POST", "/v1/records", map[string]any{"type": "semantic", "tags": []string{nul}}, "/tags/0"},
		{"PATCH", rec(working, ""), map[string]any{"version": 1, "payload": map[string]any{"kind": "working", "thread_id": "t1", "state": nul}}, "/payload/state"},
		{"PATCH", rec(working, ""), map[string]any{"version": 1, "rationale": nul, "payload": map[string]any{"kind": "working", "thread_id": "t1", "state": "x"}}, "/rationale"},
		{"POST", rec(fact, ":supersede"), map[string]any{"version": 1, "record": factWith(nul, nil)}, "/record/payload/subject"},
		{"POST", rec(fact, ":fork"), map[string]any{"version": 1, "variants": []any{
			factWith("user", map[string]any{"os": "linux"}), factWith("user", map[string]any{"os": nul})}}, "/variants/1/payload/validity/conditions/os"},
		{"POST", rec(fact, ":contest"), map[string]any{"against": []string{other.ID.String()}, "rationale": nul}, "/rationale"},
		{"POST", rec(fact, ":retract"), map[string]any{"version": 1, "evidence": []any{map[string]any{"kind": "human", "ref": nul}}}, "/evidence/0/ref"},
		{"POST", rec(episode, ":append"), map[string]any{"timeline": []any{
			map[string]any{"t": "2026-01-01T00:00:00Z", "event_kind": "error", "ref": "evt://1", "summary": nul}}}, "/timeline/0/summary"},
		{"POST", rec(episode, ":append"), map[string]any{"outcome": nul}, "/outcome"},
		{"POST", rec(episode, ":restore"), map[string]any{"rationale": nul}, "/rationale"},
		{"POST", rec(episode, ":purge"), map[string]any{"rationale": nul}, "/rationale"},
		{"POST", "/v1/records:merge", map[string]any{"record_ids": []string{fact.ID.String(), other.ID.String()}, "rationale": nul}, "/rationale"},
		{"POST", "/v1/retrieve", map[string]any{"task": map[string]any{"text": nul}}, "/task/text"},
		{"POST", "/v1/retrieve", map[string]any{"task": map[string]any{"text": "x", "conditions": map[string]any{"os": nul}}}, "/task/conditions/os"},
		{"POST", "/v1/feedback", map[string]any{"key": nul, "record_ids": []string{fact.ID.String()}, "outcome": "unused"}, "/key"},
		{"POST", "/v1/policy:explain", ev(map[string]any{"text": nul}), "/text"},
		{"POST", "/v1/decay/preview", map[string]any{"at": nul}, "/at"},
	}
	for _, c := range bodies {
		res := e.do(c.method, c.path, acmeKey, c.body)
		require.Equal(t, http.StatusUnprocessableEntity, res.status, "%s %s: %s", c.method, c.path, res.body)
		p := res.problem(t)
		require.Contains(t, pointers(p), c.pointer, "%s %s: %s", c.method, c.path, res.body)
		require.Contains(t, string(res.body), "U+0000", "%s %s", c.method, c.path)
	}

	for _, c := range []struct{ method, path, param string }{
		{"GET", "/v1/threads/%00", "thread_id"},
		{"GET", "/v1/threads/a%00b", "thread_id"},
		{"GET", "/v1/records/%00", "id"},
		{"GET", "/v1/records/%00/history", "id"},
		{"DELETE", "/v1/records/%00", "id"},
		{"POST", "/v1/records/%00:retract", "id"},
		{"POST", "/v1/jobs/%00:run", "name"},
		{"GET", "/v1/artifacts/%00", "sha256"},
		{"GET", "/v1/records?subject=%00", "subject"},
		{"GET", "/v1/records?predicate=a%00", "predicate"},
		{"GET", "/v1/records?tag=x,%00", "tag"},
		{"GET", "/v1/records?scope=%00", "scope"},
		{"GET", "/v1/records?cursor=%00", "cursor"},
		{"POST", "/v1/records?rationale=%00", "rationale"},
		{"DELETE", rec(fact, "?rationale=%00"), "rationale"},
		{"GET", "/v1/candidates?status=%00", "status"},
		{"GET", rec(fact, "?as_of=2026-01-01T00:00:00Z%00"), "as_of"},
	} {
		var body any
		if c.method == "POST" {
			body = factBody("go", map[string]any{"os": "mac"})
		}
		key := acmeKey
		if strings.HasPrefix(c.path, "/v1/jobs/") {
			key = opsKey // the jobs take an operator key
		}
		res := e.do(c.method, c.path, key, body)
		require.Equal(t, http.StatusBadRequest, res.status, "%s %s: %s", c.method, c.path, res.body)
		p := res.problem(t)
		require.Equal(t, "urn:engram:problem:invalid-parameter", p.Type, c.path)
		require.Equal(t, c.param, p.Errors[0].Parameter, c.path)
	}
	require.Equal(t, before, e.stored(), "nothing of a refused request is stored")

	// On a stream only the line with the NUL fails; the others are staged.
	line := func(fields map[string]any) string {
		b, err := json.Marshal(ev(fields))
		require.NoError(t, err)
		return string(b)
	}
	acks := e.stream(line(map[string]any{"text": "one"}), line(map[string]any{"text": nul}),
		line(map[string]any{"environment": map[string]any{nul: "x"}}), line(map[string]any{"text": "four"}))
	require.Len(t, acks, 4)
	require.NotEmpty(t, acks[1].ID)
	require.NotEmpty(t, acks[4].ID)
	for l, pointer := range map[int]string{2: "/text", 3: "/environment"} {
		require.NotNil(t, acks[l].Error, "line %d", l)
		require.Equal(t, http.StatusUnprocessableEntity, acks[l].Error.Status)
		require.Contains(t, pointers(*acks[l].Error), pointer)
	}
	require.Equal(t, 2, e.count("SELECT count(*) FROM candidates"))
}

// POST /v1/events and each line of POST /v1/events:stream parse the same,
// strictly: one JSON value, nothing after it but JSON whitespace.
func TestEventsAndStreamParseAlike(t *testing.T) {
	t.Parallel()
	e := setupFull(t)
	ev, err := json.Marshal(event("observation", "t1", map[string]any{"text": "x"}))
	require.NoError(t, err)
	good := string(ev)

	refused := []string{
		good + ` xyz {"oops"`,
		good + ` {}`,
		good + `}`,
		good + `]`,
		good + ` // a comment`,
		good + `,`,
		good + "\u00a0",
		"\u00a0" + good,
		good + "\u0085",
		good + "\v",
		"\ufeff" + good,
		strings.Replace(good, `"x"`, `"\u0000"`, 1) + " xyz", // malformed before unstorable
	}
	for _, body := range refused {
		res := e.do("POST", "/v1/events", acmeKey, body)
		require.Equal(t, http.StatusBadRequest, res.status, "%q: %s", body, res.body)
		require.Equal(t, "urn:engram:problem:malformed-json", res.problem(t).Type)
		acks := e.stream(body)
		require.Len(t, acks, 1, "%q", body)
		require.NotNil(t, acks[1].Error, "%q is refused on the stream too", body)
		require.Equal(t, "urn:engram:problem:invalid-event", acks[1].Error.Type)
	}
	require.Zero(t, e.count("SELECT count(*) FROM candidates"))

	// JSON whitespace around the value, and CRLF line ends, are fine on both.
	for i, body := range []string{" \t" + good + " \t", good + "\r"} {
		res := e.do("POST", "/v1/events", acmeKey, body)
		require.Equal(t, http.StatusAccepted, res.status, "%q: %s", body, res.body)
		acks := e.stream(body)
		require.Len(t, acks, 1, "%q", body)
		require.Nil(t, acks[1].Error, "%q", body)
		require.NotEmpty(t, acks[1].ID, i)
	}
}

// What PostgreSQL cannot store is refused, not a 500: an unpaired UTF-16
// surrogate escape (not Unicode, and not I-JSON, RFC 7493 §2.1) or a number
// beyond numeric's range, with the field's pointer; a body, parameter or
// stored header that is not UTF-8. A surrogate pair is text like any other.
func TestUnstorableInputIsRefused(t *testing.T) {
	t.Parallel()
	e := setupFull(t)
	fact := func(subject, object string) string {
		return `{"type": "semantic", "payload": {"kind": "semantic", "subject": "` + subject + `", "predicate": "p", "object": "` + object + `", "validity": {"mode": "global"}}}`
	}
	for body, pointer := range map[string]string{
		fact(`u\ud800`, "o"):      "/payload/subject",
		fact("u", `\uDC00x`):      "/payload/object",
		fact(`\ud800\ud800`, "o"): "/payload/subject",
		fact(`\ud83d`, `\u0000`):  "/payload/object",
		`{"type": "semantic", "payload": {"kind": "semantic", "subject": "u", "predicate": "p", "object": [1, 1e131072],
			"validity": {"mode": "global"}}}`: "/payload/object/1",
		`{"type": "semantic", "payload": {"kind": "semantic", "subject": "u", "predicate": "p", "object": {"n": 1e700},
			"validity": {"mode": "global"}}}`: "/payload/object/n",
		`{"type": "semantic", "payload": {"kind": "semantic", "subject": "u", "predicate": "p", "object": "o",
			"validity": {"mode": "conditional", "conditions": {"\udfff": "x"}}}}`: "/payload/validity/conditions",
	} {
		res := e.do("POST", "/v1/records", acmeKey, body)
		require.Equal(t, http.StatusUnprocessableEntity, res.status, "%s: %s", body, res.body)
		require.Contains(t, pointers(res.problem(t)), pointer, body)
	}
	res := e.do("POST", "/v1/records", acmeKey, fact("u", "o\xff"))
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	require.Equal(t, "urn:engram:problem:invalid-utf8", res.problem(t).Type)
	require.Zero(t, e.stored())

	res = e.do("POST", "/v1/records", acmeKey, fact(`\ud83d\ude00 \\ud800`, "o"))
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	var rec memory.Record
	res.decode(t, &rec)
	var payload memory.SemanticPayload
	require.NoError(t, json.Unmarshal(rec.Payload, &payload))
	require.Equal(t, `😀 \ud800`, payload.Subject)

	for path, param := range map[string]string{
		"/v1/threads/%ff": "thread_id", "/v1/records?subject=%ff": "subject", "/v1/records?tag=a,%c3": "tag",
		"/v1/artifacts/%ed%a0%80": "sha256", "/v1/records?predicate=%80x": "predicate",
	} {
		res := e.do("GET", path, acmeKey, nil)
		require.Equal(t, http.StatusBadRequest, res.status, "%s: %s", path, res.body)
		require.Equal(t, param, res.problem(t).Errors[0].Parameter, path)
	}

	res = e.do("POST", "/v1/records", acmeKey, factBody("go", nil), "X-Engram-Actor", "agent\xff")
	require.Equal(t, http.StatusBadRequest, res.status, string(res.body))
	require.Equal(t, "X-Engram-Actor", res.problem(t).Errors[0].Header)
	res = e.do("POST", "/v1/artifacts", acmeKey, "some bytes", "Content-Type", "text/plain; charset=\xff")
	require.Equal(t, http.StatusBadRequest, res.status, string(res.body))
	require.Equal(t, "Content-Type", res.problem(t).Errors[0].Header)

	acks := e.stream(`{"kind": "observation", "agent_id": "a", "thread_id": "t", "text": "\ud800"}`,
		`{"kind": "observation", "agent_id": "a", "thread_id": "t", "text": "\ud83d\ude00"}`,
		`{"kind": "observation", "agent_id": "a", "thread_id": "t", "text": "x", "environment": {"n": 1e-16384}}`,
		`{"kind": "observation", "agent_id": "a", "thread_id": "t", "text": "y", "environment": {"n": 1e-16383, "m": 1e300}}`)
	require.NotNil(t, acks[1].Error)
	require.Contains(t, pointers(*acks[1].Error), "/text")
	require.NotEmpty(t, acks[2].ID)
	require.NotNil(t, acks[3].Error)
	require.Contains(t, pointers(*acks[3].Error), "/environment/n")
	require.NotEmpty(t, acks[4].ID)
}
