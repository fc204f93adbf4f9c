package revise

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/access"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/store"
)

// The review queue: the mechanism of the approval gate (write-path RFC
// §12.6). A write whose risk calls for a human is stored as a draft record,
// outside the active set and so invisible to retrieval, decay and the vector
// index, with a review row saying why ([Tx.SubmitForReview]). A reviewer
// approves it — the draft becomes active, and replaces the record its
// proposal names — or rejects it with a structured reason, and it is
// retracted ([Writer.Approve], [Writer.Reject]). An async review (§12.6.4)
// waits for its SLA and then escalates ([Escalator]); the writer of a sync
// one (§12.6.5) waits for the decision ([Writer.AwaitDecision]) until its
// deadline, when the write is refused: the review expires and the draft is
// retracted (fail-closed). Every step is audited on the draft record.
//
//	submit ─▶ pending ─┬─ approve ─▶ approved   (draft ─▶ active)
//	                   ├─ reject ──▶ rejected   (draft ─▶ retracted)
//	                   └─ deadline ▶ expired    (sync only; draft ─▶ retracted)
//	          pending ─── SLA passes ─▶ escalated (async; still pending)

// Tier is how a review holds its write back (write-path RFC §12.6.2).
type Tier string

// Review tiers. Writes of the auto tier are not reviewed.
const (
	// TierAsync: the writer goes on; the draft waits for a reviewer, and
	// escalates when its SLA passes (§12.6.4).
	TierAsync Tier = "async"
	// TierSync: the writer waits for the decision until the review's
	// deadline, when the write is refused (§12.6.5).
	TierSync Tier = "sync"
)

// Review statuses.
const (
	ReviewPending  = "pending"
	ReviewApproved = "approved"
	ReviewRejected = "rejected"
	// ReviewExpired: a sync review whose deadline passed undecided; its
	// write was refused.
	ReviewExpired = "expired"
)

// ReviewStatuses lists every review status.
var ReviewStatuses = []string{ReviewPending, ReviewApproved, ReviewRejected, ReviewExpired}

// RejectionReason is why a reviewer refused a write. Reasons are
// structured so that rejections feed the writing agents' learning loop
// (write-path RFC §12.6.7) and the rejection-reason distribution
// (§12.12.3).
type RejectionReason string

// Rejection reasons.
const (
	ReasonFactualError         RejectionReason = "factual_error"
	ReasonPolicyViolation      RejectionReason = "policy_violation"
	ReasonDuplicate            RejectionReason = "duplicate"
	ReasonInsufficientEvidence RejectionReason = "insufficient_evidence"
	ReasonContradiction        RejectionReason = "contradiction"
	ReasonOther                RejectionReason = "other"
)

// RejectionReasons lists every rejection reason.
var RejectionReasons = []RejectionReason{
	ReasonFactualError, ReasonPolicyViolation, ReasonDuplicate, ReasonInsufficientEvidence, ReasonContradiction, ReasonOther,
}

// Valid reports whether r is a rejection reason.
func (r RejectionReason) Valid() bool { return slices.Contains(RejectionReasons, r) }

// Review is a write held for a reviewer: its draft record, why, and what
// became of it.
type Review = store.Review

// Proposal is what approving a review does beyond activating its draft:
// Supersedes names a live record the draft replaces, atomically, as
// [Tx.Supersede] would (a supersession proposal, write-path RFC §12.2.4).
type Proposal = store.ReviewProposal

// Audit actions of the review queue.
const (
	ActionSubmitForReview = "submit_for_review"
	ActionApprove         = "approve"
	ActionReject          = "reject"
	ActionEscalate        = "escalate"
	// ActionApprovalTimeout: a sync review's deadline passed undecided and
	// its write was refused.
	ActionApprovalTimeout = "approval_timeout"
)

// ApprovalActor is who the audit log names for what the review queue does
// on its own: escalations and fail-closed refusals.
const ApprovalActor = "engramd:approval"

// CodeNotPending: the review has been decided (approved, rejected or
// expired), or its deadline passed; it takes no other decision.
const CodeNotPending = "not_pending"

// Defaults of [ApprovalConfig].
const (
	// DefaultSLA is how long an async review waits before it escalates
	// (write-path RFC §12.6.4: typically 24–72 hours).
	DefaultSLA = 24 * time.Hour
	// DefaultSyncMaxWait bounds how long a sync-tier write waits for its
	// decision.
	DefaultSyncMaxWait = 30 * time.Second
)

// PollInterval is how often [Writer.AwaitDecision] reads its review: the
// decision may come from any daemon sharing the database.
const PollInterval = 150 * time.Millisecond

// ApprovalConfig configures the review queue (write_path.approval). The
// zero value of each field is its documented default.
type ApprovalConfig struct {
	// SLA is how long an async review may stay undecided before it
	// escalates; [DefaultSLA] when zero.
	SLA time.Duration `yaml:"sla"`
	// SyncMaxWait bounds how long a sync-tier write waits for its decision
	// before it is refused (fail-closed); [DefaultSyncMaxWait] when zero.
	SyncMaxWait time.Duration `yaml:"sync_max_wait"`
}

// Validate names the first field that is not valid.
func (c ApprovalConfig) Validate() error {
	switch {
	case c.SLA < 0:
		return errors.New("sla: must not be negative")
	case c.SyncMaxWait < 0:
		return errors.New("sync_max_wait: must not be negative")
	}
	return nil
}

// SLAFor is the configured [ReviewRequest.SLA] of a review of tier: SLA
// for an async review, SyncMaxWait for a sync one, whose SLA is the
// deadline its writer waits until.
func (c ApprovalConfig) SLAFor(tier Tier) time.Duration {
	if tier == TierSync {
		return cmp.Or(c.SyncMaxWait, DefaultSyncMaxWait)
	}
	return cmp.Or(c.SLA, DefaultSLA)
}

// ReviewRequest is why a write is held for review, for the reviewer: the
// approval gate's tier, risk score R(w) and factor values (write-path RFC
// §12.6.2), the reasons (a contradiction, weak evidence, …) and what
// approving should do beyond activating the draft.
type ReviewRequest struct {
	Tier    Tier
	Risk    float64
	Factors map[string]float64
	Reasons []string
	// Proposal, when set, names the record approving supersedes.
	Proposal *Proposal
	// SLA is how long the review may wait: an async review escalates when
	// it passes, a sync one is refused. Zero means [ApprovalConfig]'s
	// default for the tier; the approval gate passes the configured one
	// ([ApprovalConfig.SLAFor]). It is stored with the review as its
	// deadline, so every daemon sharing the database agrees on it.
	SLA time.Duration
}

// check validates a review request; its pointers are under /review.
func (r ReviewRequest) check() error {
	var bad []schemas.Violation
	if r.Tier != TierAsync && r.Tier != TierSync {
		bad = append(bad, schemas.Violation{Pointer: "/review/tier", Message: "must be async or sync"})
	}
	if math.IsNaN(r.Risk) || math.IsInf(r.Risk, 0) || r.Risk < 0 {
		bad = append(bad, schemas.Violation{Pointer: "/review/risk", Message: "must be a number of at least 0"})
	}
	for _, k := range sortedKeys(r.Factors) {
		if v := r.Factors[k]; math.IsNaN(v) || math.IsInf(v, 0) {
			bad = append(bad, schemas.Violation{Pointer: "/review/factors/" + k, Message: "must be a finite number"})
		}
	}
	for i, reason := range r.Reasons {
		if strings.TrimSpace(reason) == "" {
			bad = append(bad, schemas.Violation{Pointer: fmt.Sprintf("/review/reasons/%d", i), Message: "must not be empty"})
		}
	}
	if r.Proposal != nil && r.Proposal.Supersedes == uuid.Nil {
		bad = append(bad, schemas.Violation{Pointer: "/review/proposal/supersedes", Message: "is required: the record approving supersedes"})
	}
	if r.SLA < 0 {
		bad = append(bad, schemas.Violation{Pointer: "/review/sla", Message: "must not be negative"})
	}
	if len(bad) > 0 {
		return &schemas.ValidationError{Violations: bad}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Decision is a reviewer's decision: who decides (the audit actor, as
// [Change.Actor] is for a revision), why, and for a rejection the
// structured reason.
type Decision struct {
	Approver      string
	Justification string
	// Reason is a rejection's reason; an approval has none.
	Reason RejectionReason
	// Principal and Rules are the key that decides, and the access rules
	// in force: a review decision is a validation annotation
	// ([access.OpAnnotate]). A nil Principal is the system's decision.
	Principal *access.Principal
	Rules     []access.Rule
}

// maxJustification bounds a decision's justification, in bytes.
const maxJustification = 4096

func (d Decision) check(reject bool) error {
	if d.Approver == "" {
		return errors.New("decision has no approver")
	}
	var bad []schemas.Violation
	switch {
	case strings.TrimSpace(d.Justification) == "":
		bad = append(bad, schemas.Violation{Pointer: "/justification", Message: "is required: why you decide so"})
	case len(d.Justification) > maxJustification:
		bad = append(bad, schemas.Violation{Pointer: "/justification", Message: fmt.Sprintf("must be at most %d bytes", maxJustification)})
	}
	if reject && !d.Reason.Valid() {
		names := make([]string, len(RejectionReasons))
		for i, r := range RejectionReasons {
			names[i] = string(r)
		}
		bad = append(bad, schemas.Violation{Pointer: "/reason", Message: "must be one of " + strings.Join(names, ", ")})
	}
	if !reject && d.Reason != "" {
		bad = append(bad, schemas.Violation{Pointer: "/reason", Message: "is a rejection's: an approval has none"})
	}
	if len(bad) > 0 {
		return &schemas.ValidationError{Violations: bad}
	}
	return nil
}

// ApprovalTimeoutError is a sync-tier write refused because its review was
// not decided by its deadline (write-path RFC §12.6.5, fail-closed): the
// review expired and the draft was retracted.
type ApprovalTimeoutError struct {
	ReviewID, RecordID uuid.UUID
	Deadline           time.Time
}

func (e *ApprovalTimeoutError) Error() string {
	return fmt.Sprintf("review %s had no decision by its deadline %s: the write of record %s is refused",
		e.ReviewID, e.Deadline.Format(time.RFC3339), e.RecordID)
}

// ReviewRejectedError is a sync-tier write a reviewer rejected; the review says
// why.
type ReviewRejectedError struct{ Review Review }

func (e *ReviewRejectedError) Error() string {
	detail := fmt.Sprintf("review %s rejected the write of record %s (%s)", e.Review.ID, e.Review.RecordID, e.Review.RejectionReason)
	if e.Review.Justification != "" {
		detail += ": " + e.Review.Justification
	}
	return detail
}

// SubmitForReview stores rec as a draft — validated, defaulted and audited
// exactly as [Tx.Create] stores a new record, but outside the active set —
// and queues its review, audited as submit_for_review. The draft is
// invisible to retrieval, decay and the vector index until approved. A
// proposal must name a live, revisable record of rec's type.
func (t *Tx) SubmitForReview(ctx context.Context, tenant string, rec memory.Record, ch Change, r ReviewRequest) (memory.Record, Review, error) {
	if err := checkChange(ch); err != nil {
		return memory.Record{}, Review{}, err
	}
	if err := r.check(); err != nil {
		return memory.Record{}, Review{}, err
	}
	if p := r.Proposal; p != nil {
		old, err := t.get(ctx, tenant, p.Supersedes)
		if errors.Is(err, store.ErrNotFound) {
			return memory.Record{}, Review{}, &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: "/review/proposal/supersedes", Message: "no such record"}}}
		}
		if err != nil {
			return memory.Record{}, Review{}, err
		}
		if err := checkRevisable(old, 0); err != nil {
			return memory.Record{}, Review{}, err
		}
		if rec.Type != old.Type {
			return memory.Record{}, Review{}, &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: "/review/proposal/supersedes",
				Message: fmt.Sprintf("names %s: a draft supersedes only a record of its own type", old.Type.ARecord())}}}
		}
	}
	rec, err := t.create(ctx, tenant, rec, memory.Draft, "", ch)
	if err != nil {
		return memory.Record{}, Review{}, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return memory.Record{}, Review{}, fmt.Errorf("new review id: %w", err)
	}
	now := t.w.clock()
	rv := Review{
		ID: id, RecordID: rec.ID, Tier: string(r.Tier), Status: ReviewPending, Risk: r.Risk,
		RiskFactors: r.Factors, Reasons: r.Reasons, Proposal: r.Proposal, AgentID: rec.AgentID,
		CreatedAt: now, SLADeadline: now.Add(ApprovalConfig{}.SLAFor(r.Tier)),
	}
	if r.SLA > 0 {
		rv.SLADeadline = now.Add(r.SLA).Truncate(time.Microsecond)
	}
	if rv.RiskFactors == nil {
		rv.RiskFactors = map[string]float64{}
	}
	if rv.Reasons == nil {
		rv.Reasons = []string{}
	}
	if err := store.InsertReview(ctx, t.tx, tenant, rv); err != nil {
		return memory.Record{}, Review{}, err
	}
	why := fmt.Sprintf("%s review %s, risk %.2f", rv.Tier, rv.ID, rv.Risk)
	if len(rv.Reasons) > 0 {
		why += ": " + strings.Join(rv.Reasons, "; ")
	}
	if err := t.audit(ctx, tenant, rec, ActionSubmitForReview, ch.because(why, nil)); err != nil {
		return memory.Record{}, Review{}, err
	}
	return rec, rv, nil
}

// SubmitForReview runs [Tx.SubmitForReview] in a transaction of its own.
func (w *Writer) SubmitForReview(ctx context.Context, tenant string, rec memory.Record, ch Change, r ReviewRequest) (memory.Record, Review, error) {
	var rv Review
	err := w.InTx(ctx, func(ctx context.Context, tx *Tx) error {
		var err error
		rec, rv, err = tx.SubmitForReview(ctx, tenant, rec, ch, r)
		return err
	})
	return rec, rv, err
}

// lockPending locks a review that must be pending.
func (t *Tx) lockPending(ctx context.Context, tenant string, id uuid.UUID) (Review, error) {
	rv, err := store.LockReview(ctx, t.tx, tenant, id)
	if err != nil {
		return rv, err
	}
	if rv.Status != ReviewPending {
		return rv, conflict(CodeNotPending, []uuid.UUID{rv.RecordID}, "review %s is already %s", id, rv.Status)
	}
	return rv, nil
}

// Approve promotes a pending review's draft to the active set: a revision
// audited as approve, naming the approver, with the justification as its
// rationale; the review records who approved, when and why, and so does
// the record's provenance stamp, signed again. A proposal's
// record is superseded by the draft in the same transaction. A decided
// review, or a sync one past its deadline, is a [CodeNotPending] conflict;
// a fact whose approval would collide with an active fact is a
// [CodeActiveFactExists] conflict, and the review stays pending.
func (t *Tx) Approve(ctx context.Context, tenant string, id uuid.UUID, d Decision) (Review, memory.Record, error) {
	if err := d.check(false); err != nil {
		return Review{}, memory.Record{}, err
	}
	rv, err := t.lockPending(ctx, tenant, id)
	if err != nil {
		return rv, memory.Record{}, err
	}
	now := t.w.clock()
	if rv.Tier == string(TierSync) && !now.Before(rv.SLADeadline) {
		return rv, memory.Record{}, conflict(CodeNotPending, []uuid.UUID{rv.RecordID},
			"sync review %s passed its deadline %s undecided: its write is refused", id, rv.SLADeadline.Format(time.RFC3339))
	}
	rec, err := t.lock(ctx, tenant, rv.RecordID)
	if err != nil {
		return rv, memory.Record{}, err
	}
	if rec.Status != memory.Draft {
		return rv, memory.Record{}, conflict(CodeNotLive, []uuid.UUID{rec.ID}, "record %s is %s, no longer a draft to approve", rec.ID, rec.Status)
	}
	ch := Change{Actor: d.Approver, Rationale: d.Justification, Principal: d.Principal, Rules: d.Rules}
	var old *memory.Record
	if p := rv.Proposal; p != nil {
		o, err := t.lockRevisable(ctx, tenant, p.Supersedes, 0)
		if err != nil {
			return rv, memory.Record{}, err
		}
		if o.Type == memory.Semantic {
			if rec.Payload, err = setRevision(rec.Payload, func(r *memory.Revision) { r.Supersedes = o.ID.String() }); err != nil {
				return rv, memory.Record{}, err
			}
			if o.Payload, err = setRevision(o.Payload, func(r *memory.Revision) { r.SupersededBy = rec.ID.String() }); err != nil {
				return rv, memory.Record{}, err
			}
		}
		// Carrying out the proposal is part of the decision, a
		// validation annotation (write-path RFC §12.8.2): the approver
		// needs the right to decide on the record it replaces, not to
		// write it.
		if err := t.authorize(tenant, o, ActionApprove, ch); err != nil {
			return rv, memory.Record{}, err
		}
		carried := ch
		carried.Principal = nil
		// The old record leaves the active set first: a fact it replaces
		// must not collide with the draft's activation.
		if err := t.leave(ctx, tenant, &o, memory.Superseded, ActionSupersede, carried); err != nil {
			return rv, memory.Record{}, err
		}
		old = &o
	}
	rec.Status = memory.Active
	if rec.Type == memory.Semantic {
		if rec.Payload, err = setRevision(rec.Payload, func(r *memory.Revision) { r.Status = revisionStatus(memory.Active) }); err != nil {
			return rv, memory.Record{}, err
		}
	}
	if err := t.revise(ctx, tenant, &rec); err != nil {
		return rv, memory.Record{}, err
	}
	if err := t.audit(ctx, tenant, rec, ActionApprove, ch); err != nil {
		return rv, memory.Record{}, err
	}
	// The approval is part of the record's provenance (write-path RFC
	// §12.4.2, §12.6.6), and its adjusted confidence counts it (§12.4.4).
	if err := t.restamp(ctx, tenant, rec, decision(ApprovalApproved, d.Approver, d.Justification, now)); err != nil {
		return rv, memory.Record{}, err
	}
	// The write its agent's reputation counted as not accepted while it
	// waited is accepted now (§12.11.5).
	t.countLater(tenant, rec, store.ReputationDelta{Accepted: 1})
	if old != nil {
		if err := t.addRelation(ctx, tenant, rec.ID, memory.Relation{Predicate: memory.Supersedes, TargetID: old.ID}); err != nil {
			return rv, memory.Record{}, err
		}
	}
	rv.Status, rv.DecidedAt, rv.DecidedBy, rv.Justification = ReviewApproved, &now, d.Approver, d.Justification
	if err := store.DecideReview(ctx, t.tx, tenant, rv); err != nil {
		return rv, memory.Record{}, err
	}
	if rec, err = t.get(ctx, tenant, rec.ID); err != nil {
		return rv, memory.Record{}, err
	}
	rv.Record = &rec
	return rv, rec, nil
}

// Approve runs [Tx.Approve] in a transaction of its own.
func (w *Writer) Approve(ctx context.Context, tenant string, id uuid.UUID, d Decision) (Review, memory.Record, error) {
	var (
		rv  Review
		rec memory.Record
	)
	err := w.InTx(ctx, func(ctx context.Context, tx *Tx) error {
		var err error
		rv, rec, err = tx.Approve(ctx, tenant, id, d)
		return err
	})
	return rv, rec, err
}

// Reject refuses a pending review's write: the draft is retracted, audited
// as reject with the reason and justification as its rationale, and the
// review records who rejected it, when, why and on which structured reason
// (write-path RFC §12.6.7); so does the record's provenance stamp, signed
// again, and the rejection counts in its agent's reputation. A decided
// review is a [CodeNotPending] conflict.
func (t *Tx) Reject(ctx context.Context, tenant string, id uuid.UUID, d Decision) (Review, memory.Record, error) {
	if err := d.check(true); err != nil {
		return Review{}, memory.Record{}, err
	}
	rv, err := t.lockPending(ctx, tenant, id)
	if err != nil {
		return rv, memory.Record{}, err
	}
	ch := Change{Actor: d.Approver, Rationale: string(d.Reason) + ": " + d.Justification, Principal: d.Principal, Rules: d.Rules}
	rec, err := t.refuse(ctx, tenant, rv, ActionReject, ch)
	if err != nil {
		return rv, rec, err
	}
	now := t.w.clock()
	// The rejection is part of the record's provenance (§12.4.2), and
	// counts against its agent (§12.6.7: rejections feed the agent's
	// learning loop; §12.11.5).
	if err := t.restamp(ctx, tenant, rec, decision(ApprovalRejected, d.Approver, string(d.Reason)+": "+d.Justification, now)); err != nil {
		return rv, rec, err
	}
	t.countLater(tenant, rec, store.ReputationDelta{Rejected: 1})
	rv.Status, rv.DecidedAt, rv.DecidedBy = ReviewRejected, &now, d.Approver
	rv.Justification, rv.RejectionReason = d.Justification, string(d.Reason)
	if err := store.DecideReview(ctx, t.tx, tenant, rv); err != nil {
		return rv, rec, err
	}
	rv.Record = &rec
	return rv, rec, nil
}

// Reject runs [Tx.Reject] in a transaction of its own.
func (w *Writer) Reject(ctx context.Context, tenant string, id uuid.UUID, d Decision) (Review, memory.Record, error) {
	var (
		rv  Review
		rec memory.Record
	)
	err := w.InTx(ctx, func(ctx context.Context, tx *Tx) error {
		var err error
		rv, rec, err = tx.Reject(ctx, tenant, id, d)
		return err
	})
	return rv, rec, err
}

// refuse retracts a review's draft, audited as action; a record that is
// no longer a draft (deleted meanwhile) keeps its status and gets the
// audit entry alone.
func (t *Tx) refuse(ctx context.Context, tenant string, rv Review, action string, ch Change) (memory.Record, error) {
	rec, err := t.lock(ctx, tenant, rv.RecordID)
	if err != nil {
		return rec, err
	}
	if rec.Status == memory.Draft {
		err = t.leave(ctx, tenant, &rec, memory.Retracted, action, ch)
	} else {
		err = t.audit(ctx, tenant, rec, action, ch)
	}
	if err != nil {
		return rec, err
	}
	return t.get(ctx, tenant, rec.ID)
}

// expire refuses a pending sync review's write for want of a decision
// (fail-closed): the review expires and its draft is retracted, audited as
// approval_timeout. A review decided meanwhile, or an async one, is
// returned as it is, and
// expired reports whether this call expired it.
func (t *Tx) expire(ctx context.Context, tenant string, id uuid.UUID, why string) (rv Review, expired bool, err error) {
	rv, err = store.LockReview(ctx, t.tx, tenant, id)
	if err != nil || rv.Status != ReviewPending || rv.Tier != string(TierSync) {
		return rv, false, err
	}
	rec, err := t.refuse(ctx, tenant, rv, ActionApprovalTimeout, Change{Actor: ApprovalActor, Rationale: why})
	if err != nil {
		return rv, false, err
	}
	now := t.w.clock()
	rv.Status, rv.DecidedAt, rv.DecidedBy, rv.Justification = ReviewExpired, &now, ApprovalActor, why
	if err := store.DecideReview(ctx, t.tx, tenant, rv); err != nil {
		return rv, false, err
	}
	rv.Record = &rec
	return rv, true, nil
}

// expireNow runs expire in a transaction of its own, even when ctx is
// cancelled: a writer that stops waiting refuses its write.
func (w *Writer) expireNow(ctx context.Context, tenant string, id uuid.UUID, why string) (rv Review, expired bool, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err = w.InTx(ctx, func(ctx context.Context, tx *Tx) error {
		var err error
		rv, expired, err = tx.expire(ctx, tenant, id, why)
		return err
	})
	return rv, expired, err
}

// AwaitDecision blocks a sync-tier write until its review is decided
// (write-path RFC §12.6.5), reading the review every [PollInterval], so the
// decision may come through any daemon sharing the database. It waits until
// deadline or the review's own deadline (set from the configured sync wait
// when it was submitted), whichever is first; a zero deadline means the
// review's. It returns the review and nil once approved, a
// [*ReviewRejectedError] once rejected, and at the deadline refuses the write
// (fail-closed) — the review expires, the draft is retracted — and returns
// an [*ApprovalTimeoutError]. A caller that goes away (ctx done) refuses
// its write the same way and gets ctx's error. An async review is not
// waited for: [CodeNotAllowed].
func (w *Writer) AwaitDecision(ctx context.Context, tenant string, id uuid.UUID, deadline time.Time) (Review, error) {
	// Read even if ctx is already done: a writer gone before its first
	// look refuses its write too, and only a sync review's may be refused.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	rv, err := store.GetReview(rctx, w.db, tenant, id)
	cancel()
	if err != nil {
		return rv, err
	}
	if rv.Tier != string(TierSync) {
		return rv, conflict(CodeNotAllowed, []uuid.UUID{rv.RecordID}, "review %s is async: its writer does not wait for it", id)
	}
	if deadline.IsZero() || deadline.After(rv.SLADeadline) {
		deadline = rv.SLADeadline
	}
	timer := time.NewTimer(PollInterval)
	defer timer.Stop()
	for {
		if rv.Status != ReviewPending {
			return rv, decided(rv, deadline)
		}
		if !w.clock().Before(deadline) {
			rv, _, err := w.expireNow(ctx, tenant, id, fmt.Sprintf("no decision by the deadline %s: the write is refused (fail-closed)", deadline.Format(time.RFC3339Nano)))
			if err != nil {
				return rv, err
			}
			return rv, decided(rv, deadline)
		}
		if ctx.Err() != nil {
			rv, _, err := w.expireNow(ctx, tenant, id, "the writer stopped waiting for the decision: the write is refused (fail-closed)")
			if err != nil {
				return rv, err
			}
			if rv.Status == ReviewApproved || rv.Status == ReviewRejected {
				return rv, decided(rv, deadline)
			}
			return rv, fmt.Errorf("await review %s: %w", id, ctx.Err())
		}
		timer.Reset(min(PollInterval, deadline.Sub(w.clock())))
		select {
		case <-ctx.Done():
			continue
		case <-timer.C:
		}
		next, err := store.GetReview(ctx, w.db, tenant, id)
		switch {
		case err == nil:
			rv = next
		case ctx.Err() == nil:
			return rv, err
		}
	}
}

// decided is what a decided review means to its waiting writer.
func decided(rv Review, deadline time.Time) error {
	switch rv.Status {
	case ReviewApproved:
		return nil
	case ReviewRejected:
		return &ReviewRejectedError{Review: rv}
	}
	return &ApprovalTimeoutError{ReviewID: rv.ID, RecordID: rv.RecordID, Deadline: deadline}
}
