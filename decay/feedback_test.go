package decay_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/store"
)

// Reinforcement reverses decay; failure and non-use penalise; each restarts
// the decay from now.
func TestReinforcementReversesDecay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gain := 0.5
	rec := withDecay(episode(), memory.Decay{Curve: memory.Exponential, HalfLifeSeconds: 7 * 86400, ReinforcementGain: &gain})
	e := b.create(t, rec)

	b.clock.Advance(7 * day)
	require.InDelta(t, 0.5, decay.Current(b.get(t, e.ID), b.clock.Now()), 1e-12)
	res, err := b.decayer.Feedback(b.ctx, b.tenant, decay.FeedbackRequest{RecordIDs: []uuid.UUID{e.ID}, Outcome: decay.UsedSuccess}, b.ch)
	require.NoError(t, err)
	require.Len(t, res.Applied, 1)
	got := b.get(t, e.ID)
	require.InDelta(t, 1.0, got.Salience, 1e-12, "0.5 decayed plus a gain of 0.5")
	require.Equal(t, b.clock.Now(), got.Lifecycle.LastReinforcedAt)
	require.Equal(t, 1, got.Version, "salience moves without a revision")
	require.Equal(t, got.Salience, res.Applied[0].Salience)

	b.clock.Advance(7 * day)
	require.InDelta(t, 0.5, decay.Current(b.get(t, e.ID), b.clock.Now()), 1e-12)

	// Penalties, with the episodic profile's defaults.
	_, err = b.decayer.Feedback(b.ctx, b.tenant, decay.FeedbackRequest{RecordIDs: []uuid.UUID{e.ID}, Outcome: decay.UsedFailure}, b.ch)
	require.NoError(t, err)
	require.InDelta(t, 0.5-decay.DefaultFailurePenalty, b.get(t, e.ID).Salience, 1e-12)
	_, err = b.decayer.Feedback(b.ctx, b.tenant, decay.FeedbackRequest{RecordIDs: []uuid.UUID{e.ID}, Outcome: decay.Unused}, b.ch)
	require.NoError(t, err)
	require.InDelta(t, 0.5-decay.DefaultFailurePenalty-decay.DefaultUnusedPenalty, b.get(t, e.ID).Salience, 1e-12)

	// Reinforcement stops at MaxSalience.
	for range 5 {
		_, err = b.decayer.Feedback(b.ctx, b.tenant, decay.FeedbackRequest{RecordIDs: []uuid.UUID{e.ID}, Outcome: decay.UsedSuccess}, b.ch)
		require.NoError(t, err)
	}
	require.Equal(t, decay.MaxSalience, b.get(t, e.ID).Salience)
}

// Feedback counts once per (retrieval or key, record).
func TestFeedbackIsIdempotentPerScope(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, c := b.create(t, fact("a")), b.create(t, fact("c"))
	b.clock.Advance(90 * day)
	req := decay.FeedbackRequest{Key: "first", RecordIDs: []uuid.UUID{a.ID}, Outcome: decay.UsedSuccess}
	res, err := b.decayer.Feedback(b.ctx, b.tenant, req, b.ch)
	require.NoError(t, err)
	require.Len(t, res.Applied, 1)
	after := b.get(t, a.ID).Salience

	req.RecordIDs = []uuid.UUID{a.ID, c.ID}
	res, err = b.decayer.Feedback(b.ctx, b.tenant, req, b.ch)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{a.ID}, res.Duplicate)
	require.Len(t, res.Applied, 1)
	require.Equal(t, c.ID, res.Applied[0].ID)
	require.Equal(t, after, b.get(t, a.ID).Salience, "counted once")

	// Another scope counts again; so does a call without one.
	res, err = b.decayer.Feedback(b.ctx, b.tenant, decay.FeedbackRequest{Key: "ret-1", RecordIDs: []uuid.UUID{a.ID}, Outcome: decay.Unused}, b.ch)
	require.NoError(t, err)
	require.Len(t, res.Applied, 1)
	for range 2 {
		res, err = b.decayer.Feedback(b.ctx, b.tenant, decay.FeedbackRequest{RecordIDs: []uuid.UUID{a.ID}, Outcome: decay.Unused}, b.ch)
		require.NoError(t, err)
		require.Len(t, res.Applied, 1)
	}
	require.Equal(t, 5, b.count(t, "SELECT count(*) FROM feedback"))
}

// Bad feedback is refused whole, naming the fields, and changes nothing:
// unknown records, other tenants' records, outcomes outside the enum.
func TestFeedbackRefusesBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mine := b.create(t, fact("mine"))
	theirs, err := b.w.Create(b.ctx, "other", fact("theirs"), b.ch)
	require.NoError(t, err)
	b.clock.Advance(30 * day)

	for _, tc := range []struct {
		name string
		req  decay.FeedbackRequest
		want []schemas.Violation
	}{
		{"unknown and other tenant's records", decay.FeedbackRequest{RecordIDs: []uuid.UUID{mine.ID, uuid.New(), theirs.ID}, Outcome: decay.UsedSuccess},
			[]schemas.Violation{{Pointer: "/record_ids/1", Message: "no such record"}, {Pointer: "/record_ids/2", Message: "no such record"}}},
		{"outcome outside the enum", decay.FeedbackRequest{RecordIDs: []uuid.UUID{mine.ID}, Outcome: "helpful"},
			[]schemas.Violation{{Pointer: "/outcome", Message: `"helpful" is not used_success, used_failure or unused`}}},
		{"no records", decay.FeedbackRequest{Key: "r", Outcome: decay.Unused},
			[]schemas.Violation{{Pointer: "/record_ids", Message: "is required without a retrieval_id: name the records the outcome is about"}}},
		{"not a retrieval id", decay.FeedbackRequest{RetrievalID: "ret-1", Outcome: decay.Unused},
			[]schemas.Violation{{Pointer: "/retrieval_id", Message: "is not a retrieval id (the retrieval_id of a POST /v1/retrieve answer)"}}},
		{"an unknown retrieval", decay.FeedbackRequest{RetrievalID: uuid.NewString(), Outcome: decay.Unused},
			[]schemas.Violation{{Pointer: "/retrieval_id", Message: "no such retrieval"}}},
		{"a record twice", decay.FeedbackRequest{RecordIDs: []uuid.UUID{mine.ID, mine.ID}, Outcome: decay.Unused},
			[]schemas.Violation{{Pointer: "/record_ids/1", Message: "names a record twice"}}},
		{"both scopes", decay.FeedbackRequest{RetrievalID: uuid.NewString(), Key: "k", RecordIDs: []uuid.UUID{mine.ID}, Outcome: decay.Unused},
			[]schemas.Violation{{Pointer: "/key", Message: "give a retrieval_id or a key, not both"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.decayer.Feedback(b.ctx, b.tenant, tc.req, b.ch)
			var ve *schemas.ValidationError
			require.ErrorAs(t, err, &ve)
			require.Equal(t, tc.want, ve.Violations)
		})
	}
	require.Equal(t, 1.0, b.get(t, mine.ID).Salience)
	require.Equal(t, 0, b.count(t, "SELECT count(*) FROM feedback"))
	rec, err := store.Get(b.ctx, b.db.Pool, "other", theirs.ID)
	require.NoError(t, err)
	require.Equal(t, 1.0, rec.Salience)
}

// Records out of the active set are left as they are.
func TestFeedbackSkipsRecordsNotLive(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gone, here := b.create(t, fact("gone")), b.create(t, fact("here"))
	_, err := b.w.Retract(b.ctx, b.tenant, gone.ID, 0, b.ch)
	require.NoError(t, err)
	res, err := b.decayer.Feedback(b.ctx, b.tenant, decay.FeedbackRequest{RecordIDs: []uuid.UUID{gone.ID, here.ID}, Outcome: decay.UsedFailure}, b.ch)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{gone.ID}, res.NotLive)
	require.Len(t, res.Applied, 1)
	require.Equal(t, 1.0, b.get(t, gone.ID).Salience)
}

// Procedures and plans count successes and failures in their payload, as a
// revision that passes the canonical schemas and is audited.
func TestFeedbackCountsOutcomesOfProceduresAndPlans(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, p := b.create(t, competence("clear ld cache")), b.create(t, plan("deploy"))
	ids := []uuid.UUID{c.ID, p.ID}
	_, err := b.decayer.Feedback(b.ctx, b.tenant, decay.FeedbackRequest{RecordIDs: ids, Outcome: decay.UsedSuccess, Key: "1"}, b.ch)
	require.NoError(t, err)
	succeeded := b.get(t, c.ID).Confidence
	require.Equal(t, memory.LearnedConfidence(1, 0), succeeded, "a procedure's confidence follows its uses")
	b.clock.Advance(day)
	res, err := b.decayer.Feedback(b.ctx, b.tenant, decay.FeedbackRequest{RecordIDs: ids, Outcome: decay.UsedFailure, Key: "2"}, revise.Change{Actor: "agent-7", Rationale: "the build still failed"})
	require.NoError(t, err)
	require.Equal(t, 3, res.Applied[0].Version)
	_, err = b.decayer.Feedback(b.ctx, b.tenant, decay.FeedbackRequest{RecordIDs: ids, Outcome: decay.Unused, Key: "3"}, b.ch)
	require.NoError(t, err)

	gc := b.get(t, c.ID)
	require.Equal(t, 3, gc.Version, "unused counts nothing: no revision")
	var cp memory.CompetencePayload
	require.NoError(t, json.Unmarshal(gc.Payload, &cp))
	require.Equal(t, 1, cp.Performance.Successes)
	require.Equal(t, 1, cp.Performance.Failures)
	require.Equal(t, b.clock.Now(), cp.Performance.LastFailureAt.UTC())
	require.Equal(t, "clear ld cache", cp.SkillName)
	require.Equal(t, memory.LearnedConfidence(1, 1), gc.Confidence)
	require.Less(t, gc.Confidence, succeeded, "both ways: a failure lowers it")

	gp := b.get(t, p.ID)
	var pp struct {
		Metrics map[string]float64 `json:"metrics"`
	}
	require.NoError(t, json.Unmarshal(gp.Payload, &pp))
	require.Equal(t, map[string]float64{"successes": 1, "failures": 1, "failure_rate": 0.5, "avg_latency_ms": 120}, pp.Metrics)

	for _, r := range []memory.Record{gc, gp} {
		doc, err := json.Marshal(r)
		require.NoError(t, err)
		require.NoError(t, schemas.ValidateRecord(doc))
	}
	audit, err := store.Audit(b.ctx, b.db.Pool, b.tenant, c.ID)
	require.NoError(t, err)
	last := audit[len(audit)-1]
	require.Equal(t, revise.ActionFeedback, last.Action)
	require.Equal(t, "agent-7", last.Actor)
	require.Equal(t, "the build still failed", last.Rationale)
	require.Equal(t, 3, b.count(t, "SELECT count(*) FROM record_versions WHERE record_id = $1", c.ID))
}

// Feedback and a sweep that expires the same records take their locks in
// the same order: neither deadlocks, whatever the order the ids come in.
func TestFeedbackAndSweepDoNotDeadlock(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *decay.Config) { c.BatchSize = 40 })
	var ids []uuid.UUID
	for i := range 200 {
		ids = append(ids, b.create(t, fact(fmt.Sprintf("s%d", i))).ID)
	}
	b.clock.Advance(500 * day)
	slices.Reverse(ids)
	var wg sync.WaitGroup
	errs := make([]error, 5)
	for i := range 4 {
		wg.Go(func() {
			_, errs[i] = b.decayer.Feedback(b.ctx, b.tenant, decay.FeedbackRequest{RecordIDs: ids[i*10:], Outcome: decay.UsedSuccess}, b.ch)
		})
	}
	wg.Go(func() { errs[4] = b.decayer.Sweep(b.ctx, &progress{}) })
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	// Every record was either reinforced before the sweep read it or
	// expired; none both.
	require.Equal(t, 200, b.count(t, "SELECT count(*) FROM records WHERE status = 'expired' OR last_reinforced_at = $1", b.clock.Now()))
	require.Zero(t, b.count(t, "SELECT count(*) FROM records WHERE status = 'expired' AND last_reinforced_at = $1", b.clock.Now()))
}
