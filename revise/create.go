package revise

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/seal"
	"github.com/engram-dev/engram/store"
)

// Create validates rec, fills in what it leaves out (id, times, status,
// lifecycle defaults for its type) and admits it through the gates of its
// layer ([Tx.Admit]); it returns the record that stands for the write: the
// new one, or the live one that absorbed it.
func (w *Writer) Create(ctx context.Context, tenant string, rec memory.Record, ch Change) (memory.Record, error) {
	a, err := w.Admit(ctx, tenant, rec, ch)
	return a.Record, err
}

// Admit runs [Tx.Admit] in a transaction of its own. A write the approval
// gate puts in the sync tier waits, after the draft and its review have
// committed, for a reviewer's decision until its deadline (write-path RFC
// §12.6.5): approved, the answer is the record, active; rejected, a
// [*ReviewRejectedError]; undecided at the deadline, an
// [*ApprovalTimeoutError], the draft retracted (fail-closed).
func (w *Writer) Admit(ctx context.Context, tenant string, rec memory.Record, ch Change) (Admission, error) {
	var a Admission
	err := w.InTx(ctx, func(ctx context.Context, tx *Tx) error {
		tx.canWait = true
		var err error
		a, err = tx.Admit(ctx, tenant, rec, ch)
		return err
	})
	if nerr := w.noteRefusal(ctx, w.db, tenant, rec, err); nerr != nil {
		return Admission{}, nerr
	}
	if err != nil || a.Review == nil || Tier(a.Review.Tier) != TierSync {
		return a, err
	}
	rv, err := w.AwaitDecision(ctx, tenant, a.Review.ID, a.Review.SLADeadline)
	if err != nil {
		return Admission{}, err
	}
	a.Review = &rv
	if a.Record, err = store.Get(ctx, w.db, tenant, a.Record.ID); err != nil {
		return Admission{}, err
	}
	if err := w.cfg.Sealer.OpenRecord(ctx, tenant, &a.Record); err != nil {
		return Admission{}, err
	}
	a.Outcome = Created
	return a, nil
}

// Create is [Writer.Create] in the transaction.
func (t *Tx) Create(ctx context.Context, tenant string, rec memory.Record, ch Change) (memory.Record, error) {
	a, err := t.Admit(ctx, tenant, rec, ch)
	return a.Record, err
}

// CreateMany is [Tx.Create] for many new records at once, in order; it
// returns the records that stand for the writes. The records whose gates
// read nothing of memory — episodes and working memory that name no
// relations and cite no records: [Tx.Admit] runs the contradiction, dedup
// and approval gates and consults reputation for the durable layers only,
// and working memory is written freely (write-path RFC §12.1.4) — pass
// the schema, evidence and provenance gates one by one, in memory, exactly
// as Admit runs them, and are then written together, with their audit
// entries and stamps, in one round trip: the policy plane opens a batch's
// new threads so. Any other record is admitted by [Tx.Admit].
func (t *Tx) CreateMany(ctx context.Context, tenant string, recs []memory.Record, ch Change) ([]memory.Record, error) {
	if err := checkChange(ch); err != nil {
		return nil, err
	}
	out := make([]memory.Record, len(recs))
	news := make([]store.NewRecord, 0, len(recs))
	for i, rec := range recs {
		if !passesInMemory(rec) {
			a, err := t.Admit(ctx, tenant, rec, ch)
			if err != nil {
				return nil, err
			}
			out[i] = a.Record
			continue
		}
		n, err := t.admitInMemory(ctx, tenant, rec, ch)
		if err != nil {
			return nil, err
		}
		if err := t.authorize(tenant, n.Record, ActionCreate, ch); err != nil {
			return nil, err
		}
		out[i], news = n.Record, append(news, n)
	}
	if err := t.insertNewRecords(ctx, tenant, news); err != nil {
		return nil, written(tenant, memory.Record{}, err)
	}
	for _, n := range news {
		t.audited = append(t.audited, audited{layer: n.Record.Type, action: ActionCreate})
		t.w.metrics.writes.WithLabelValues(string(n.Record.Type), string(Created)).Inc()
	}
	return out, nil
}

// passesInMemory reports whether rec's gates read nothing of memory: a
// record of a layer without contradiction, dedup or approval gates, no
// reputation to consult, no relation targets to check and no cited records
// to follow for the evidence and cycle checks.
func passesInMemory(rec memory.Record) bool {
	if rec.Type != memory.Episodic && rec.Type != memory.Working || len(rec.Relations) > 0 {
		return false
	}
	for _, s := range rec.Provenance.Sources {
		if s.Kind == SourceRecord {
			return false
		}
	}
	return true
}

// admitInMemory runs the gates of a record [passesInMemory] holds to —
// schema, evidence, provenance — and returns what [Tx.insertNew] would
// write for it.
func (t *Tx) admitInMemory(ctx context.Context, tenant string, rec memory.Record, ch Change) (store.NewRecord, error) {
	w := t.w
	inherited := rec.Lifecycle.Decay.Curve == "" && rec.Lifecycle.Decay.HalfLifeSeconds == 0
	if err := w.checkKeeping(rec, ch, ""); err != nil {
		return store.NewRecord{}, err
	}
	if err := w.timed(GateSchema, func() error { return w.prepare(&rec, memory.Active, "") }); err != nil {
		return store.NewRecord{}, err
	}
	var ev evidence
	if err := w.timed(GateEvidence, func() error {
		var err error
		ev, err = t.checkEvidence(ctx, tenant, rec)
		return err
	}); err != nil {
		return store.NewRecord{}, err
	}
	if len(ev.Records) > 0 {
		return store.NewRecord{}, fmt.Errorf("record %s cites records: it cannot pass its gates in memory", rec.ID)
	}
	n := store.NewRecord{Record: rec, Inherited: inherited, Audit: store.AuditRow{
		RecordID: rec.ID, Version: rec.Version, Action: ActionCreate, Actor: ch.Actor, Rationale: ch.Rationale, Evidence: ch.Evidence,
	}}
	if rec.Type == memory.Working {
		return n, nil // its audit entry is its provenance, as in insertNew
	}
	err := w.timed(GateProvenance, func() error {
		row, err := w.stampRow(tenant, rec, ch, ev, ApprovalNotRequired, 0)
		n.Provenance = &row
		return err
	})
	return n, err
}

// Admit passes a new record through the gates of its layer, in order —
// schema, evidence, contradiction, dedup, provenance, approval (write-path
// RFC §12.1.2) — and writes what they decide: a new record, nothing (a
// duplicate absorbed), the next version of the record it duplicates
// (merged), contested records, or a draft for review. A gate's refusal is a
// [*RejectedError] and nothing is written.
//
// The write counts for its agent's reputation (§12.11.5) when it is
// admitted; a refusal rolls the caller's transaction back with it, so the
// callers that answer for a refusal — [Writer.Admit], [Tx.ObserveFact] —
// count it after.
func (t *Tx) Admit(ctx context.Context, tenant string, rec memory.Record, ch Change) (Admission, error) {
	a, err := t.admit(ctx, tenant, rec, ch)
	layer := string(rec.Type)
	var re *RejectedError
	switch {
	case errors.As(err, &re):
		t.w.metrics.writes.WithLabelValues(layer, "rejected").Inc()
		t.w.metrics.rejections.WithLabelValues(re.Gate, re.Reason).Inc()
	case err == nil:
		t.w.metrics.writes.WithLabelValues(layer, string(a.Outcome)).Inc()
		d := store.ReputationDelta{}
		if a.Outcome != Queued {
			d.Accepted = 1
		}
		if len(a.Replaced) > 0 || len(a.Contested) > 0 || a.contradicts {
			d.Contradictions = 1
		}
		t.noteLater(tenant, rec, d)
	}
	return a, err
}

// noteRefusal counts a refused write for its agent's reputation, on db,
// after the refusal rolled back the write's transaction.
func (w *Writer) noteRefusal(ctx context.Context, db pg.DBTX, tenant string, rec memory.Record, err error) error {
	var re *RejectedError
	if !errors.As(err, &re) {
		return nil
	}
	d := store.ReputationDelta{Rejected: 1}
	if re.Reason == string(ReasonContradiction) {
		d.Contradictions = 1
	}
	return w.note(ctx, db, tenant, rec, d)
}

func (t *Tx) admit(ctx context.Context, tenant string, rec memory.Record, ch Change) (Admission, error) {
	if err := checkChange(ch); err != nil {
		return Admission{}, err
	}
	if err := precheck(rec, ch); err != nil {
		return Admission{}, err
	}
	if err := t.w.checkKeeping(rec, ch, ""); err != nil {
		return Admission{}, err
	}
	w, g := t.w, t.w.cfg.Gates
	inherited := rec.Lifecycle.Decay.Curve == "" && rec.Lifecycle.Decay.HalfLifeSeconds == 0
	if err := w.timed(GateSchema, func() error {
		if err := w.prepare(&rec, memory.Active, ""); err != nil {
			return err
		}
		return t.checkRelations(ctx, tenant, rec.Relations, "")
	}); err != nil {
		return Admission{}, err
	}
	a := Admission{Outcome: Created}
	var queue bool
	var proposal []uuid.UUID
	durable := rec.Type == memory.Semantic || rec.Type == memory.Competence || rec.Type == memory.PlanGraph

	var ev evidence
	if err := w.timed(GateEvidence, func() error {
		var err error
		if ev, err = t.checkEvidence(ctx, tenant, rec); err != nil {
			return err
		}
		// Evidence below the layer's minimum authority (§12.11.3) is a
		// question for a reviewer.
		if least, ok := g.Evidence.MinAuthority[rec.Type]; ok && durable && ev.Mean < least {
			queue = true
			a.Reasons = append(a.Reasons, fmt.Sprintf("its evidence's authority %.2f is below the %.2f %s needs", ev.Mean, least, rec.Type.ARecord()))
		}
		return nil
	}); err != nil {
		return Admission{}, err
	}

	var c contradiction
	if rec.Type == memory.Semantic {
		if err := w.timed(GateContradiction, func() error {
			var err error
			c, err = t.findContradictions(ctx, tenant, rec)
			return err
		}); err != nil {
			return Admission{}, err
		}
	}

	if durable && !g.Dedup.Off {
		var dup Admission
		var done bool
		var conflict *memory.Record
		if err := w.timed(GateDedup, func() error {
			var err error
			dup, done, conflict, err = t.dedup(ctx, tenant, rec, ch)
			return err
		}); err != nil || done {
			return dup, err
		}
		if conflict != nil {
			// Same structure, other content: a conflict for a reviewer,
			// proposed to replace the record in force (§12.3.3).
			queue, proposal = true, []uuid.UUID{conflict.ID}
			a.Reasons = append(a.Reasons, fmt.Sprintf("has the structure of record %s with other content: proposed to supersede it", conflict.ID))
		}
	}

	if err := w.timed(GateProvenance, func() error { return t.checkCycle(ctx, tenant, rec, ev, nil) }); err != nil {
		return Admission{}, err
	}

	if len(c.conflicts) > 0 {
		switch g.policyFor(rec.Scope) {
		case PolicyReview:
			// §12.2.4: a newcomer more credible than what it contradicts
			// goes to a reviewer with a proposal to supersede it; a less
			// credible one is refused with the contradiction report.
			if mine := w.adjusted(rec.Confidence, ev, false); mine <= c.maxAdjusted {
				return Admission{}, reject(GateContradiction, string(ReasonContradiction), c.ids(),
					"contradicts %d live fact(s) of higher or equal adjusted confidence (%.2f against %.2f)", len(c.conflicts), mine, c.maxAdjusted)
			}
			queue, proposal, a.contradicts = true, c.ids(), true
			a.Reasons = append(a.Reasons, fmt.Sprintf("contradicts %d live fact(s) with a higher adjusted confidence: proposed to supersede them", len(c.conflicts)))
		case PolicySupersede:
			return t.replace(ctx, tenant, rec, inherited, ch, ev, c, "superseded by a contradicting fact (contradiction policy supersede)")
		case PolicyContest:
			return t.contestWith(ctx, tenant, rec, ch, c, "a new observation contradicts this fact")
		case PolicyFork:
			if c.sameConditions {
				return t.contestWith(ctx, tenant, rec, ch, c, "a new observation contradicts this fact")
			}
		case PolicyEvidence:
			done, decided, err := t.byEvidence(ctx, tenant, rec, inherited, ch, ev, c)
			if err != nil || done {
				return decided, err
			}
			a.Reasons = append(a.Reasons, decided.Reasons...)
		}
	}

	var risk *Risk
	if err := w.timed(GateApproval, func() error {
		why, err := t.lowReputation(ctx, tenant, rec)
		if err != nil {
			return err
		}
		if why != "" {
			queue = true
			a.Reasons = append(a.Reasons, why)
		}
		if !durable || !g.Approval.Enabled && !queue {
			return nil
		}
		// A draft's review says why it is one: its reasons, and its risk
		// and the factors of R(w) (§12.6.2) even where the approval gate
		// is off and something else sent it.
		if risk, err = t.risk(ctx, tenant, rec, ev, c); err != nil {
			return err
		}
		if !g.Approval.Enabled {
			// Approval off: nobody waits for a person on this write.
			risk.Tier = TierAsync
			return nil
		}
		if risk.Tier != TierAuto {
			queue = true
			a.Reasons = append(a.Reasons, fmt.Sprintf("risk %.2f is at or above the review threshold", risk.Score))
		}
		return nil
	}); err != nil {
		return Admission{}, err
	}
	a.Risk = risk
	if queue {
		return t.queue(ctx, tenant, rec, ch, a, proposal)
	}
	if err := t.insertNew(ctx, tenant, &rec, inherited, ch, ev, ApprovalNotRequired, risk.score()); err != nil {
		return Admission{}, err
	}
	a.Record = rec
	return a, nil
}

// create stores a new record of a revision operation (supersede, fork,
// contest, merge) in the status it starts in: schema, evidence and
// provenance gates, with the records it revises as its lineage for the
// cycle check. pointer prefixes the pointers of its validation errors.
func (t *Tx) create(ctx context.Context, tenant string, rec memory.Record, status memory.Status, pointer string, ch Change, lineage ...uuid.UUID) (memory.Record, error) {
	inherited := rec.Lifecycle.Decay.Curve == "" && rec.Lifecycle.Decay.HalfLifeSeconds == 0
	if err := t.w.prepare(&rec, status, pointer); err != nil {
		return memory.Record{}, err
	}
	if err := t.checkRelations(ctx, tenant, rec.Relations, pointer); err != nil {
		return memory.Record{}, err
	}
	admitted, err := t.sourcesOf(ctx, tenant, rec, lineage)
	if err != nil {
		return memory.Record{}, err
	}
	ev, err := t.checkEvidence(ctx, tenant, rec, admitted...)
	if err != nil {
		return memory.Record{}, err
	}
	if err := t.checkCycle(ctx, tenant, rec, ev, lineage); err != nil {
		return memory.Record{}, err
	}
	approval := ApprovalNotRequired
	if status == memory.Draft {
		approval = ApprovalPending
	}
	if err := t.insertNew(ctx, tenant, &rec, inherited, ch, ev, approval, 0); err != nil {
		return memory.Record{}, err
	}
	return rec, nil
}

// sourcesOf are the evidence sources of the records a revision revises
// (its lineage), when rec cites records: what the evidence gate admitted
// already ([Tx.checkEvidence]).
func (t *Tx) sourcesOf(ctx context.Context, tenant string, rec memory.Record, lineage []uuid.UUID) ([]memory.Source, error) {
	if len(lineage) == 0 || !slices.ContainsFunc(rec.Provenance.Sources, func(s memory.Source) bool { return s.Kind == SourceRecord }) {
		return nil, nil
	}
	var out []memory.Source
	for _, id := range lineage {
		r, err := t.get(ctx, tenant, id)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r.Provenance.Sources...)
	}
	return out, nil
}

// insertNew writes a prepared record, its relations, its audit entry and
// its provenance stamp.
func (t *Tx) insertNew(ctx context.Context, tenant string, rec *memory.Record, inherited bool, ch Change, ev evidence, approval string, risk float64) error {
	if err := t.insertRecord(ctx, tenant, *rec, inherited); err != nil {
		return written(tenant, *rec, err)
	}
	if err := t.addRelations(ctx, tenant, rec.ID, rec.Relations); err != nil {
		return err
	}
	if err := t.audit(ctx, tenant, *rec, ActionCreate, ch); err != nil {
		return err
	}
	if rec.Type == memory.Working {
		// Working memory is scratch space, free to write and never cited
		// (write-path RFC §12.1.4): its audit entry is its provenance.
		return nil
	}
	return t.w.timed(GateProvenance, func() error { return t.stamp(ctx, tenant, *rec, ch, ev, approval, risk) })
}

// prepare fills in a new record's defaults and validates it against the
// canonical schemas. Status and version are the write path's to set.
func (w *Writer) prepare(rec *memory.Record, status memory.Status, pointer string) error {
	var bad []schemas.Violation
	if rec.Status != "" && rec.Status != memory.Active {
		bad = append(bad, schemas.Violation{Pointer: pointer + "/status", Message: "is set by the store: omit it"})
	}
	if rec.Version != 0 && rec.Version != 1 {
		bad = append(bad, schemas.Violation{Pointer: pointer + "/version", Message: "is set by the store: omit it"})
	}
	for i, rel := range rec.Relations {
		if rel.Predicate == memory.Supersedes || rel.Predicate == memory.ForkedFrom || rel.Predicate == memory.MergedInto {
			bad = append(bad, schemas.Violation{
				Pointer: fmt.Sprintf("%s/relations/%d/predicate", pointer, i),
				Message: fmt.Sprintf("%q is written only by its revision operation", rel.Predicate),
			})
		}
	}
	bad = append(bad, checkDecayPoints(rec.Lifecycle.Decay.Points, pointer+"/lifecycle/decay/points")...)
	bad = append(bad, checkIndexed(*rec, pointer)...)
	now := w.clock()
	bad = append(bad, w.checkFuture(rec.CreatedAt, now, pointer+"/created_at")...)
	bad = append(bad, w.checkFuture(rec.Lifecycle.LastReinforcedAt, now, pointer+"/lifecycle/last_reinforced_at")...)
	if len(bad) > 0 {
		return &schemas.ValidationError{Violations: bad}
	}

	if rec.ID == uuid.Nil {
		id, err := uuid.NewV7()
		if err != nil {
			return fmt.Errorf("new record id: %w", err)
		}
		rec.ID = id
	}
	rec.Status, rec.Version = status, 1
	if rec.Sensitivity == "" {
		rec.Sensitivity = memory.DefaultSensitivity
	}
	if rec.Tags == nil {
		rec.Tags = []string{}
	}
	if rec.PersonalData && !slices.Contains(rec.Tags, memory.PIITag) {
		// Personal data was found in what the record is made from: it is
		// PII-bearing (write-path RFC §12.10.4), whatever tags it names.
		rec.Tags = append(slices.Clip(rec.Tags), memory.PIITag)
	}
	if rec.Visibility == "" {
		rec.Visibility = memory.VisibilityTenant
	}
	rec.CreatedAt = serverTime(rec.CreatedAt, now)
	rec.UpdatedAt = now
	decay, policy := w.cfg.Defaults(rec.Type)
	if rec.Lifecycle.Decay.Curve == "" && rec.Lifecycle.Decay.HalfLifeSeconds == 0 {
		rec.Lifecycle.Decay = decay
	}
	rec.Lifecycle.LastReinforcedAt = serverTime(rec.Lifecycle.LastReinforcedAt, now)
	if rec.Lifecycle.DeletionPolicy == "" {
		rec.Lifecycle.DeletionPolicy = policy
	}
	if rec.Provenance.Sources == nil {
		rec.Provenance.Sources = []memory.Source{}
	}
	if rec.Type == memory.Semantic {
		p, err := setRevision(rec.Payload, func(r *memory.Revision) { r.Status = revisionStatus(status) })
		if err != nil {
			return err
		}
		rec.Payload = p
	}
	return w.validate(*rec, pointer)
}

// checkFuture refuses a time more than the configured clock skew ahead of
// now. The times a writer may give a new record are when it happened (an
// import, an episode's first event), never a promise: a created_at or
// last_reinforced_at in the future would keep the record at full salience
// (substrate RFC §11: salience decays from the last reinforcement) and out
// of reach of retention (write-path RFC §12.10.4) for as long as it likes.
func (w *Writer) checkFuture(at, now time.Time, pointer string) []schemas.Violation {
	if at.IsZero() || !at.After(now.Add(w.cfg.MaxClockSkew)) {
		return nil
	}
	return []schemas.Violation{{Pointer: pointer, Message: fmt.Sprintf(
		"is %s ahead of the server's clock, more than the %s of clock skew allowed: omit it, and the server sets it",
		at.Sub(now).Round(time.Second), w.cfg.MaxClockSkew)}}
}

// serverTime is a new record's time as stored: the writer's, at the
// database's precision, but never after now — a time ahead by no more
// than the clock skew allowed ([Writer.checkFuture]) is now — and now
// when the writer gives none.
func serverTime(at, now time.Time) time.Time {
	if at.IsZero() || at.After(now) {
		return now
	}
	return at.UTC().Truncate(time.Microsecond)
}

// validate checks a complete record against the canonical schemas and the
// payload size limit.
func (w *Writer) validate(rec memory.Record, pointer string) error {
	if len(rec.Payload) > w.cfg.MaxPayloadBytes {
		return &TooLargeError{Pointer: pointer + "/payload", Size: len(rec.Payload), Limit: w.cfg.MaxPayloadBytes}
	}
	if seal.IsSealed(rec.Payload) {
		// The member marks a payload sealed at rest (package seal): a
		// writer's payload cannot pose as one.
		return &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: pointer + "/payload/sealed", Message: "is reserved for encryption at rest"}}}
	}
	doc, err := json.Marshal(rec)
	if err != nil {
		return &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: pointer + "/payload", Message: "is not valid JSON"}}}
	}
	if err := schemas.ValidateRecord(doc); err != nil {
		var ve *schemas.ValidationError
		if errors.As(err, &ve) && pointer != "" {
			for i := range ve.Violations {
				ve.Violations[i].Pointer = pointer + ve.Violations[i].Pointer
			}
		}
		return err
	}
	if bad := checkPlan(rec, pointer); len(bad) > 0 {
		return &schemas.ValidationError{Violations: bad}
	}
	return nil
}

// sourceKinds are the kinds of evidence a provenance source or an audit
// entry may cite (§15A.4, with the struct variant's human, and the write
// path's reasoning and record of write-path RFC §12.4.3).
var sourceKinds = []string{"event", "artifact", "tool_call", "observation", "outcome", "human", SourceReasoning, SourceRecord}

func checkChange(ch Change) error {
	if ch.Actor == "" {
		return errors.New("change has no actor")
	}
	var bad []schemas.Violation
	for i, e := range ch.Evidence {
		if !slices.Contains(sourceKinds, e.Kind) {
			bad = append(bad, schemas.Violation{Pointer: fmt.Sprintf("/evidence/%d/kind", i), Message: "must be one of " + strings.Join(sourceKinds, ", ")})
		}
		if e.Ref == "" {
			bad = append(bad, schemas.Violation{Pointer: fmt.Sprintf("/evidence/%d/ref", i), Message: "is required"})
		}
	}
	if len(bad) > 0 {
		return &schemas.ValidationError{Violations: bad}
	}
	return nil
}

// checkRelations makes sure every relation of a new record points at a
// record of the same tenant.
func (t *Tx) checkRelations(ctx context.Context, tenant string, rels []memory.Relation, pointer string) error {
	if len(rels) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(rels))
	for i, r := range rels {
		ids[i] = r.TargetID
	}
	found, err := t.existingIDs(ctx, tenant, ids)
	if err != nil {
		return fmt.Errorf("check relation targets: %w", err)
	}
	var bad []schemas.Violation
	for i, id := range ids {
		if !slices.Contains(found, id) {
			bad = append(bad, schemas.Violation{Pointer: fmt.Sprintf("%s/relations/%d/target_id", pointer, i), Message: "no such record"})
		}
	}
	if len(bad) > 0 {
		return &schemas.ValidationError{Violations: bad}
	}
	return nil
}

// Lengths of the fields the database indexes: an index entry has a size
// limit of its own (about 2.7 KB), far below a payload's, and a value over
// it would fail the write with no field named.
const (
	MaxScopeBytes      = 256
	MaxTagBytes        = 256
	MaxSubjectBytes    = 512
	MaxPredicateBytes  = 256
	MaxConditionsBytes = 1024
)

// checkIndexed refuses values too long for the indexes they go into: the
// scope, each tag, a fact's subject, predicate and validity.
func checkIndexed(rec memory.Record, pointer string) []schemas.Violation {
	var bad []schemas.Violation
	over := func(at string, n, limit int) {
		if n > limit {
			bad = append(bad, schemas.Violation{Pointer: pointer + at, Message: fmt.Sprintf("is %d bytes, over the limit of %d", n, limit)})
		}
	}
	over("/scope", len(rec.Scope), MaxScopeBytes)
	for i, tag := range rec.Tags {
		over(fmt.Sprintf("/tags/%d", i), len(tag), MaxTagBytes)
	}
	if rec.Type == memory.Semantic {
		var p struct {
			Subject   string          `json:"subject"`
			Predicate string          `json:"predicate"`
			Validity  json.RawMessage `json:"validity"`
		}
		if json.Unmarshal(rec.Payload, &p) == nil {
			over("/payload/subject", len(p.Subject), MaxSubjectBytes)
			over("/payload/predicate", len(p.Predicate), MaxPredicateBytes)
			over("/payload/validity", len(p.Validity), MaxConditionsBytes)
		}
	}
	return bad
}

// checkDecayPoints holds a custom curve's points to the rules the canonical
// schema cannot state: ages strictly increasing and salience never rising
// (substrate RFC §15A.7: decay profiles are monotonic), and a point at age
// zero keeps all of the salience, so that a record read the moment it is
// reinforced has the salience it was given.
func checkDecayPoints(points []memory.DecayPoint, pointer string) []schemas.Violation {
	var bad []schemas.Violation
	for i, p := range points {
		at := fmt.Sprintf("%s/%d", pointer, i)
		switch {
		case i > 0 && p.AgeSeconds <= points[i-1].AgeSeconds:
			bad = append(bad, schemas.Violation{Pointer: at + "/age_seconds", Message: "must be greater than the previous point's: points are in order of age"})
		case i > 0 && p.Salience > points[i-1].Salience:
			bad = append(bad, schemas.Violation{Pointer: at + "/salience", Message: "must not be above the previous point's: decay never raises salience"})
		case p.AgeSeconds == 0 && p.Salience != 1:
			bad = append(bad, schemas.Violation{Pointer: at + "/salience", Message: "must be 1 at age 0: a curve starts from the whole salience"})
		}
	}
	return bad
}

// audit writes the audit entry of an operation on rec at its version.
func (t *Tx) audit(ctx context.Context, tenant string, rec memory.Record, action string, ch Change) error {
	// Every revision is audited, so every revision is authorized here
	// (write-path RFC §12.8.2), and held to the leases on what it writes,
	// in its transaction, before it commits (§12.8.3).
	if err := t.authorize(tenant, rec, action, ch); err != nil {
		return err
	}
	if err := t.checkFence(ctx, tenant, rec, ch); err != nil {
		return err
	}
	t.audited = append(t.audited, audited{layer: rec.Type, action: action})
	return store.InsertAudit(ctx, t.tx, tenant, store.AuditRow{
		RecordID: rec.ID, Version: rec.Version, Action: action, Actor: ch.Actor, Rationale: ch.Rationale, Evidence: ch.Evidence,
	})
}

// revise writes rec as its next version.
func (t *Tx) revise(ctx context.Context, tenant string, rec *memory.Record) error {
	rec.Version++
	rec.UpdatedAt = t.w.clock()
	return written(tenant, *rec, t.updateRecord(ctx, tenant, *rec))
}

// Get reads a record in the transaction, whatever its status.
func (t *Tx) Get(ctx context.Context, tenant string, id uuid.UUID) (memory.Record, error) {
	return t.get(ctx, tenant, id)
}
