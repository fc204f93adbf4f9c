package client_test

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/client"
	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/embedding"
	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

const (
	curatorKey  = "acme-curator-0123456789"
	executorKey = "acme-executor-0123456789"
)

// setup starts an engramd (the real server over a real, freshly migrated
// PostgreSQL schema) that ingests events, retrieves and takes feedback, and
// returns its URL.
func setup(t *testing.T) string {
	t.Helper()
	db := pgtest.NewSchema(t)
	settings, err := decay.NewSettings(decay.DefaultConfig())
	require.NoError(t, err)
	wr := revise.New(db.Pool, revise.Config{Defaults: settings.Defaults})
	require.NoError(t, store.EnsureTenant(t.Context(), db.Pool, "acme"))
	rs, err := retrieve.NewSettings(retrieve.DefaultConfig())
	require.NoError(t, err)
	w := ingest.NewWorker(ingest.WorkerConfig{DB: db.Pool, Writer: wr})
	srv := httptest.NewServer(server.New(server.Config{
		DB: db.Pool, Writer: wr, Logger: slog.New(slog.DiscardHandler),
		Ingest:   ingest.New(ingest.Config{DB: db.Pool, Policy: w.Policy, Staged: w.Notify}),
		Decay:    decay.New(db.Pool, wr, settings),
		Retrieve: retrieve.New(db.Pool, rs, retrieve.WithEmbedder(embedding.NewLexical())),
		Keys: []server.Key{
			{Tenant: "acme", Name: "curator", Secret: curatorKey, Role: server.RoleCurator},
			{Tenant: "acme", Name: "executor", Secret: executorKey, Role: server.RoleExecutor, Agent: "exec-1"},
		},
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func newClient(t *testing.T, url, key string) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{URL: url, Key: key})
	require.NoError(t, err)
	return c
}

func fact(subject, object string) map[string]any {
	return map[string]any{"type": "semantic", "confidence": 0.9, "payload": map[string]any{
		"kind": "semantic", "subject": subject, "predicate": "prefers_language", "object": object,
		"validity": map[string]any{"mode": "global"}}}
}

// Events streamed on one connection are acknowledged line by line: an
// accepted event with its id, a refused one with its problem, which does not
// stop the stream.
func TestStreamEvents(t *testing.T) {
	t.Parallel()
	c := newClient(t, setup(t), curatorKey)
	events := []any{
		map[string]any{"kind": "observation", "agent_id": "a", "thread_id": "t", "text": "the build failed"},
		map[string]any{"kind": "observation", "agent_id": "a", "thread_id": "t", "text": "x", "environment": map[string]any{"n": json.Number("1e-16384")}},
		map[string]any{"kind": "observation", "agent_id": "a", "thread_id": "t", "text": "cleared the cache; it passed"},
	}
	var acks []api.StreamAck
	err := c.StreamEvents(t.Context(), slices.Values(events), func(a api.StreamAck) error {
		acks = append(acks, a)
		return nil
	})
	require.NoError(t, err)
	require.Len(t, acks, 3)
	slices.SortFunc(acks, func(a, b api.StreamAck) int { return a.Line - b.Line })
	require.NotEmpty(t, acks[0].ID)
	require.Nil(t, acks[0].Error)
	require.NotNil(t, acks[1].Error, "the second line is refused")
	require.Equal(t, "urn:engram:problem:invalid-event", acks[1].Error.Type)
	require.NotEmpty(t, acks[2].ID)

	// A batch is all or none: its answer lists each event staged, and one
	// bad event refuses it, with a field error at that event.
	staged, err := c.PostEvents(t.Context(), []any{events[0], events[2]})
	require.NoError(t, err)
	require.Len(t, staged.Events, 2)
	require.NotEqual(t, uuid.Nil, staged.Events[0].ID)
	_, err = c.PostEvents(t.Context(), events)
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, http.StatusUnprocessableEntity, ce.Problem.Status)
	require.NotEmpty(t, ce.Problem.Errors)
	require.True(t, strings.HasPrefix(ce.Problem.Errors[0].Pointer, "/1"), "%+v", ce.Problem.Errors)
}

// An agent's loop: recall what helps with a task, then report how it
// served, which reinforces the records it used.
func TestRecallFeedback(t *testing.T) {
	t.Parallel()
	c := newClient(t, setup(t), curatorKey)
	rec, err := c.CreateRecord(t.Context(), fact("user", "go"), "the user said so")
	require.NoError(t, err)

	res, err := c.Retrieve(t.Context(), api.RetrieveRequest{Task: api.Task{Text: "which language does the user prefer"}})
	require.NoError(t, err)
	require.NotEqual(t, uuid.Nil, res.RetrievalID)
	var found bool
	for _, l := range res.Layers {
		for _, it := range l.Items {
			found = found || it.Record.ID == rec.ID
		}
	}
	require.True(t, found, "the fact is recalled: %+v", res.Layers)

	fb, err := c.Feedback(t.Context(), api.FeedbackRequest{RetrievalID: res.RetrievalID.String(), Outcome: "used_success"})
	require.NoError(t, err)
	require.Equal(t, 1, fb.Applied)
	require.Len(t, fb.Records, 1)
	require.Equal(t, rec.ID, fb.Records[0].ID)

	// The same feedback again counts once.
	fb, err = c.Feedback(t.Context(), api.FeedbackRequest{RetrievalID: res.RetrievalID.String(), Outcome: "used_success"})
	require.NoError(t, err)
	require.Equal(t, 0, fb.Applied)
	require.Equal(t, []uuid.UUID{rec.ID}, fb.Duplicate)
}

// A record's round trip: create, get, list, supersede, history and audit.
func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	c := newClient(t, setup(t), curatorKey)
	ctx := t.Context()
	rec, err := c.CreateRecord(ctx, fact("user", "go"), "")
	require.NoError(t, err)
	require.Equal(t, memory.Semantic, rec.Type)
	require.Equal(t, 1, rec.Version)

	got, err := c.GetRecord(ctx, rec.ID)
	require.NoError(t, err)
	require.Equal(t, rec.ID, got.ID)
	require.JSONEq(t, string(rec.Payload), string(got.Payload))

	page, err := c.ListRecords(ctx, client.RecordFilter{Types: []memory.Type{memory.Semantic}, Subject: "user"})
	require.NoError(t, err)
	require.Len(t, page.Records, 1)
	require.Equal(t, rec.ID, page.Records[0].ID)
	page, err = c.ListRecords(ctx, client.RecordFilter{Types: []memory.Type{memory.Working}})
	require.NoError(t, err)
	require.Empty(t, page.Records, "the filter reaches the server")
	other, err := c.CreateRecord(ctx, fact("team", "go"), "")
	require.NoError(t, err)
	page, err = c.ListRecords(ctx, client.RecordFilter{Types: []memory.Type{memory.Semantic}, Newest: true})
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{other.ID, rec.ID}, []uuid.UUID{page.Records[0].ID, page.Records[1].ID}, "newest first")

	next, err := json.Marshal(fact("user", "rust"))
	require.NoError(t, err)
	out, err := c.Revise(ctx, rec.ID, client.Supersede, api.ReviseRequest{Version: 1, Rationale: "changed their mind", Record: next})
	require.NoError(t, err)
	var sup struct{ Superseded, Record memory.Record }
	require.NoError(t, json.Unmarshal(out, &sup))
	require.Equal(t, memory.Superseded, sup.Superseded.Status)

	h, err := c.History(ctx, rec.ID)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(h.Versions), 2)
	a, err := c.Audit(ctx, rec.ID)
	require.NoError(t, err)
	require.NotEmpty(t, a.Entries)
	rel, err := c.Relations(ctx, sup.Record.ID)
	require.NoError(t, err)
	require.NotEmpty(t, rel.Relations)

	_, err = c.GetRecord(ctx, uuid.New())
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, http.StatusNotFound, ce.StatusCode())
}

// A refused request is an *Error with the server's problem decoded: its
// status, type and field errors, and never the key.
func TestProblemFieldErrors(t *testing.T) {
	t.Parallel()
	c := newClient(t, setup(t), curatorKey)
	_, err := c.CreateRecord(t.Context(), map[string]any{"type": "semantic", "payload": map[string]any{
		"kind": "semantic", "subject": "user", "predicate": "prefers_language", "validity": map[string]any{"mode": "global"}}}, "")
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, http.StatusUnprocessableEntity, ce.Problem.Status)
	require.Equal(t, client.ProblemValidation, ce.Problem.Type)
	require.NotEmpty(t, ce.Problem.Errors)
	require.Equal(t, "/payload/object", ce.Problem.Errors[0].Pointer, "%+v", ce.Problem.Errors)
	require.Equal(t, "is required", ce.Problem.Errors[0].Message)
	require.NotContains(t, err.Error(), curatorKey)

	var p *api.Problem
	require.True(t, errors.As(err, &p), "an *api.Problem is found too")
	require.Equal(t, ce.Problem.Type, p.Type)

	_, err = c.ListRecords(t.Context(), client.RecordFilter{Limit: -1})
	require.ErrorAs(t, err, &ce)
	require.Equal(t, http.StatusBadRequest, ce.Problem.Status)
	require.Equal(t, "limit", ce.Problem.Errors[0].Parameter)
}

// A key of the wrong role is refused with 403 and the forbidden type: an
// executor may not read the review queue, nor an operator's jobs.
func TestWrongRole(t *testing.T) {
	t.Parallel()
	url := setup(t)
	c := newClient(t, url, executorKey)
	_, err := c.ListReviews(t.Context(), client.ReviewFilter{})
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, http.StatusForbidden, ce.Problem.Status)
	require.Equal(t, client.ProblemForbidden, ce.Problem.Type)
	require.NotContains(t, err.Error(), executorKey)

	_, err = c.Jobs(t.Context())
	require.ErrorAs(t, err, &ce)
	require.Equal(t, http.StatusForbidden, ce.Problem.Status)

	// The curator may read the queue.
	_, err = newClient(t, url, curatorKey).ListReviews(t.Context(), client.ReviewFilter{})
	require.NoError(t, err)
}

// recorder is a transport that keeps the headers of the requests it
// passes on to the real one.
type recorder struct{ sent []http.Header }

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.sent = append(r.sent, req.Header.Clone())
	return http.DefaultTransport.RoundTrip(req)
}

// Headers set in Config go with every call; a CallOption overrides one for
// one call. The client given is the one used.
func TestCallOptions(t *testing.T) {
	t.Parallel()
	url := setup(t)
	rec := &recorder{}
	c, err := client.New(client.Config{URL: url + "/", Key: executorKey, Actor: "exec-1", Session: "s-1",
		HTTPClient: &http.Client{Transport: rec}})
	require.NoError(t, err)
	_, err = c.ListRecords(t.Context(), client.RecordFilter{})
	require.NoError(t, err)
	_, err = c.ListRecords(t.Context(), client.RecordFilter{}, client.WithSession("s-2"), client.WithFencingToken(7))
	require.NoError(t, err)
	require.Len(t, rec.sent, 2)
	require.Equal(t, "Bearer "+executorKey, rec.sent[0].Get("Authorization"))
	require.Equal(t, "exec-1", rec.sent[0].Get(client.ActorHeader))
	require.Equal(t, "s-1", rec.sent[0].Get(client.SessionHeader))
	require.Empty(t, rec.sent[0].Get(api.FencingTokenHeader))
	require.Equal(t, client.DefaultUserAgent, rec.sent[0].Get("User-Agent"))
	require.Equal(t, "s-2", rec.sent[1].Get(client.SessionHeader))
	require.Equal(t, "7", rec.sent[1].Get(api.FencingTokenHeader))

	_, err = client.New(client.Config{URL: "localhost:8080", Key: executorKey})
	require.Error(t, err)
	require.NotContains(t, err.Error(), executorKey)
	_, err = client.New(client.Config{URL: url})
	require.Error(t, err)
}

// Health reads the key's tenant's metrics in the buckets asked for; a
// tenant key's Tenants call is refused, as it is an operator's.
func TestHealth(t *testing.T) {
	t.Parallel()
	url := setup(t)
	c := newClient(t, url, curatorKey)
	_, err := c.CreateRecord(t.Context(), fact("user", "go"), "")
	require.NoError(t, err)
	now := time.Now().UTC()
	h, err := c.Health(t.Context(), client.HealthQuery{From: now.Add(-3 * time.Hour), To: now.Add(time.Minute), Bucket: "hour"})
	require.NoError(t, err)
	require.Equal(t, "acme", h.Tenant)
	require.Len(t, h.Series, 4)
	require.Equal(t, int64(1), h.Live[memory.Semantic])
	require.Equal(t, int64(1), h.Series[3].Created[memory.Semantic]+h.Series[2].Created[memory.Semantic])

	_, err = c.Tenants(t.Context())
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, http.StatusForbidden, ce.Problem.Status)
}

// Admit says how the write path took a record: created, then absorbed by
// the live duplicate (the same record answers).
func TestAdmit(t *testing.T) {
	t.Parallel()
	c := newClient(t, setup(t), curatorKey)
	a, err := c.Admit(t.Context(), fact("user", "go"), "the user said so")
	require.NoError(t, err)
	require.Equal(t, client.OutcomeCreated, a.Outcome)
	require.Equal(t, memory.Active, a.Record.Status)
	require.Empty(t, a.ReviewID)
	again, err := c.Admit(t.Context(), fact("user", "go"), "")
	require.NoError(t, err)
	require.Equal(t, client.OutcomeAbsorbed, again.Outcome)
	require.Equal(t, a.Record.ID, again.Record.ID)

	_, err = c.Admit(t.Context(), map[string]any{"type": "semantic"}, "")
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, http.StatusUnprocessableEntity, ce.StatusCode())
}
