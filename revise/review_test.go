package revise_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/store"
)

// reviewBundle is a test's schema, tenant and write path, on a clock the
// test may move (it runs on the wall clock until set).
type reviewBundle struct {
	ctx    context.Context
	pool   *pgxpool.Pool
	w      *revise.Writer
	tenant string
	ch     revise.Change
	clock  atomic.Pointer[time.Time]
}

func reviewSetup(t *testing.T) *reviewBundle {
	t.Helper()
	db := pgtest.NewSchema(t)
	b := &reviewBundle{ctx: context.Background(), pool: db.Pool, tenant: "acme", ch: revise.Change{Actor: "agent-7"}}
	require.NoError(t, store.EnsureTenant(b.ctx, db.Pool, "acme"))
	require.NoError(t, store.EnsureTenant(b.ctx, db.Pool, "globex"))
	b.w = revise.New(db.Pool, revise.Config{Now: func() time.Time {
		if at := b.clock.Load(); at != nil {
			return *at
		}
		return time.Now()
	}})
	return b
}

func (b *reviewBundle) setClock(at time.Time) { b.clock.Store(&at) }

func reviewFact(object string) memory.Record {
	p, _ := json.Marshal(map[string]any{"kind": "semantic", "subject": "user", "predicate": "prefers_editor",
		"object": object, "validity": map[string]any{"mode": "global"}})
	return memory.Record{Type: memory.Semantic, Confidence: 0.7, Payload: p, AgentID: "agent-7",
		Provenance: memory.Provenance{Sources: []memory.Source{{Kind: "event", Ref: "evt://" + object}}}}
}

func asyncReview() revise.ReviewRequest {
	return revise.ReviewRequest{Tier: revise.TierAsync, Risk: 0.55,
		Factors: map[string]float64{"layer": 0.8, "contradiction": 1, "evidence": 0.7},
		Reasons: []string{"contradicts an active fact", "evidence is the agent's own reasoning"}}
}

func (b *reviewBundle) submit(t *testing.T, rec memory.Record, r revise.ReviewRequest) (memory.Record, revise.Review) {
	t.Helper()
	draft, rv, err := b.w.SubmitForReview(b.ctx, b.tenant, rec, b.ch, r)
	require.NoError(t, err)
	return draft, rv
}

func (b *reviewBundle) get(t *testing.T, id uuid.UUID) memory.Record {
	t.Helper()
	rec, err := store.Get(b.ctx, b.pool, b.tenant, id)
	require.NoError(t, err)
	return rec
}

func (b *reviewBundle) review(t *testing.T, id uuid.UUID) revise.Review {
	t.Helper()
	rv, err := store.GetReview(b.ctx, b.pool, b.tenant, id)
	require.NoError(t, err)
	return rv
}

func (b *reviewBundle) actions(t *testing.T, id uuid.UUID) []string {
	t.Helper()
	entries, err := store.Audit(b.ctx, b.pool, b.tenant, id)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Action)
	}
	return out
}

func (b *reviewBundle) lastAudit(t *testing.T, id uuid.UUID) store.AuditEntry {
	t.Helper()
	entries, err := store.Audit(b.ctx, b.pool, b.tenant, id)
	require.NoError(t, err)
	return entries[len(entries)-1]
}

// activeIDs lists the ids of the tenant's active set.
func (b *reviewBundle) activeIDs(t *testing.T) []uuid.UUID {
	t.Helper()
	page, err := store.List(b.ctx, b.pool, b.tenant, store.Filter{})
	require.NoError(t, err)
	var ids []uuid.UUID
	for _, r := range page.Records {
		ids = append(ids, r.ID)
	}
	return ids
}

// retrieved lists the ids retrieval returns for the user's editor.
func (b *reviewBundle) retrieved(t *testing.T) []uuid.UUID {
	t.Helper()
	settings, err := retrieve.NewSettings(retrieve.DefaultConfig())
	require.NoError(t, err)
	res, err := retrieve.New(b.pool, settings).Retrieve(b.ctx, b.tenant, retrieve.Request{Task: retrieve.Task{Text: "which editor does the user prefer"}})
	require.NoError(t, err)
	var ids []uuid.UUID
	for _, l := range res.Layers {
		for _, it := range l.Items {
			ids = append(ids, it.Record.ID)
		}
	}
	return ids
}

func requireReviewConflict(t *testing.T, err error, code string) *revise.ConflictError {
	t.Helper()
	var ce *revise.ConflictError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, code, ce.Code, ce.Detail)
	return ce
}

func requirePointer(t *testing.T, err error, pointer string) {
	t.Helper()
	var ve *schemas.ValidationError
	require.ErrorAs(t, err, &ve)
	var got []string
	for _, v := range ve.Violations {
		got = append(got, v.Pointer)
	}
	require.Contains(t, got, pointer)
}

// A submitted write is a draft, created as Create creates a record, with a
// pending review; neither the active set nor retrieval shows it.
func TestSubmitForReviewHoldsADraft(t *testing.T) {
	t.Parallel()
	b := reviewSetup(t)
	before := time.Now().UTC().Add(-time.Second)
	draft, rv := b.submit(t, reviewFact("helix"), asyncReview())

	require.Equal(t, memory.Draft, draft.Status)
	require.Equal(t, 1, draft.Version)
	require.Equal(t, memory.Low, draft.Sensitivity, "defaults are filled in as Create does")
	require.Equal(t, memory.AutoPrune, draft.Lifecycle.DeletionPolicy)
	require.Equal(t, memory.Draft, b.get(t, draft.ID).Status)

	require.Equal(t, draft.ID, rv.RecordID)
	require.Equal(t, revise.ReviewPending, rv.Status)
	require.Equal(t, "async", rv.Tier)
	require.Equal(t, "agent-7", rv.AgentID)
	require.Equal(t, revise.DefaultSLA, rv.SLADeadline.Sub(rv.CreatedAt))
	require.True(t, rv.CreatedAt.After(before))
	stored := b.review(t, rv.ID)
	require.Equal(t, rv.Risk, stored.Risk)
	require.Equal(t, map[string]float64{"layer": 0.8, "contradiction": 1, "evidence": 0.7}, stored.RiskFactors)
	require.Equal(t, asyncReview().Reasons, stored.Reasons)
	require.Nil(t, stored.Proposal)
	require.Equal(t, rv.SLADeadline, stored.SLADeadline)

	require.Equal(t, []string{revise.ActionCreate, revise.ActionSubmitForReview}, b.actions(t, draft.ID))
	require.Contains(t, b.lastAudit(t, draft.ID).Rationale, "contradicts an active fact")
	require.NotContains(t, b.activeIDs(t), draft.ID)
	require.NotContains(t, b.retrieved(t), draft.ID)
	page, err := store.List(b.ctx, b.pool, b.tenant, store.Filter{Statuses: []memory.Status{memory.Draft}})
	require.NoError(t, err)
	require.Len(t, page.Records, 1, "drafts are listed when asked for")

	// Another tenant does not see the review.
	_, err = store.GetReview(b.ctx, b.pool, "globex", rv.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, _, err = b.w.Approve(b.ctx, "globex", rv.ID, revise.Decision{Approver: "key:globex", Justification: "mine"})
	require.ErrorIs(t, err, store.ErrNotFound)

	// A draft is validated as any new record is, and nothing is stored
	// when it fails.
	bad := reviewFact("x")
	bad.Confidence = 3
	_, _, err = b.w.SubmitForReview(b.ctx, b.tenant, bad, b.ch, asyncReview())
	requirePointer(t, err, "/confidence")
	var n int
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT count(*) FROM reviews").Scan(&n))
	require.Equal(t, 1, n)
}

// What the approval gate gives is checked; a proposal must name a live
// record of the draft's type.
func TestReviewRequestIsChecked(t *testing.T) {
	t.Parallel()
	b := reviewSetup(t)
	r := asyncReview()
	r.Tier, r.Risk, r.SLA = "later", -1, -time.Second
	r.Reasons = []string{" "}
	_, _, err := b.w.SubmitForReview(b.ctx, b.tenant, reviewFact("a"), b.ch, r)
	for _, p := range []string{"/review/tier", "/review/risk", "/review/sla", "/review/reasons/0"} {
		requirePointer(t, err, p)
	}

	r = asyncReview()
	r.Proposal = &revise.Proposal{Supersedes: uuid.Must(uuid.NewV7())}
	_, _, err = b.w.SubmitForReview(b.ctx, b.tenant, reviewFact("a"), b.ch, r)
	requirePointer(t, err, "/review/proposal/supersedes")

	old, err := b.w.Create(b.ctx, b.tenant, reviewFact("vim"), b.ch)
	require.NoError(t, err)
	_, err = b.w.Retract(b.ctx, b.tenant, old.ID, 0, b.ch)
	require.NoError(t, err)
	r.Proposal = &revise.Proposal{Supersedes: old.ID}
	_, _, err = b.w.SubmitForReview(b.ctx, b.tenant, reviewFact("a"), b.ch, r)
	requireReviewConflict(t, err, revise.CodeNotLive)

	var n int
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT count(*) FROM records WHERE status = 'draft'").Scan(&n))
	require.Zero(t, n, "a refused submission stores nothing")
}

// Approval activates the draft as a revision, audited with the approver
// and justification, which the review records with the time.
func TestApproveActivatesTheDraft(t *testing.T) {
	t.Parallel()
	b := reviewSetup(t)
	draft, rv := b.submit(t, reviewFact("helix"), asyncReview())

	approved, rec, err := b.w.Approve(b.ctx, b.tenant, rv.ID, revise.Decision{Approver: "alice via key:ops", Justification: "the user said so in chat"})
	require.NoError(t, err)
	require.Equal(t, memory.Active, rec.Status)
	require.Equal(t, 2, rec.Version)
	require.Equal(t, "active", revisionStatus(t, rec))
	require.Equal(t, revise.ReviewApproved, approved.Status)
	require.Equal(t, "alice via key:ops", approved.DecidedBy)
	require.Equal(t, "the user said so in chat", approved.Justification)
	require.NotNil(t, approved.DecidedAt)
	require.Equal(t, rec.ID, approved.Record.ID)

	stored := b.review(t, rv.ID)
	require.Equal(t, revise.ReviewApproved, stored.Status)
	require.Equal(t, "alice via key:ops", stored.DecidedBy)
	require.Equal(t, approved.DecidedAt.UTC(), stored.DecidedAt.UTC())
	require.Empty(t, stored.RejectionReason)

	entry := b.lastAudit(t, draft.ID)
	require.Equal(t, revise.ActionApprove, entry.Action)
	require.Equal(t, "alice via key:ops", entry.Actor)
	require.Equal(t, "the user said so in chat", entry.Rationale)
	require.Equal(t, 2, *entry.Version)

	require.Contains(t, b.activeIDs(t), draft.ID)
	require.Contains(t, b.retrieved(t), draft.ID)

	// A decided review takes no other decision.
	_, _, err = b.w.Approve(b.ctx, b.tenant, rv.ID, revise.Decision{Approver: "bob", Justification: "again"})
	ce := requireReviewConflict(t, err, revise.CodeNotPending)
	require.Equal(t, []uuid.UUID{draft.ID}, ce.RecordIDs)
	_, _, err = b.w.Reject(b.ctx, b.tenant, rv.ID, revise.Decision{Approver: "bob", Justification: "no", Reason: revise.ReasonOther})
	requireReviewConflict(t, err, revise.CodeNotPending)

	// A justification is required.
	_, rv2 := b.submit(t, reviewFact("nano"), asyncReview())
	_, _, err = b.w.Approve(b.ctx, b.tenant, rv2.ID, revise.Decision{Approver: "bob"})
	requirePointer(t, err, "/justification")
	_, _, err = b.w.Approve(b.ctx, b.tenant, uuid.Must(uuid.NewV7()), revise.Decision{Approver: "bob", Justification: "x"})
	require.ErrorIs(t, err, store.ErrNotFound)
}

func revisionStatus(t *testing.T, r memory.Record) string {
	t.Helper()
	var p memory.SemanticPayload
	require.NoError(t, json.Unmarshal(r.Payload, &p))
	if p.Revision == nil {
		return ""
	}
	return p.Revision.Status
}

// Rejection retracts the draft with a structured reason, audited.
func TestRejectRetractsTheDraft(t *testing.T) {
	t.Parallel()
	b := reviewSetup(t)
	draft, rv := b.submit(t, reviewFact("helix"), asyncReview())

	_, _, err := b.w.Reject(b.ctx, b.tenant, rv.ID, revise.Decision{Approver: "alice", Justification: "wrong", Reason: "bogus"})
	requirePointer(t, err, "/reason")
	_, _, err = b.w.Approve(b.ctx, b.tenant, rv.ID, revise.Decision{Approver: "alice", Justification: "ok", Reason: revise.ReasonOther})
	requirePointer(t, err, "/reason")

	rejected, rec, err := b.w.Reject(b.ctx, b.tenant, rv.ID, revise.Decision{
		Approver: "alice", Justification: "the user uses vim", Reason: revise.ReasonFactualError})
	require.NoError(t, err)
	require.Equal(t, memory.Retracted, rec.Status)
	require.Equal(t, 2, rec.Version)
	require.Equal(t, revise.ReviewRejected, rejected.Status)
	stored := b.review(t, rv.ID)
	require.Equal(t, "factual_error", stored.RejectionReason)
	require.Equal(t, "the user uses vim", stored.Justification)
	require.Equal(t, "alice", stored.DecidedBy)

	entry := b.lastAudit(t, draft.ID)
	require.Equal(t, revise.ActionReject, entry.Action)
	require.Equal(t, "alice", entry.Actor)
	require.Equal(t, "factual_error: the user uses vim", entry.Rationale)
	require.NotContains(t, b.activeIDs(t), draft.ID)

	_, _, err = b.w.Approve(b.ctx, b.tenant, rv.ID, revise.Decision{Approver: "bob", Justification: "changed my mind"})
	requireReviewConflict(t, err, revise.CodeNotPending)
}

// A supersession proposal is carried out by the approval, in one
// transaction: the old fact leaves the active set, linked by supersedes.
func TestApproveSupersedesByProposal(t *testing.T) {
	t.Parallel()
	b := reviewSetup(t)
	old, err := b.w.Create(b.ctx, b.tenant, reviewFact("vim"), b.ch)
	require.NoError(t, err)
	r := asyncReview()
	r.Proposal = &revise.Proposal{Supersedes: old.ID}
	draft, rv := b.submit(t, reviewFact("helix"), r)
	require.Equal(t, old.ID, b.review(t, rv.ID).Proposal.Supersedes)
	require.Equal(t, []uuid.UUID{old.ID}, b.activeIDs(t), "the old fact stands until the approval")

	_, rec, err := b.w.Approve(b.ctx, b.tenant, rv.ID, revise.Decision{Approver: "alice", Justification: "the user switched"})
	require.NoError(t, err)
	require.Equal(t, memory.Active, rec.Status)
	require.Equal(t, []memory.Relation{{Predicate: memory.Supersedes, TargetID: old.ID}}, rec.Relations)
	prev := b.get(t, old.ID)
	require.Equal(t, memory.Superseded, prev.Status)
	require.Equal(t, []uuid.UUID{draft.ID}, b.activeIDs(t))

	var np, pp memory.SemanticPayload
	require.NoError(t, json.Unmarshal(rec.Payload, &np))
	require.NoError(t, json.Unmarshal(prev.Payload, &pp))
	require.Equal(t, old.ID.String(), np.Revision.Supersedes)
	require.Equal(t, draft.ID.String(), pp.Revision.SupersededBy)
	entry := b.lastAudit(t, old.ID)
	require.Equal(t, revise.ActionSupersede, entry.Action)
	require.Equal(t, "alice", entry.Actor)

	// A proposal whose record left the active set meanwhile is refused,
	// and the review stays pending.
	r.Proposal = &revise.Proposal{Supersedes: draft.ID}
	_, rv2 := b.submit(t, reviewFact("emacs"), r)
	_, err = b.w.Retract(b.ctx, b.tenant, draft.ID, 0, b.ch)
	require.NoError(t, err)
	_, _, err = b.w.Approve(b.ctx, b.tenant, rv2.ID, revise.Decision{Approver: "alice", Justification: "x"})
	requireReviewConflict(t, err, revise.CodeNotLive)
	require.Equal(t, revise.ReviewPending, b.review(t, rv2.ID).Status)
}

// A draft fact whose approval would make a second active fact with the same
// key is refused cleanly, naming the active one; the review stays pending
// and may still be rejected.
func TestApproveRefusesACollidingFact(t *testing.T) {
	t.Parallel()
	b := reviewSetup(t)
	draft, rv := b.submit(t, reviewFact("helix"), asyncReview())
	active, err := b.w.Create(b.ctx, b.tenant, reviewFact("vim"), b.ch)
	require.NoError(t, err, "a draft does not hold the fact's key")

	_, _, err = b.w.Approve(b.ctx, b.tenant, rv.ID, revise.Decision{Approver: "alice", Justification: "x"})
	ce := requireReviewConflict(t, err, revise.CodeActiveFactExists)
	require.Equal(t, []uuid.UUID{active.ID}, ce.RecordIDs)
	require.Equal(t, revise.ReviewPending, b.review(t, rv.ID).Status)
	require.Equal(t, memory.Draft, b.get(t, draft.ID).Status)
	require.Equal(t, 1, b.get(t, draft.ID).Version)

	_, _, err = b.w.Reject(b.ctx, b.tenant, rv.ID, revise.Decision{Approver: "alice", Justification: "vim stands", Reason: revise.ReasonContradiction})
	require.NoError(t, err)
}

// A submission composes with other writes in one transaction.
func TestSubmitForReviewInTx(t *testing.T) {
	t.Parallel()
	b := reviewSetup(t)
	err := b.w.InTx(b.ctx, func(ctx context.Context, tx *revise.Tx) error {
		if _, _, err := tx.SubmitForReview(ctx, b.tenant, reviewFact("helix"), b.ch, asyncReview()); err != nil {
			return err
		}
		return context.Canceled
	})
	require.ErrorIs(t, err, context.Canceled)
	var n int
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT (SELECT count(*) FROM reviews) + (SELECT count(*) FROM records)").Scan(&n))
	require.Zero(t, n, "a rolled-back submission leaves neither draft nor review")
}

func syncReview(sla time.Duration) revise.ReviewRequest {
	r := asyncReview()
	r.Tier, r.Risk, r.SLA = revise.TierSync, 0.8, sla
	return r
}

type awaited struct {
	rv  revise.Review
	err error
}

// await runs AwaitDecision in a goroutine of its own.
func (b *reviewBundle) await(ctx context.Context, id uuid.UUID, deadline time.Time) <-chan awaited {
	out := make(chan awaited, 1)
	go func() {
		rv, err := b.w.AwaitDecision(ctx, b.tenant, id, deadline)
		out <- awaited{rv, err}
	}()
	return out
}

// result waits for an await to return, failing the test if it does not
// within limit.
func result(t *testing.T, c <-chan awaited, limit time.Duration) awaited {
	t.Helper()
	select {
	case a := <-c:
		return a
	case <-time.After(limit):
		t.Fatalf("AwaitDecision did not return within %s", limit)
		return awaited{}
	}
}

// A sync-tier writer waits for the decision, which may come from anywhere
// that shares the database, and learns it.
func TestAwaitDecisionReturnsTheDecision(t *testing.T) {
	t.Parallel()
	b := reviewSetup(t)
	draft, rv := b.submit(t, reviewFact("helix"), syncReview(time.Minute))
	require.Equal(t, time.Minute, rv.SLADeadline.Sub(rv.CreatedAt))
	waiting := b.await(b.ctx, rv.ID, time.Time{})
	_, _, err := b.w.Approve(b.ctx, b.tenant, rv.ID, revise.Decision{Approver: "alice", Justification: "fine"})
	require.NoError(t, err)
	got := result(t, waiting, 10*time.Second)
	require.NoError(t, got.err)
	require.Equal(t, revise.ReviewApproved, got.rv.Status)
	require.Equal(t, memory.Active, b.get(t, draft.ID).Status)

	_, rv = b.submit(t, reviewFact("nano"), syncReview(time.Minute))
	waiting = b.await(b.ctx, rv.ID, time.Now().Add(time.Minute))
	_, _, err = b.w.Reject(b.ctx, b.tenant, rv.ID, revise.Decision{Approver: "alice", Justification: "no", Reason: revise.ReasonDuplicate})
	require.NoError(t, err)
	got = result(t, waiting, 10*time.Second)
	var re *revise.ReviewRejectedError
	require.ErrorAs(t, got.err, &re)
	require.Equal(t, "duplicate", re.Review.RejectionReason)

	// An async review's writer does not wait.
	_, rv = b.submit(t, reviewFact("micro"), asyncReview())
	_, err = b.w.AwaitDecision(b.ctx, b.tenant, rv.ID, time.Time{})
	requireReviewConflict(t, err, revise.CodeNotAllowed)
}

// At its deadline an undecided sync write is refused: the review expires,
// the draft is retracted, both audited, and no decision is taken after.
func TestAwaitDecisionFailsClosed(t *testing.T) {
	t.Parallel()
	b := reviewSetup(t)
	draft, rv := b.submit(t, reviewFact("helix"), syncReview(300*time.Millisecond))
	got := result(t, b.await(b.ctx, rv.ID, time.Time{}), 10*time.Second)
	var te *revise.ApprovalTimeoutError
	require.ErrorAs(t, got.err, &te)
	require.Equal(t, rv.ID, te.ReviewID)
	require.Equal(t, draft.ID, te.RecordID)
	require.Equal(t, rv.SLADeadline, te.Deadline)
	require.Equal(t, revise.ReviewExpired, got.rv.Status)

	stored := b.review(t, rv.ID)
	require.Equal(t, revise.ReviewExpired, stored.Status)
	require.Equal(t, revise.ApprovalActor, stored.DecidedBy)
	require.Equal(t, memory.Retracted, b.get(t, draft.ID).Status)
	entry := b.lastAudit(t, draft.ID)
	require.Equal(t, revise.ActionApprovalTimeout, entry.Action)
	require.Equal(t, revise.ApprovalActor, entry.Actor)
	_, _, err := b.w.Approve(b.ctx, b.tenant, rv.ID, revise.Decision{Approver: "alice", Justification: "late"})
	requireReviewConflict(t, err, revise.CodeNotPending)

	// The writer's own deadline, when earlier than the review's, is the
	// one it is refused at.
	_, rv = b.submit(t, reviewFact("nano"), syncReview(time.Hour))
	deadline := time.Now().Add(200 * time.Millisecond)
	got = result(t, b.await(b.ctx, rv.ID, deadline), 10*time.Second)
	require.ErrorAs(t, got.err, &te)
	require.Equal(t, deadline, te.Deadline)
	require.Equal(t, revise.ReviewExpired, b.review(t, rv.ID).Status)

	// A writer that stops waiting refuses its write too.
	draft, rv = b.submit(t, reviewFact("micro"), syncReview(time.Hour))
	ctx, cancel := context.WithCancel(b.ctx)
	waiting := b.await(ctx, rv.ID, time.Time{})
	cancel()
	got = result(t, waiting, 10*time.Second)
	require.ErrorIs(t, got.err, context.Canceled)
	require.Equal(t, revise.ReviewExpired, b.review(t, rv.ID).Status)
	require.Equal(t, memory.Retracted, b.get(t, draft.ID).Status)
}

// A sync review past its deadline takes no approval, even before its
// writer has refused it.
func TestApproveRefusesAnOverdueSyncReview(t *testing.T) {
	t.Parallel()
	b := reviewSetup(t)
	t0 := time.Now().UTC()
	b.setClock(t0)
	_, rv := b.submit(t, reviewFact("helix"), syncReview(time.Second))
	b.setClock(t0.Add(2 * time.Second))
	_, _, err := b.w.Approve(b.ctx, b.tenant, rv.ID, revise.Decision{Approver: "alice", Justification: "late"})
	requireReviewConflict(t, err, revise.CodeNotPending)
	require.Equal(t, revise.ReviewPending, b.review(t, rv.ID).Status)
}

// The escalation sweep escalates async reviews past their SLA once each,
// audited and counted, refuses sync writes left past their deadline, and
// reports the queue.
func TestEscalation(t *testing.T) {
	t.Parallel()
	b := reviewSetup(t)
	reg := prometheus.NewRegistry()
	esc := revise.NewEscalator(b.w, revise.EscalatorConfig{Registry: reg, BatchSize: 2})
	t0 := time.Now().UTC().Truncate(time.Second)
	b.setClock(t0)
	r := asyncReview()
	r.SLA = time.Hour
	var drafts []memory.Record
	var reviews []revise.Review
	for _, object := range []string{"a", "b", "c"} {
		d, rv := b.submit(t, reviewFact(object), r)
		drafts, reviews = append(drafts, d), append(reviews, rv)
	}
	late := asyncReview()
	late.SLA = 3 * time.Hour
	_, lateRV := b.submit(t, reviewFact("d"), late)
	syncDraft, syncRV := b.submit(t, reviewFact("e"), syncReview(time.Minute))

	b.setClock(t0.Add(30 * time.Minute))
	res, err := esc.Escalate(b.ctx)
	require.NoError(t, err)
	require.Equal(t, revise.Escalation{Expired: 1, Pending: 4, Oldest: t0}, res)
	require.Equal(t, revise.ReviewExpired, b.review(t, syncRV.ID).Status, "a sync review left past its deadline is refused")
	require.Equal(t, memory.Retracted, b.get(t, syncDraft.ID).Status)
	require.Equal(t, revise.ActionApprovalTimeout, b.lastAudit(t, syncDraft.ID).Action)

	b.setClock(t0.Add(2 * time.Hour))
	res, err = esc.Escalate(b.ctx)
	require.NoError(t, err)
	require.Equal(t, int64(3), res.Escalated, "in batches of 2: 2, then 1")
	require.Equal(t, int64(4), res.Pending)
	for i, rv := range reviews {
		got := b.review(t, rv.ID)
		require.Equal(t, revise.ReviewPending, got.Status, "an escalated review is still pending")
		require.NotNil(t, got.EscalatedAt)
		require.Equal(t, t0.Add(2*time.Hour), got.EscalatedAt.UTC())
		entry := b.lastAudit(t, drafts[i].ID)
		require.Equal(t, revise.ActionEscalate, entry.Action)
		require.Equal(t, revise.ApprovalActor, entry.Actor)
		require.Contains(t, entry.Rationale, rv.ID.String())
	}
	require.Nil(t, b.review(t, lateRV.ID).EscalatedAt)
	require.Equal(t, 3.0, metric(t, reg, "engram_review_escalations_total"))
	require.Equal(t, 4.0, metric(t, reg, "engram_review_queue_depth"))
	require.Equal(t, (2 * time.Hour).Seconds(), metric(t, reg, "engram_review_oldest_age_seconds"))

	// Escalation happens once; a decided review is not escalated.
	_, _, err = b.w.Approve(b.ctx, b.tenant, lateRV.ID, revise.Decision{Approver: "alice", Justification: "ok"})
	require.NoError(t, err)
	b.setClock(t0.Add(5 * time.Hour))
	res, err = esc.Escalate(b.ctx)
	require.NoError(t, err)
	require.Zero(t, res.Escalated)
	require.Equal(t, int64(3), res.Pending)
	require.Equal(t, 3.0, metric(t, reg, "engram_review_escalations_total"))
	require.Equal(t, 3.0, metric(t, reg, "engram_review_queue_depth"))
	require.Len(t, b.actions(t, drafts[0].ID), 3, "create, submit_for_review, escalate")

	// An escalated review may still be decided.
	_, _, err = b.w.Reject(b.ctx, b.tenant, reviews[0].ID, revise.Decision{Approver: "alice", Justification: "stale", Reason: revise.ReasonInsufficientEvidence})
	require.NoError(t, err)
}

// metric is the value of the gauge or counter name in reg.
func metric(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name {
			require.Len(t, f.GetMetric(), 1)
			m := f.GetMetric()[0]
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
