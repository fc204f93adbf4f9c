package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/internal/logtest"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/policy"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

// Planted values are assembled from pieces so that secret scanners reading
// this file do not flag it; none of them is live.
var (
	plantAWSKeyID  = "AKIA" + "IOSFODNN7PLANTED"
	plantAWSSecret = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYPLANTEDKEY"
	plantGitHub    = "ghp_" + "16C7e42F292c6912E7710c838347Ae178B4a"
	plantJWTSig    = "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	plantJWT       = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." +
		"eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ." + plantJWTSig
	plantPEMLine1 = "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB"
	plantPEMLine2 = "aFDrBz9vFqU4yR7Qw8m1zKx6wYb2gQ3G9W5m7lJx0pVh8n3cT4kR2sD6fH1jL9qA"
	plantPEM      = "-----BEGIN RSA " + "PRIVATE KEY-----\n" + plantPEMLine1 + "\n" + plantPEMLine2 + "\n-----END RSA " + "PRIVATE KEY-----"
	plantPassword = "Hunter2" + "PlantedPw9"
	plantEmail    = "mallory.planted" + "@example.org"
	plantCard     = "4111 1111 " + "1111 1111"
)

// plant is one kind of secret or personal datum: the text that carries it
// where a reader could recognize it, the value alone (planted under a key
// that names a secret, and as a key), and what must never be found again.
type plant struct {
	name    string
	text    string
	value   string
	asKey   bool // the value is recognizable alone, so it is also planted as an object key
	needles []string
}

var plants = []plant{
	{"aws_access_key", plantAWSKeyID, plantAWSKeyID, true, []string{plantAWSKeyID}},
	{"aws_secret_key", "AWS_SECRET_ACCESS_KEY=" + plantAWSSecret, plantAWSSecret, false, []string{plantAWSSecret}},
	{"github_token", plantGitHub, plantGitHub, true, []string{plantGitHub}},
	{"jwt", plantJWT, plantJWT, true, []string{plantJWTSig}},
	{"private_key", plantPEM, plantPEM, true, []string{plantPEMLine1, plantPEMLine2}},
	{"password", "DB_PASSWORD=" + plantPassword, plantPassword, false, []string{plantPassword}},
	{"email", plantEmail, plantEmail, true, []string{plantEmail}},
	{"card_number", plantCard, plantCard, true, []string{plantCard, strings.ReplaceAll(plantCard, " ", "")}},
}

// allText carries every planted value in free text.
func allText() string {
	parts := make([]string, len(plants))
	for i, p := range plants {
		parts[i] = p.text
	}
	return "notes: " + strings.Join(parts, " ; ") + " ; end"
}

// scalars is an object of scalar values, as environments and conditions
// take: every value in text, the plain values under keys that name
// secrets, and every recognizable value as a key.
func scalars(via string) map[string]any {
	m := map[string]any{
		"note":                  allText(),
		"AWS_SECRET_ACCESS_KEY": plantAWSSecret,
		"DB_PASSWORD":           plantPassword,
		"password":              plantPassword,
		"api_key":               plantGitHub,
		"os":                    via,
	}
	for _, p := range plants {
		if p.asKey {
			m[p.value] = "named by " + p.name
		}
	}
	return m
}

// object is a free-form object: scalars, and the same nested.
func object(via string) map[string]any {
	m := scalars(via)
	m["nested"] = []any{scalars(via), map[string]any{"credentials": map[string]any{"user": "bob", "pass": plantPassword}}}
	return m
}

// secretsEnv is a server with every plane, logging at debug level into a
// buffer.
type secretsEnv struct {
	*ingestEnv
	responses []scanned
}

var uuidPattern = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f-]{27}`)

// scanned is a text the scan reads, and where it comes from.
type scanned struct{ where, text string }

func setupSecrets(t *testing.T, policyYAML string) *secretsEnv {
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
	settings, err := decay.NewSettings(decay.DefaultConfig())
	require.NoError(t, err)
	rs, err := retrieve.NewSettings(retrieve.DefaultConfig())
	require.NoError(t, err)
	srv := httptest.NewServer(server.New(server.Config{
		DB: db.Pool, Writer: wr, Logger: logger, Policy: w.Policy,
		Ingest:   ingest.New(ingest.Config{DB: db.Pool, Policy: w.Policy, Staged: w.Notify}),
		Decay:    decay.New(db.Pool, wr, settings, decay.WithLogger(logger)),
		Retrieve: retrieve.New(db.Pool, rs, retrieve.WithLogger(logger)),
		Keys:     []server.Key{{Tenant: "acme", Name: "acme-test", Secret: acmeKey, Role: server.RoleCurator}},
	}))
	t.Cleanup(srv.Close)
	return &secretsEnv{ingestEnv: &ingestEnv{env: &env{t: t, url: srv.URL, db: db}, worker: w, logs: logs}}
}

// send makes a request and keeps its answer for the scan; it reports
// whether the status was the one wanted.
func (e *secretsEnv) send(want int, method, path string, body any, headers ...string) (response, bool) {
	e.t.Helper()
	res := e.do(method, path, acmeKey, body, headers...)
	// Named by the route, not the path: the path may hold what was planted.
	route, _, _ := strings.Cut(path, "?")
	route = uuidPattern.ReplaceAllString(route, "{id}")
	for _, p := range plants {
		route = strings.ReplaceAll(route, url.PathEscape(p.value), "{planted}")
	}
	e.responses = append(e.responses, scanned{"response to " + method + " " + route, string(res.body)})
	if res.status != want {
		e.t.Errorf("%s %s: status %d, want %d: %.300s", method, path, res.status, want, res.body)
		return res, false
	}
	return res, true
}

// scan fails the test for every planted value found in a table of the
// test's schema, in the log, or in a response.
func (e *secretsEnv) scan() {
	e.t.Helper()
	ctx := context.Background()
	var hay []scanned
	rows, err := e.db.Pool.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY 1`, e.db.Name)
	require.NoError(e.t, err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(e.t, err)
	require.NotEmpty(e.t, tables)
	for _, table := range tables {
		rows, err := e.db.Pool.Query(ctx, "SELECT t::text FROM "+pgx.Identifier{e.db.Name, table}.Sanitize()+" t")
		require.NoError(e.t, err)
		texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(e.t, err)
		for _, s := range texts {
			hay = append(hay, scanned{"table " + table, s})
		}
	}
	hay = append(hay, scanned{"log", e.logs.String()})
	hay = append(hay, e.responses...)
	seen := map[string]bool{}
	for _, h := range hay {
		lower := strings.ToLower(h.text)
		for _, p := range plants {
			for _, n := range p.needles {
				i := strings.Index(lower, strings.ToLower(n))
				if i < 0 {
					continue
				}
				if key := h.where + "\x00" + p.name; !seen[key] {
					seen[key] = true
					e.t.Errorf("%s holds the planted %s: …%s…", h.where, p.name, h.text[max(0, i-80):min(len(h.text), i+len(n)+20)])
				}
			}
		}
	}
}

// events is one event of each kind with p in every field: short fields
// carry one value, long ones all of them.
func events(p plant, via string) []map[string]any {
	common := func(kind string) map[string]any {
		return map[string]any{
			"kind": kind, "agent_id": p.text + " agent", "thread_id": p.text + " " + via,
			"tags": []any{p.text, via}, "scope": p.text, "environment": scalars(via),
			"idempotency_key": p.text + " " + kind + " " + via,
		}
	}
	with := func(kind, field string, v any) map[string]any {
		m := common(kind)
		m[field] = v
		return m
	}
	text := allText() + " " + via
	return []map[string]any{
		with("user_input", "text", text),
		with("observation", "text", text),
		with("tool_call", "tool", map[string]any{"name": p.text, "call_id": p.text, "arguments": object(via), "result": object(via)}),
		with("tool_output", "tool", map[string]any{"name": p.text, "result": text}),
		with("error", "error", map[string]any{"message": text, "code": p.text, "tool": p.text}),
		with("fact", "fact", map[string]any{"subject": p.text, "predicate": "uses " + via, "object": object(via),
			"conditions": scalars(via), "evidence": []any{map[string]any{"kind": "event", "ref": p.text, "hash": p.text}}}),
		with("fact", "fact", map[string]any{"subject": p.text + " too", "predicate": "says " + via, "object": text}),
		with("outcome", "outcome", map[string]any{"status": "success", "summary": text}),
	}
}

// invalid are events refused with 422 whose problems could echo p: an
// unknown property named by it, and it where a time belongs.
func invalid(p plant, via string) []map[string]any {
	var out []map[string]any
	if p.asKey {
		out = append(out, map[string]any{"kind": "observation", "agent_id": "a", "thread_id": via, "text": "x", p.value: "unknown"})
		out = append(out, map[string]any{"kind": "tool_call", "agent_id": "a", "thread_id": via, "tool": map[string]any{"name": "x", p.value: 1}})
	}
	out = append(out, map[string]any{"kind": "observation", "agent_id": "a", "thread_id": via, "text": "x", "time": p.text})
	return out
}

func semantic(p plant, predicate string, conds map[string]any) map[string]any {
	validity := map[string]any{"mode": "global"}
	if conds != nil {
		validity = map[string]any{"mode": "conditional", "conditions": conds}
	}
	return map[string]any{
		"type": "semantic", "scope": p.text, "tags": []any{p.text, allText()}, "agent_id": p.text, "thread_id": p.text,
		"provenance": map[string]any{"sources": []any{map[string]any{"kind": "human", "ref": p.text, "hash": p.text}}, "created_by": p.text},
		"payload": map[string]any{"kind": "semantic", "subject": p.text, "predicate": predicate, "object": object(predicate),
			"validity": validity, "note": allText()},
	}
}

// TestNoPlantedSecretSurvives plants each kind of secret and personal
// datum in every field of every write endpoint, and as the name of an
// unknown property, lets the policy plane classify the events, then finds
// none of them in any table, in the log or in any response (SR-1).
func TestNoPlantedSecretSurvives(t *testing.T) {
	t.Parallel()
	e := setupSecrets(t, "")
	now := time.Now().UTC().Format(time.RFC3339Nano)

	for i, p := range plants {
		via := fmt.Sprintf("plant-%d", i)
		actor := []string{"X-Engram-Actor", strings.ReplaceAll(p.text, "\n", " ")}
		evidence := []any{map[string]any{"kind": "human", "ref": p.text, "hash": p.text}}

		// Events, one at a time and as a stream, and what the policy would do.
		e.send(http.StatusAccepted, "POST", "/v1/events", events(p, via+"-post"))
		var lines []string
		for _, ev := range append(events(p, via+"-stream"), invalid(p, via+"-stream")...) {
			b, err := json.Marshal(ev)
			require.NoError(t, err)
			lines = append(lines, string(b))
		}
		e.send(http.StatusOK, "POST", "/v1/events:stream", strings.Join(lines, "\n")+"\n")
		for _, ev := range invalid(p, via+"-post") {
			e.send(http.StatusUnprocessableEntity, "POST", "/v1/events", ev)
			e.send(http.StatusUnprocessableEntity, "POST", "/v1/policy:explain", ev)
		}
		e.send(http.StatusOK, "POST", "/v1/policy:explain", events(p, via+"-explain")[5])

		// Records: create, then every revision that takes content.
		var created memory.Record
		if res, ok := e.send(http.StatusCreated, "POST", "/v1/records?rationale="+url.QueryEscape(p.text), semantic(p, "create", nil), actor...); ok {
			res.decode(t, &created)
		}
		var next memory.Record
		if created.ID != [16]byte{} {
			res, ok := e.send(http.StatusOK, "POST", "/v1/records/"+created.ID.String()+":supersede", map[string]any{
				"version": 1, "rationale": allText(), "evidence": evidence, "record": semantic(p, "create", nil)}, actor...)
			if ok {
				var out struct{ Record memory.Record }
				res.decode(t, &out)
				next = out.Record
			}
		}
		if next.ID != [16]byte{} {
			a, b := scalars("linux"), scalars("darwin")
			e.send(http.StatusOK, "POST", "/v1/records/"+next.ID.String()+":fork", map[string]any{
				"version": 1, "rationale": allText(), "evidence": evidence,
				"variants": []any{semantic(p, "create", a), semantic(p, "create", b)}}, actor...)
		}
		var contested memory.Record
		if res, ok := e.send(http.StatusCreated, "POST", "/v1/records", semantic(p, "contest", nil)); ok {
			res.decode(t, &contested)
			e.send(http.StatusOK, "POST", "/v1/records/"+contested.ID.String()+":contest", map[string]any{
				"rationale": allText(), "evidence": evidence, "record": semantic(p, "contest", map[string]any{"os": "other"})}, actor...)
		}
		var merge []string
		for _, pred := range []string{"merge-a", "merge-b"} {
			if res, ok := e.send(http.StatusCreated, "POST", "/v1/records", semantic(p, pred, nil)); ok {
				var rec memory.Record
				res.decode(t, &rec)
				merge = append(merge, rec.ID.String())
			}
		}
		if len(merge) == 2 {
			res, ok := e.send(http.StatusCreated, "POST", "/v1/records:merge", map[string]any{
				"record_ids": merge, "rationale": allText(), "evidence": evidence, "record": semantic(p, "merged", nil)}, actor...)
			if ok {
				var merged memory.Record
				res.decode(t, &merged)
				e.send(http.StatusOK, "POST", "/v1/records/"+merged.ID.String()+":rollback", map[string]any{
					"rationale": allText(), "evidence": evidence}, actor...)
			}
		}
		// A quarantine's rationale is also its flags' reason; the second
		// quarantine's flags stay for the scan.
		if res, ok := e.send(http.StatusCreated, "POST", "/v1/records", semantic(p, "suspect", nil)); ok {
			var suspect memory.Record
			res.decode(t, &suspect)
			derived := semantic(p, "derived", nil)
			derived["relations"] = []any{map[string]any{"predicate": "derived_from", "target_id": suspect.ID}}
			e.send(http.StatusCreated, "POST", "/v1/records", derived)
			for _, op := range []string{"quarantine", "release", "quarantine"} {
				e.send(http.StatusOK, "POST", "/v1/records/"+suspect.ID.String()+":"+op, map[string]any{
					"rationale": allText(), "evidence": evidence}, actor...)
			}
		}
		working := map[string]any{"type": "working", "tags": []any{p.text}, "payload": map[string]any{
			"kind": "working", "thread_id": p.text, "state": "executing", "next_actions": []any{allText()},
			"open_questions": []any{p.text}, "context_summary": allText(), "task_id": p.text, "extra": object(via)}}
		if res, ok := e.send(http.StatusCreated, "POST", "/v1/records", working); ok {
			var rec memory.Record
			res.decode(t, &rec)
			patch := working["payload"].(map[string]any)
			patch["state"] = "blocked"
			e.send(http.StatusOK, "PATCH", "/v1/records/"+rec.ID.String(), map[string]any{
				"version": 1, "payload": patch, "tags": []any{p.text, allText()}, "rationale": allText()}, actor...)
		}
		entry := map[string]any{"t": now, "event_kind": p.text, "ref": p.text, "summary": allText()}
		episode := map[string]any{"type": "episodic", "scope": p.text, "payload": map[string]any{
			"kind": "episodic", "timeline": []any{entry}, "environment": object(via), "artifacts": []any{p.text}}}
		if res, ok := e.send(http.StatusCreated, "POST", "/v1/records", episode); ok {
			var rec memory.Record
			res.decode(t, &rec)
			e.send(http.StatusOK, "POST", "/v1/records/"+rec.ID.String()+":append", map[string]any{
				"timeline": []any{entry}, "tool_graph": []any{object(via)}, "artifacts": []any{p.text},
				"outcome": "success", "rationale": allText(), "evidence": evidence}, actor...)
		}
		if p.asKey {
			// Problems that quote the path or a parameter.
			e.send(http.StatusNotFound, "POST", "/v1/records/"+url.PathEscape(p.value)+":supersede", map[string]any{"version": 1})
			e.send(http.StatusBadRequest, "GET", "/v1/records?type="+url.QueryEscape(p.value), nil)
			bad := semantic(p, "unknown", nil)
			bad[p.value] = "unknown"
			e.send(http.StatusUnprocessableEntity, "POST", "/v1/records", bad)
			if created.ID != [16]byte{} {
				e.send(http.StatusUnprocessableEntity, "PATCH", "/v1/records/"+created.ID.String(), map[string]any{"version": 1, "payload": map[string]any{}, p.value: 1})
				e.send(http.StatusUnprocessableEntity, "POST", "/v1/records/"+created.ID.String()+":supersede", map[string]any{"version": 2, "record": bad})
			}
		}

		// Retrieval, and feedback on what it returned.
		task := map[string]any{"text": allText(), "intent": p.text, "signals": []any{allText()}, "tools": []any{p.text},
			"conditions": scalars(via), "thread_id": p.text, "agent_id": p.text, "scope": p.text}
		var retrieved retrieve.Result
		if res, ok := e.send(http.StatusOK, "POST", "/v1/retrieve", map[string]any{"task": task, "trust": map[string]any{"clearance": "hyper", "authenticated": true}}); ok {
			res.decode(t, &retrieved)
			e.send(http.StatusOK, "POST", "/v1/feedback", map[string]any{"retrieval_id": retrieved.RetrievalID,
				"outcome": "used_success", "rationale": allText(), "evidence": evidence}, actor...)
		}
		if contested.ID != [16]byte{} {
			e.send(http.StatusOK, "POST", "/v1/feedback", map[string]any{"key": p.text, "record_ids": []string{contested.ID.String()},
				"outcome": "used_failure", "rationale": allText(), "evidence": evidence}, actor...)
		}
		if p.asKey {
			e.send(http.StatusUnprocessableEntity, "POST", "/v1/retrieve", map[string]any{"task": task, p.value: 1})
			e.send(http.StatusUnprocessableEntity, "POST", "/v1/feedback", map[string]any{"outcome": "used_success", p.value: 1})
		}
	}

	// Classify every staged event, then read back what was stored.
	e.drain()
	e.send(http.StatusOK, "GET", "/v1/records?status=all&limit=1000", nil)
	e.send(http.StatusOK, "GET", "/v1/candidates?status=done&limit=1000", nil)
	e.send(http.StatusOK, "POST", "/v1/retrieve", map[string]any{"task": map[string]any{"text": "notes"}, "trust": map[string]any{"clearance": "hyper", "authenticated": true}})
	require.Positive(t, e.count("SELECT count(*) FROM records WHERE type = 'episodic' AND provenance->>'created_by' LIKE 'policy%'"),
		"the policy plane wrote episodes")
	require.Positive(t, e.count("SELECT count(*) FROM record_flags WHERE reason <> ''"), "quarantines left flags with a reason")
	e.send(http.StatusOK, "GET", "/v1/records?flag=derived_from_quarantined&status=all&limit=1000", nil)
	e.scan()
}

// With on_secret: reject, every records-API write and feedback that holds a
// secret is refused with a secret-leakage problem naming its labels, and
// nothing is stored; retrieval, a read, is redacted instead.
func TestRecordWritesRejectSecretsWhenPolicySaysSo(t *testing.T) {
	t.Parallel()
	e := setupSecrets(t, "secrets: {on_secret: reject}")
	clean := func(predicate string) map[string]any {
		return map[string]any{"type": "semantic", "payload": map[string]any{
			"kind": "semantic", "subject": "db", "predicate": predicate, "object": "postgres", "validity": map[string]any{"mode": "global"}}}
	}
	ids := map[string]string{}
	for _, name := range []string{"a", "b", "c"} {
		res := e.do("POST", "/v1/records", acmeKey, clean(name))
		require.Equal(t, http.StatusCreated, res.status, string(res.body))
		var rec memory.Record
		res.decode(t, &rec)
		ids[name] = rec.ID.String()
	}
	res := e.do("POST", "/v1/records", acmeKey, map[string]any{"type": "working", "payload": map[string]any{"kind": "working", "thread_id": "t1", "state": "planning"}})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	var working memory.Record
	res.decode(t, &working)
	res = e.do("POST", "/v1/records", acmeKey, map[string]any{"type": "episodic", "payload": map[string]any{"kind": "episodic", "timeline": []any{}}})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	var episode memory.Record
	res.decode(t, &episode)

	withObject := func(v any) map[string]any {
		r := clean("d")
		r["payload"].(map[string]any)["object"] = v
		return r
	}
	now := time.Now().UTC().Format(time.RFC3339)
	for _, c := range []struct {
		name, method, path string
		body               any
		headers            []string
		label              string
	}{
		{"payload key", "POST", "/v1/records", withObject(map[string]any{"DB_PASSWORD": plantPassword}), nil, "password_assignment"},
		{"condition", "POST", "/v1/records", map[string]any{"type": "semantic", "payload": map[string]any{"kind": "semantic", "subject": "db",
			"predicate": "e", "object": "x", "validity": map[string]any{"mode": "conditional", "conditions": map[string]any{"api_key": "k-12345"}}}}, nil, "password_assignment"},
		{"tags", "POST", "/v1/records", map[string]any{"type": "semantic", "tags": []any{plantGitHub}, "payload": clean("f")["payload"]}, nil, "github_token"},
		{"rationale parameter", "POST", "/v1/records?rationale=" + url.QueryEscape(plantEmail), clean("g"), nil, "email"},
		{"actor header", "POST", "/v1/records", clean("h"), []string{"X-Engram-Actor", plantAWSKeyID}, "aws_access_key"},
		{"patch", "PATCH", "/v1/records/" + working.ID.String(), map[string]any{"version": 1,
			"payload": map[string]any{"kind": "working", "thread_id": "t1", "state": "executing", "env": map[string]any{"AWS_SECRET_ACCESS_KEY": plantAWSSecret}}}, nil, "aws_secret_key"},
		{"supersede", "POST", "/v1/records/" + ids["a"] + ":supersede", map[string]any{"version": 1, "record": withObject(plantJWT)}, nil, "jwt"},
		{"fork", "POST", "/v1/records/" + ids["a"] + ":fork", map[string]any{"version": 1, "rationale": plantCard, "variants": []any{clean("a"), clean("a")}}, nil, "card_number"},
		{"contest", "POST", "/v1/records/" + ids["b"] + ":contest", map[string]any{"record": withObject(plantPEM)}, nil, "private_key"},
		{"append", "POST", "/v1/records/" + episode.ID.String() + ":append", map[string]any{
			"timeline": []any{map[string]any{"t": now, "event_kind": "observation", "ref": "evt://1", "summary": "mail " + plantEmail}}}, nil, "email"},
		{"merge", "POST", "/v1/records:merge", map[string]any{"record_ids": []string{ids["b"], ids["c"]}, "record": withObject(map[string]any{"password": "x9y8z7"})}, nil, "password_assignment"},
		{"evidence", "POST", "/v1/records/" + ids["c"] + ":retract", map[string]any{"version": 1, "evidence": []any{map[string]any{"kind": "human", "ref": plantEmail}}}, nil, "email"},
		{"delete", "DELETE", "/v1/records/" + ids["c"] + "?rationale=" + url.QueryEscape("token "+plantGitHub), nil, nil, "github_token"},
		{"feedback", "POST", "/v1/feedback", map[string]any{"record_ids": []string{ids["c"]}, "outcome": "used_success", "rationale": "DB_PASSWORD=" + plantPassword}, nil, "password_assignment"},
	} {
		before := e.count("SELECT count(*) FROM audit_log") + e.count("SELECT count(*) FROM record_versions") + e.count("SELECT count(*) FROM feedback")
		res := e.do(c.method, c.path, acmeKey, c.body, c.headers...)
		require.Equal(t, http.StatusUnprocessableEntity, res.status, "%s: %s", c.name, res.body)
		p := res.problem(t)
		require.Equal(t, "urn:engram:problem:secret-leakage", p.Type, c.name)
		require.Contains(t, p.Detail, c.label, c.name)
		for _, pl := range plants {
			for _, n := range pl.needles {
				require.NotContains(t, string(res.body), n, c.name)
			}
		}
		after := e.count("SELECT count(*) FROM audit_log") + e.count("SELECT count(*) FROM record_versions") + e.count("SELECT count(*) FROM feedback")
		require.Equal(t, before, after, "%s: nothing is stored", c.name)
	}

	res = e.do("POST", "/v1/retrieve", acmeKey, map[string]any{"task": map[string]any{"text": "what does " + plantEmail + " use", "agent_id": plantEmail}})
	require.Equal(t, http.StatusOK, res.status, "retrieval is a read: redacted, not refused: %s", res.body)
	require.Zero(t, e.count("SELECT count(*) FROM retrievals WHERE agent_id LIKE '%example.org%'"))
	require.Equal(t, 1, e.count("SELECT count(*) FROM retrievals WHERE agent_id = '[REDACTED:email]'"))
}

// With the default policy a record written with a secret is stored
// redacted, its sensitivity raised as an event's would be.
func TestRecordWritesRaiseSensitivity(t *testing.T) {
	t.Parallel()
	e := setupSecrets(t, "")
	res := e.do("POST", "/v1/records", acmeKey, map[string]any{"type": "semantic", "sensitivity": "low", "payload": map[string]any{
		"kind": "semantic", "subject": "db", "predicate": "login", "object": map[string]any{"user": "app", "password": plantPassword},
		"validity": map[string]any{"mode": "global"}}})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	var rec memory.Record
	res.decode(t, &rec)
	require.Equal(t, memory.High, rec.Sensitivity)
	require.JSONEq(t, `{"user": "app", "password": "[REDACTED:password_assignment]"}`, string(payloadObject(t, rec.Payload)))
}

func payloadObject(t *testing.T, payload json.RawMessage) json.RawMessage {
	t.Helper()
	var p struct {
		Object json.RawMessage `json:"object"`
	}
	require.NoError(t, json.Unmarshal(payload, &p))
	return p.Object
}
