package view_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/access"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/seal"
	"github.com/engram-dev/engram/store"
	"github.com/engram-dev/engram/view"
)

type bundle struct {
	ctx    context.Context
	db     *pgtest.Schema
	sealer *seal.Sealer
	writer *revise.Writer
	reader *view.Reader
}

// setup gives a test a tenant acme (and another, umbrella) whose sensitive
// payloads are sealed, the write path to fill it and the read door.
func setup(t *testing.T) bundle {
	t.Helper()
	ctx := context.Background()
	db := pgtest.NewSchema(t)
	for _, tenant := range []string{"acme", "umbrella"} {
		require.NoError(t, store.EnsureTenant(ctx, db.Pool, tenant))
	}
	mk, err := seal.ParseMasterKey(seal.NewMasterKey())
	require.NoError(t, err)
	s, err := seal.New(seal.Config{DB: db.Pool, Keys: []seal.MasterKey{mk}})
	require.NoError(t, err)
	return bundle{ctx: ctx, db: db, sealer: s, writer: revise.New(db.Pool, revise.Config{Sealer: s}), reader: view.New(db.Pool, s)}
}

// key is a viewer of acme: a key of role with clearance, for agent.
func key(role access.Role, agent string, clearance memory.Sensitivity) view.Viewer {
	return view.As(access.Principal{Tenant: "acme", Key: "k", Role: role, Agent: agent, Clearance: clearance}, nil)
}

// fact writes an active fact of sensitivity sens whose object is object.
func (b bundle) fact(t *testing.T, sens memory.Sensitivity, object string) memory.Record {
	t.Helper()
	rec, err := b.writer.Create(b.ctx, "acme", memory.Record{Type: memory.Semantic, Sensitivity: sens, Confidence: 0.9, Salience: 1,
		Payload: json.RawMessage(`{"kind":"semantic","subject":"` + object + `","predicate":"is","object":"` + object + `","validity":{"mode":"global"}}`)},
		revise.Change{Actor: "test", Rationale: "because"})
	require.NoError(t, err)
	return rec
}

// Staged events above a key's clearance are not shown; those shown are
// opened.
func TestEventsAboveClearanceAreHidden(t *testing.T) {
	t.Parallel()
	b := setup(t)
	stage := func(sens memory.Sensitivity, text string) uuid.UUID {
		sealed, err := b.sealer.Seal(b.ctx, "acme", []byte(`{"text":"`+text+`"}`))
		require.NoError(t, err)
		c := store.Candidate{ID: uuid.New(), AgentID: "a1", ThreadID: "t1", Kind: memory.UserInput, Time: time.Now(),
			Event: sealed, DedupKey: []byte(text), Sensitivity: sens}
		_, err = store.Stage(b.ctx, b.db.Pool, "acme", []store.Candidate{c})
		require.NoError(t, err)
		return c.ID
	}
	low, high := stage(memory.Low, "lowkey"), stage(memory.High, "highkey")

	evs, err := b.reader.Events(b.ctx, key(access.Verifier, "", memory.Medium), store.CandidatePending, 0, 10)
	require.NoError(t, err)
	require.Len(t, evs, 1, "the high event is above a medium clearance")
	require.Equal(t, low, evs[0].ID)
	require.JSONEq(t, `{"text":"lowkey"}`, string(evs[0].Event), "opened")

	evs, err = b.reader.Events(b.ctx, view.System("acme"), store.CandidatePending, 0, 10)
	require.NoError(t, err)
	require.Len(t, evs, 2)
	require.Equal(t, high, evs[1].ID)
	require.JSONEq(t, `{"text":"highkey"}`, string(evs[1].Event))

	evs, err = b.reader.Events(b.ctx, view.System("umbrella"), store.CandidatePending, 0, 10)
	require.NoError(t, err)
	require.NotNil(t, evs)
	require.Empty(t, evs, "another tenant's")
}

// A thread is its agent's session: an executor reads its own agent's
// threads and no other's.
func TestThreadOfAnotherAgentIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := revise.Change{Actor: "test", Rationale: "because"}
	ep, err := b.writer.Create(b.ctx, "acme", memory.Record{Type: memory.Episodic, AgentID: "a1", Confidence: 1, Salience: 1,
		Payload: json.RawMessage(`{"kind":"episodic","timeline":[]}`)}, ch)
	require.NoError(t, err)
	wm, err := b.writer.Create(b.ctx, "acme", memory.Record{Type: memory.Working, AgentID: "a1", Confidence: 1, Salience: 1,
		Payload: json.RawMessage(`{"kind":"working","thread_id":"t1","state":"planning"}`)}, ch)
	require.NoError(t, err)
	_, err = store.InsertThread(b.ctx, b.db.Pool, "acme", "t1", "a1", ep.ID, wm.ID)
	require.NoError(t, err)

	th, err := b.reader.Thread(b.ctx, key(access.Executor, "a1", ""), "t1")
	require.NoError(t, err)
	require.Equal(t, "a1", th.AgentID)
	require.Equal(t, 1, th.Generation)

	_, err = b.reader.Thread(b.ctx, key(access.Executor, "a2", ""), "t1")
	var denied *access.DeniedError
	require.ErrorAs(t, err, &denied)

	_, err = b.reader.Thread(b.ctx, key(access.Verifier, "", ""), "t1")
	require.NoError(t, err, "a verifier reads every layer")

	_, err = b.reader.Thread(b.ctx, view.System("umbrella"), "t1")
	require.ErrorIs(t, err, store.ErrNotFound)
}

// A review shows its draft: a key that may not read the draft does not
// see the review in the queue, and is refused it.
func TestReviewOfRecordAboveClearanceIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	review := func(rec memory.Record) uuid.UUID {
		now := time.Now().UTC()
		rv := store.Review{ID: uuid.New(), RecordID: rec.ID, Tier: "async", Risk: 0.5, RiskFactors: map[string]float64{},
			Reasons: []string{"test"}, CreatedAt: now, SLADeadline: now.Add(time.Hour)}
		require.NoError(t, store.InsertReview(b.ctx, b.db.Pool, "acme", rv))
		return rv.ID
	}
	low := review(b.fact(t, memory.Low, "lowfact"))
	high := review(b.fact(t, memory.High, "highfact"))
	medium := key(access.Verifier, "", memory.Medium)

	page, err := b.reader.Reviews(b.ctx, medium, store.ReviewFilter{})
	require.NoError(t, err)
	require.Len(t, page.Reviews, 1, "the high draft is above a medium clearance")
	require.Equal(t, low, page.Reviews[0].ID)
	require.Contains(t, string(page.Reviews[0].Record.Payload), "lowfact")

	rv, err := b.reader.Review(b.ctx, medium, low)
	require.NoError(t, err)
	require.Equal(t, low, rv.ID)
	_, err = b.reader.Review(b.ctx, medium, high)
	var denied *access.DeniedError
	require.ErrorAs(t, err, &denied)

	page, err = b.reader.Reviews(b.ctx, view.System("acme"), store.ReviewFilter{})
	require.NoError(t, err)
	require.Len(t, page.Reviews, 2)
	rv, err = b.reader.Review(b.ctx, key(access.Verifier, "", memory.Hyper), high)
	require.NoError(t, err)
	require.Contains(t, string(rv.Record.Payload), "highfact", "the sealed draft, opened")

	page, err = b.reader.Reviews(b.ctx, view.System("umbrella"), store.ReviewFilter{})
	require.NoError(t, err)
	require.NotNil(t, page.Reviews)
	require.Empty(t, page.Reviews, "another tenant's")
	_, err = b.reader.Review(b.ctx, view.System("umbrella"), low)
	require.ErrorIs(t, err, store.ErrNotFound)
}

// An artifact is its tenant's, and is read opened.
func TestArtifactIsItsTenantsOpened(t *testing.T) {
	t.Parallel()
	b := setup(t)
	art, err := b.writer.PutArtifact(b.ctx, "acme", "text/plain", []byte("griffin build log"))
	require.NoError(t, err)
	require.True(t, art.Sealed)

	a, content, err := b.reader.Artifact(b.ctx, key(access.Executor, "a1", memory.Public), art.SHA256)
	require.NoError(t, err)
	require.Equal(t, "text/plain", a.MediaType)
	require.Equal(t, "griffin build log", string(content))

	_, _, err = b.reader.Artifact(b.ctx, view.System("umbrella"), art.SHA256)
	require.ErrorIs(t, err, store.ErrNotFound)
}
