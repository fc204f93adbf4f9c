package revise

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/store"
)

// The writes of decay and forgetting (substrate RFC §11, §15.6, §15B). What
// a record's salience becomes is decay's to compute; the write path locks,
// writes and audits. Decay composes these in one transaction.

// Feedback outcomes that count for the writing agent's reputation.
const (
	OutcomeSuccess = "used_success"
	OutcomeFailure = "used_failure"
)

// MaxFeedbackRecords bounds the records of one feedback call.
const MaxFeedbackRecords = 10_000

// Feedback is one report of how records served a task (substrate RFC
// §15.6): every record named had the same outcome.
type Feedback struct {
	// Scope makes the report idempotent: a record counts once per scope
	// (a retrieval id or an idempotency key).
	Scope     string
	RecordIDs []uuid.UUID
	Outcome   string
}

// Reinforcement is what feedback does to one record: its salience from
// now on and, when Field is set, a top-level payload field replaced by
// Value (a procedure's statistics with the outcome counted), which is a
// revision.
type Reinforcement struct {
	ID       uuid.UUID
	Salience float64
	Field    string
	Value    json.RawMessage
	// Confidence, when set, is the record's confidence now (a procedure's,
	// from its counts).
	Confidence *float64
}

// FeedbackResult says what became of each record of a [Feedback].
type FeedbackResult struct {
	// Applied are the records the feedback changed, as they are now.
	Applied []memory.Record
	// Duplicate records already had feedback in this scope: unchanged.
	Duplicate []uuid.UUID
	// NotLive records have left the active set: unchanged.
	NotLive []uuid.UUID
}

// FeedbackTargets locks the records fb names, refusing the whole call if
// any is unknown in the tenant, notes the feedback once per record and
// scope, and returns the records it should change: live, and without
// feedback in fb.Scope before. res tells the others apart.
func (t *Tx) FeedbackTargets(ctx context.Context, tenant string, fb Feedback, at time.Time) (todo []memory.Record, res FeedbackResult, err error) {
	if err := checkIDs(fb.RecordIDs, 1, "/record_ids"); err != nil {
		return nil, res, err
	}
	if len(fb.RecordIDs) > MaxFeedbackRecords {
		return nil, res, &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: "/record_ids", Message: fmt.Sprintf("names %d records; at most %d a call", len(fb.RecordIDs), MaxFeedbackRecords)}}}
	}
	recs, err := t.lockByID(ctx, tenant, fb.RecordIDs)
	if err != nil {
		return nil, res, err
	}
	if err := checkFound(fb.RecordIDs, recs); err != nil {
		return nil, res, err
	}
	var live []memory.Record
	var liveIDs []uuid.UUID
	for _, r := range recs {
		if !r.Live() {
			res.NotLive = append(res.NotLive, r.ID)
			continue
		}
		live, liveIDs = append(live, r), append(liveIDs, r.ID)
	}
	if len(live) == 0 {
		return nil, res, nil
	}
	fresh, err := store.RecordFeedback(ctx, t.tx, tenant, fb.Scope, liveIDs, fb.Outcome, at)
	if err != nil {
		return nil, res, err
	}
	isFresh := make(map[uuid.UUID]bool, len(fresh))
	for _, id := range fresh {
		isFresh[id] = true
	}
	for _, r := range live {
		if isFresh[r.ID] {
			todo = append(todo, r)
		} else {
			res.Duplicate = append(res.Duplicate, r.ID)
		}
	}
	// How the memory an agent wrote served counts for its reputation
	// (write-path RFC §12.11.5: downstream correctness).
	// Counted from the records locked above, and written when the
	// transaction commits, as its writes' counts are: no second read of
	// the records.
	var d store.ReputationDelta
	switch fb.Outcome {
	case OutcomeSuccess:
		d.Successes = 1
	case OutcomeFailure:
		d.Failures = 1
	default:
		return todo, res, nil
	}
	for _, r := range todo {
		t.countLater(tenant, r, d)
	}
	return todo, res, nil
}

// Reinforce writes reinf for recs (from [Tx.FeedbackTargets]), two
// set-based statements at most, and returns recs as they now are. Salience
// moves without a revision; a payload change is a revision with an audit
// entry.
func (t *Tx) Reinforce(ctx context.Context, tenant string, recs []memory.Record, reinf []Reinforcement, at time.Time, ch Change) ([]memory.Record, error) {
	if err := checkChange(ch); err != nil {
		return nil, err
	}
	byID := make(map[uuid.UUID]int, len(recs))
	for i, r := range recs {
		byID[r.ID] = i
	}
	var (
		ids  []uuid.UUID
		sal  []float64
		revs []store.FeedbackRevision
		out  = append([]memory.Record(nil), recs...)
	)
	for _, rf := range reinf {
		i, ok := byID[rf.ID]
		if !ok {
			return nil, fmt.Errorf("reinforce: record %s was not asked for", rf.ID)
		}
		// Feedback is a validation annotation (write-path RFC §12.8.2).
		if err := t.authorize(tenant, recs[i], ActionFeedback, ch); err != nil {
			return nil, err
		}
		out[i].Salience, out[i].Lifecycle.LastReinforcedAt = rf.Salience, at
		if rf.Field == "" {
			ids, sal = append(ids, rf.ID), append(sal, rf.Salience)
			continue
		}
		conf := -1.0
		if rf.Confidence != nil {
			conf = *rf.Confidence
			out[i].Confidence = conf
		}
		revs = append(revs, store.FeedbackRevision{ID: rf.ID, Salience: rf.Salience, Field: rf.Field, Value: rf.Value, Confidence: conf})
		out[i].Version, out[i].UpdatedAt = out[i].Version+1, at
	}
	if len(ids) > 0 {
		if err := store.Reinforce(ctx, t.tx, tenant, at, ids, sal); err != nil {
			return nil, err
		}
	}
	if len(revs) > 0 {
		payloads, err := store.ReviseFeedback(ctx, t.tx, tenant, at, revs, store.AuditRow{Actor: ch.Actor, Rationale: ch.Rationale, Evidence: ch.Evidence})
		if err != nil {
			return nil, written(tenant, memory.Record{ID: revs[0].ID}, err)
		}
		for id, p := range payloads {
			if len(p) > t.w.cfg.MaxPayloadBytes {
				return nil, &TooLargeError{Pointer: "/payload", Size: len(p), Limit: t.w.cfg.MaxPayloadBytes}
			}
			out[byID[id]].Payload = p
		}
	}
	return out, nil
}

// checkFound refuses a call naming records the tenant does not have; which
// ones, by their place in the request.
func checkFound(ids []uuid.UUID, recs []memory.Record) error {
	if len(recs) == len(ids) {
		return nil
	}
	found := make(map[uuid.UUID]bool, len(recs))
	for _, r := range recs {
		found[r.ID] = true
	}
	var bad []schemas.Violation
	for i, id := range ids {
		if !found[id] {
			bad = append(bad, schemas.Violation{Pointer: fmt.Sprintf("/record_ids/%d", i), Message: "no such record"})
		}
	}
	return &schemas.ValidationError{Violations: bad}
}

// LockExpired locks an expired record to restore it.
func (t *Tx) LockExpired(ctx context.Context, tenant string, id uuid.UUID) (memory.Record, error) {
	rec, err := t.lock(ctx, tenant, id)
	if err != nil {
		return rec, err
	}
	if rec.Status != memory.Expired {
		return rec, conflict(CodeNotAllowed, []uuid.UUID{id}, "record %s is %s: only expired records are restored", id, rec.Status)
	}
	return rec, nil
}

// Restore brings back rec, an expired record locked by [Tx.LockExpired]
// with the salience and decay origin it comes back with, to the status it
// had before it expired (substrate RFC §15B: deletion via decay is safe
// because it can be undone until the purge). The restore is a revision,
// audited.
func (t *Tx) Restore(ctx context.Context, tenant string, rec memory.Record, ch Change) (memory.Record, error) {
	if err := checkChange(ch); err != nil {
		return memory.Record{}, err
	}
	if rec.Status != memory.Expired {
		return memory.Record{}, conflict(CodeNotAllowed, []uuid.UUID{rec.ID}, "record %s is %s: only expired records are restored", rec.ID, rec.Status)
	}
	status := memory.Active
	prev, err := store.StatusAt(ctx, t.tx, tenant, rec.ID, rec.Version-1)
	if err != nil {
		return memory.Record{}, err
	}
	if prev.Live() {
		status = prev
	}
	if err := t.leave(ctx, tenant, &rec, status, ActionRestore, ch); err != nil {
		return memory.Record{}, err
	}
	return t.get(ctx, tenant, rec.ID)
}

// Expire soft-deletes records whose time has passed (substrate RFC §11,
// §15B): each becomes expired, a revision with an audit entry, out of
// every read of the active set, restorable until it is purged. Pinned
// records and records whose deletion policy is not auto_prune are never
// expired; a record that changed since it was read is skipped. It returns
// the records it expired.
func (w *Writer) Expire(ctx context.Context, batch []store.Expiry, actor string, at time.Time) ([]store.Key, error) {
	return store.Expire(ctx, w.db, batch, actor, at)
}

// PurgeExpired hard-deletes up to limit records that expired before
// cutoff, the second phase of two-phase collection (governance chapter
// §12.7.5), and the artifacts of purged episodes no remaining record
// references. Each purged record leaves an audit entry naming its id only.
func (w *Writer) PurgeExpired(ctx context.Context, cutoff time.Time, limit int, actor string) (store.PurgeResult, error) {
	return store.PurgeExpired(ctx, w.db, cutoff, limit, actor)
}

// StampProfiles writes the decay profile records that inherit their
// type's now follow.
func (w *Writer) StampProfiles(ctx context.Context, stamps []store.Stamp) error {
	return store.StampProfiles(ctx, w.db, stamps)
}
