package server_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/embedding"
	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/jobs/jobstest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

// The planted subject.
const (
	janeEmail = "jane.roe@example.com"
	janeName  = "Jane Roe"
	janeID    = "u-1"
	janePhone = "5551234567"
)

// setupErasure is a server with ingestion and retrieval over a fresh
// schema, keys of two tenants; the server is closed (its erasures waited
// for) at cleanup.
func setupErasure(t *testing.T) *ingestEnv {
	t.Helper()
	db := pgtest.NewSchema(t)
	wr := revise.New(db.Pool, revise.Config{})
	for _, tenant := range []string{"acme", "other"} {
		require.NoError(t, store.EnsureTenant(context.Background(), db.Pool, tenant))
	}
	w := ingest.NewWorker(ingest.WorkerConfig{DB: db.Pool, Writer: wr})
	rs, err := retrieve.NewSettings(retrieve.DefaultConfig())
	require.NoError(t, err)
	srv := server.New(server.Config{
		DB: db.Pool, Writer: wr, Logger: slog.New(slog.DiscardHandler),
		Ingest:   ingest.New(ingest.Config{DB: db.Pool, Policy: w.Policy, Staged: w.Notify}),
		Retrieve: retrieve.New(db.Pool, rs),
		Keys:     testKeys,
	})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		require.NoError(t, srv.Close(context.Background()))
	})
	return &ingestEnv{env: &env{t: t, url: hs.URL, db: db}, worker: w}
}

// stream sends events over POST /v1/events:stream and waits for the
// policy plane to classify them.
func (e *ingestEnv) streamEvents(events ...map[string]any) {
	e.t.Helper()
	var b strings.Builder
	for _, ev := range events {
		j, err := json.Marshal(ev)
		require.NoError(e.t, err)
		b.Write(j)
		b.WriteByte('\n')
	}
	res := e.do("POST", "/v1/events:stream", acmeKey, b.String(), "Content-Type", "application/x-ndjson")
	require.Equal(e.t, http.StatusOK, res.status, string(res.body))
	require.Equal(e.t, len(events), strings.Count(string(res.body), `"id"`), string(res.body))
	e.drain()
}

// episodeOf is the episode of a thread's latest generation.
func (e *ingestEnv) episodeOf(thread string) uuid.UUID {
	e.t.Helper()
	res := e.do("GET", "/v1/threads/"+thread, acmeKey, nil)
	require.Equal(e.t, http.StatusOK, res.status, string(res.body))
	var th struct {
		EpisodeID uuid.UUID `json:"episode_id"`
	}
	res.decode(e.t, &th)
	require.NotEqual(e.t, uuid.Nil, th.EpisodeID)
	return th.EpisodeID
}

func (e *ingestEnv) postWant(key, path string, body any, want int) json.RawMessage {
	e.t.Helper()
	res := e.do("POST", path, key, body)
	require.Equal(e.t, want, res.status, string(res.body))
	return res.body
}

func recordID(t *testing.T, body json.RawMessage) uuid.UUID {
	t.Helper()
	var r memory.Record
	require.NoError(t, json.Unmarshal(body, &r), string(body))
	return r.ID
}

func erasureFact(subject, predicate, object string, extra map[string]any) map[string]any {
	b := map[string]any{"type": "semantic", "confidence": 0.9, "payload": map[string]any{
		"kind": "semantic", "subject": subject, "predicate": predicate, "object": object,
		"validity": map[string]any{"mode": "global"}}}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

// traces scans every column of every table of the test schema, cast to
// text (binary as escaped text), for the subject's identifiers: rows of
// tables with a tenant_id column only when they are acme's, every row of
// the others. It is the test's own scan, independent of the erasure's.
func traces(t *testing.T, db *pgtest.Schema) map[string]int {
	t.Helper()
	ctx := context.Background()
	rows, err := db.Pool.Query(ctx, `
		SELECT c.table_name, c.column_name, c.data_type,
			EXISTS (SELECT 1 FROM information_schema.columns x
				WHERE x.table_schema = c.table_schema AND x.table_name = c.table_name AND x.column_name = 'tenant_id')
		FROM information_schema.columns c
		JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
		WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
		ORDER BY 1, 2`)
	require.NoError(t, err)
	type col struct {
		table, column, typ string
		tenanted           bool
	}
	cols, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (col, error) {
		var c col
		return c, r.Scan(&c.table, &c.column, &c.typ, &c.tenanted)
	})
	require.NoError(t, err)
	require.Greater(t, len(cols), 100, "the walk found the schema's columns")
	found := map[string]int{}
	for _, c := range cols {
		value := pgx.Identifier{c.column}.Sanitize() + "::text"
		if c.typ == "bytea" {
			value = "encode(" + pgx.Identifier{c.column}.Sanitize() + ", 'escape')"
		}
		where := "true"
		if c.tenanted {
			where = "tenant_id = 'acme'"
		}
		var n int
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{c.table}.Sanitize()+` WHERE `+where+` AND (
			lower(`+value+`) LIKE ANY($1) OR regexp_replace(`+value+`, '[^0-9]', '', 'g') LIKE $2)`,
			[]string{"%" + janeEmail + "%", "%jane roe%", "%u-1%"}, "%"+janePhone+"%").Scan(&n))
		if n > 0 {
			found[c.table+"."+c.column] = n
		}
	}
	return found
}

// An erasure over HTTP removes every trace of a planted subject — staged
// events, timelines, facts, tags, versions, audit, vectors, artifacts and
// the retrieval log — from the tenant, while unrelated records remain, a
// record derived from several episodes is rebuilt without the erased one,
// and another tenant's record naming the same subject is untouched.
func TestErasureRemovesEveryTrace(t *testing.T) {
	t.Parallel()
	e := setupErasure(t)
	ctx := context.Background()

	// Streamed events naming the subject in user input and tool output,
	// and two unrelated threads.
	e.streamEvents(
		event("user_input", "t-jane", map[string]any{"text": "Hi, I am " + janeName + ", write to " + janeEmail + " or call +1 (555) 123-4567"}),
		event("tool_call", "t-jane", map[string]any{"tool": map[string]any{"name": "crm.lookup", "arguments": map[string]any{"user": janeID}}}),
		event("tool_output", "t-jane", map[string]any{"tool": map[string]any{"name": "crm.lookup", "result": map[string]any{"customer": "JANE  ROE", "plan": "pro"}}}),
		event("outcome", "t-jane", map[string]any{"outcome": map[string]any{"status": "success"}}),
		event("user_input", "t-ops-1", map[string]any{"text": "deploy the billing service"}),
		event("tool_output", "t-ops-1", map[string]any{"tool": map[string]any{"name": "make", "result": "deployed"}}),
		event("outcome", "t-ops-1", map[string]any{"outcome": map[string]any{"status": "success"}}),
		event("user_input", "t-ops-2", map[string]any{"text": "deploy the search service"}),
		event("outcome", "t-ops-2", map[string]any{"outcome": map[string]any{"status": "success"}}),
	)
	jane, ops1, ops2 := e.episodeOf("t-jane"), e.episodeOf("t-ops-1"), e.episodeOf("t-ops-2")

	// A fact naming them, a tagged record, a fact derived from their
	// episode alone, a fact derived from three episodes (one theirs), an
	// artifact naming them and the episode that holds it, and an
	// unrelated fact.
	named := recordID(t, e.postWant(acmeKey, "/v1/records", erasureFact(janeName, "prefers_language", "fr", nil), http.StatusCreated))
	tagged := recordID(t, e.postWant(acmeKey, "/v1/records", erasureFact("billing", "plan", "pro", map[string]any{"tags": []string{"user:" + janeID}}), http.StatusCreated))
	onlyJane := recordID(t, e.postWant(acmeKey, "/v1/records", erasureFact("crm", "lookup_tool", "crm.lookup", map[string]any{
		"relations":  []map[string]any{{"predicate": "derived_from", "target_id": jane}},
		"provenance": map[string]any{"sources": []map[string]any{{"kind": "record", "ref": "record://" + jane.String()}}},
	}), http.StatusCreated))
	derived := recordID(t, e.postWant(acmeKey, "/v1/records", erasureFact("deploy", "succeeds_with", "make deploy", map[string]any{
		"relations": []map[string]any{{"predicate": "derived_from", "target_id": jane}, {"predicate": "derived_from", "target_id": ops1},
			{"predicate": "derived_from", "target_id": ops2}},
		"provenance": map[string]any{"sources": []map[string]any{{"kind": "record", "ref": "record://" + jane.String()},
			{"kind": "record", "ref": "record://" + ops1.String()}, {"kind": "record", "ref": "record://" + ops2.String()}}},
	}), http.StatusCreated))
	// (An artifact is redacted as it is stored, so their email would not
	// be kept: it names them.)
	res := e.do("POST", "/v1/artifacts", acmeKey, "signed form of "+janeName+", customer "+janeID, "Content-Type", "text/plain")
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	var art struct {
		SHA256 string `json:"sha256"`
	}
	res.decode(t, &art)
	withArtifact := recordID(t, e.postWant(acmeKey, "/v1/records", map[string]any{"type": "episodic", "confidence": 1, "payload": map[string]any{
		"kind": "episodic", "timeline": []map[string]any{{"t": "2026-01-02T03:04:05Z", "event_kind": "observation", "ref": "evt://upload", "summary": "the signed form arrived"}},
		"artifacts": []string{art.SHA256}}}, http.StatusCreated))
	unrelated := recordID(t, e.postWant(acmeKey, "/v1/records", erasureFact("search", "index", "tantivy", nil), http.StatusCreated))

	// A retrieval whose task names them, from their thread, and one that
	// does not; vectors for every record.
	e.postWant(acmeKey, "/v1/retrieve", map[string]any{"task": map[string]any{"text": "what does " + janeName + " prefer", "thread_id": "session-" + janeID}}, http.StatusOK)
	body := e.postWant(acmeKey, "/v1/retrieve", map[string]any{"task": map[string]any{"text": "deploy service crm"}}, http.StatusOK)
	var kept struct {
		RetrievalID uuid.UUID `json:"retrieval_id"`
	}
	require.NoError(t, json.Unmarshal(body, &kept))
	require.NoError(t, embedding.NewBackfiller(e.db.Pool, embedding.NewLexical(), 50, nil).Backfill(ctx, &jobstest.Run{}))

	// Another tenant's record naming the same subject.
	theirs := recordID(t, e.postWant(otherKey, "/v1/records", erasureFact(janeName, "user_id", janeID, nil), http.StatusCreated))

	// The test's scan finds the subject everywhere before the erasure.
	before := traces(t, e.db)
	for _, where := range []string{"candidates.event", "records.payload", "records.tags", "episode_entries.entry",
		"record_versions.snapshot", "artifacts.content", "retrievals.thread_id"} {
		require.Contains(t, before, where, "planted: %v", before)
	}
	require.Positive(t, e.count(`SELECT count(*) FROM record_vectors WHERE record_id = '`+jane.String()+`'`))
	// So does the erasure's verification scan, in both tenants.
	subject, err := revise.NewSubject(api.ErasureRequest{Emails: []string{janeEmail}, Names: []string{janeName}, UserIDs: []string{janeID}})
	require.NoError(t, err)
	verifier := revise.New(e.db.Pool, revise.Config{})
	v, err := verifier.VerifyErasure(ctx, "acme", subject)
	require.NoError(t, err)
	require.False(t, v.Verified)
	var remaining []string
	for _, r := range v.Remaining {
		remaining = append(remaining, r.Table+"."+r.Column)
	}
	for _, where := range []string{"candidates.event", "records.payload", "records.tags", "episode_entries.entry",
		"record_versions.snapshot", "artifacts.content", "retrievals.thread_id", "records.subject"} {
		require.Contains(t, remaining, where)
	}

	res = e.do("POST", "/v1/erasures", acmeKey, api.ErasureRequest{
		Emails: []string{"Jane.Roe@Example.com"}, Names: []string{"jane   roe"}, UserIDs: []string{janeID},
		PhoneNumbers: []string{"+1 (555) 123-4567"}})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	var started api.Erasure
	res.decode(t, &started)
	require.Equal(t, "/v1/erasures/"+started.ID.String(), res.header.Get("Location"))
	require.Equal(t, api.ErasureRunning, started.Status)
	require.Len(t, started.SubjectSHA256, 64)
	require.NotContains(t, string(res.body), "5551234567")
	require.NotContains(t, strings.ToLower(string(res.body)), "jane")

	cert := e.waitErasure(acmeKey, started.ID)
	require.Equal(t, api.ErasureCompleted, cert.Status, cert.Error)
	require.True(t, cert.Verified, "remaining: %+v", cert.Verification)
	require.NotNil(t, cert.Verification)
	require.Greater(t, cert.Verification.Tables, 15)
	require.Equal(t, []uuid.UUID{derived}, cert.Rebuilt)
	c := cert.Counts
	require.Equal(t, 2, c.Episodic, "their thread's episode and the one holding the artifact")
	require.Equal(t, 3, c.Semantic, "the named fact, the tagged one and the one derived from their episode alone")
	require.Zero(t, c.Working, "their thread's working memory holds nothing of theirs")
	require.Equal(t, 4, c.StagedEvents)
	require.Equal(t, 1, c.Artifacts)
	require.Positive(t, c.Vectors)
	require.Positive(t, c.TimelineEntries)
	require.Positive(t, c.Versions)
	require.Positive(t, c.AuditEntries)
	require.Equal(t, 2, c.RetrievalLogEntries, "the retrieval that named them deleted, the other one scrubbed")
	for _, b := range [][]byte{res.body} {
		require.NotContains(t, string(b), janeEmail)
	}

	// Nothing of the subject is left in any table of acme's, nor in the
	// vector table or the retrieval log.
	require.Empty(t, traces(t, e.db))
	for _, id := range []uuid.UUID{jane, named, tagged, onlyJane, withArtifact} {
		require.Equal(t, http.StatusNotFound, e.do("GET", "/v1/records/"+id.String(), acmeKey, nil).status, id)
		require.Zero(t, e.count(`SELECT count(*) FROM record_vectors WHERE record_id = '`+id.String()+`'`))
		require.Zero(t, e.count(`SELECT count(*) FROM retrievals WHERE '`+id.String()+`' = ANY(record_ids)`))
	}
	require.Zero(t, e.count(`SELECT count(*) FROM retrievals WHERE thread_id LIKE '%u-1%'`))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM retrievals WHERE tenant_id = 'acme' AND id = '`+kept.RetrievalID.String()+`'`))
	require.Equal(t, http.StatusNotFound, e.do("GET", "/v1/artifacts/"+art.SHA256, acmeKey, nil).status)

	// Unrelated records read back; the derived one is rebuilt without the
	// erased episode, its audit saying so.
	for _, id := range []uuid.UUID{ops1, ops2, unrelated} {
		require.Equal(t, http.StatusOK, e.do("GET", "/v1/records/"+id.String(), acmeKey, nil).status, id)
	}
	res = e.do("GET", "/v1/records/"+derived.String(), acmeKey, nil)
	require.Equal(t, http.StatusOK, res.status)
	var rebuilt memory.Record
	res.decode(t, &rebuilt)
	require.Equal(t, 2, rebuilt.Version)
	require.Equal(t, []memory.Source{{Kind: "record", Ref: "record://" + ops1.String()}, {Kind: "record", Ref: "record://" + ops2.String()}},
		rebuilt.Provenance.Sources)
	res = e.do("GET", "/v1/records/"+derived.String()+"/relations", acmeKey, nil)
	require.Equal(t, http.StatusOK, res.status)
	require.NotContains(t, string(res.body), jane.String())
	require.Contains(t, string(res.body), ops1.String())
	res = e.do("GET", "/v1/records/"+derived.String()+"/audit", acmeKey, nil)
	require.Contains(t, string(res.body), `"rebuild"`)

	// The erasure's own audit entry names the request and the subject's
	// hash, never the subject.
	var rationale string
	require.NoError(t, e.db.Pool.QueryRow(ctx, `SELECT rationale FROM audit_log WHERE tenant_id = 'acme' AND action = 'erase' AND record_id IS NULL`).Scan(&rationale))
	require.Contains(t, rationale, started.ID.String())
	require.Contains(t, rationale, cert.SubjectSHA256)

	// The other tenant's record is untouched, and its erasures are its own.
	require.Equal(t, http.StatusOK, e.do("GET", "/v1/records/"+theirs.String(), otherKey, nil).status)
	v, err = verifier.VerifyErasure(ctx, "other", subject)
	require.NoError(t, err)
	require.False(t, v.Verified, "the other tenant still holds its record")
	require.Equal(t, http.StatusNotFound, e.do("GET", "/v1/erasures/"+started.ID.String(), otherKey, nil).status)

	// The same request again finds nothing left and is verified.
	res = e.do("POST", "/v1/erasures", acmeKey, api.ErasureRequest{Emails: []string{janeEmail}, Names: []string{janeName},
		UserIDs: []string{janeID}, PhoneNumbers: []string{"+15551234567"}})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	var again api.Erasure
	res.decode(t, &again)
	require.Equal(t, cert.SubjectSHA256, again.SubjectSHA256, "the hash is of the normalised subject")
	again = e.waitErasure(acmeKey, again.ID)
	require.True(t, again.Verified)
	require.Equal(t, api.ErasureCounts{}, again.Counts)
}

// waitErasure polls an erasure until it has ended, within a deadline.
func (e *ingestEnv) waitErasure(key string, id uuid.UUID) api.Erasure {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		res := e.do("GET", "/v1/erasures/"+id.String(), key, nil)
		require.Equal(e.t, http.StatusOK, res.status, string(res.body))
		var got api.Erasure
		res.decode(e.t, &got)
		if got.Status != api.ErasureRunning {
			return got
		}
		require.True(e.t, time.Now().Before(deadline), "erasure still %s at %s", got.Status, got.Phase)
		time.Sleep(20 * time.Millisecond)
	}
}

// A request that names no one, or names them with malformed identifiers,
// is refused with field errors that do not quote the values, and starts
// nothing.
func TestErasureBadInput(t *testing.T) {
	t.Parallel()
	e := setupErasure(t)
	for name, tc := range map[string]struct {
		body     string
		pointers []string
	}{
		"no identifiers":  {`{}`, []string{""}},
		"empty lists":     {`{"emails": [], "names": []}`, []string{""}},
		"malformed email": {`{"emails": ["jane.roe-at-example"]}`, []string{"/emails/0"}},
		"short user id":   {`{"user_ids": ["u1"], "names": ["Jane Roe"]}`, []string{"/user_ids/0"}},
		"phone":           {`{"phone_numbers": ["12-34", "call me 5551234567"]}`, []string{"/phone_numbers/0", "/phone_numbers/1"}},
		"name not a name": {`{"names": ["1234"]}`, []string{"/names/0"}},
		"several at once": {`{"emails": ["ok@example.com", "bad@"], "names": [" "]}`, []string{"/emails/1", "/names/0"}},
		"unknown field":   {`{"email": ["jane.roe@example.com"]}`, nil},
		"not a list":      {`{"emails": "jane.roe@example.com"}`, nil},
		"not even json":   {`{"emails": [`, nil},
	} {
		res := e.do("POST", "/v1/erasures", acmeKey, tc.body)
		require.Equal(t, http.StatusBadRequest, res.status, "%s: %s", name, res.body)
		p := res.problem(t)
		if tc.pointers != nil {
			var got []string
			for _, fe := range p.Errors {
				got = append(got, fe.Pointer)
			}
			require.Equal(t, tc.pointers, got, name)
		}
		for _, secret := range []string{"jane.roe-at-example", "5551234567", "bad@"} {
			require.NotContains(t, string(res.body), secret, name)
		}
	}
	require.Zero(t, e.count(`SELECT count(*) FROM erasures`))
	res := e.do("GET", "/v1/erasures/"+uuid.NewString(), acmeKey, nil)
	require.Equal(t, http.StatusNotFound, res.status)
	res = e.do("POST", "/v1/erasures", opsKey, `{"emails": ["jane.roe@example.com"]}`)
	require.Equal(t, http.StatusForbidden, res.status)
}
