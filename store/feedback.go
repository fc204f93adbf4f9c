package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/schemas"
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

const lockFeedbackSQL = `SELECT ` + recordColumns + ` FROM records WHERE tenant_id = $1 AND id = ANY($2) ORDER BY id FOR UPDATE`

const recordFeedbackSQL = `
INSERT INTO feedback (tenant_id, scope, record_id, outcome, at)
SELECT $1, $2, id, $4, $5 FROM unnest($3::uuid[]) AS id
ON CONFLICT (tenant_id, scope, record_id) DO NOTHING
RETURNING record_id`

// reinforceSQL moves salience and its decay origin, which is no revision:
// the record keeps its version (see the records_revision trigger).
const reinforceSQL = `
UPDATE records r SET salience = u.salience, last_reinforced_at = $2
FROM unnest($3::uuid[], $4::float8[]) AS u(id, salience)
WHERE r.tenant_id = $1 AND r.id = u.id`

// reviseFeedbackSQL is a batch of revisions in one statement: salience,
// decay origin and one payload field, each record at its next version
// (snapshotted by trigger) and audited. It returns the new payloads.
const reviseFeedbackSQL = `
WITH u AS (
	SELECT * FROM unnest($3::uuid[], $4::float8[], $5::text[], $6::text[]) AS u(id, salience, field, value)
), revised AS (
	UPDATE records r SET salience = u.salience, last_reinforced_at = $2,
		payload = jsonb_set(r.payload, ARRAY[u.field], u.value::jsonb), version = r.version + 1, updated_at = $2
	FROM u
	WHERE r.tenant_id = $1 AND r.id = u.id
	RETURNING r.id, r.version, r.payload
), audited AS (
	INSERT INTO audit_log (tenant_id, record_id, action, actor, version, rationale, evidence)
	SELECT $1, id, 'feedback', $7, version, $8, $9 FROM revised
)
SELECT id, payload FROM revised`

// Feedback applies fb to a tenant's records in one transaction, set-based
// whatever the number of records (up to [MaxFeedbackRecords]). It locks the
// records, refuses the whole call if any is unknown in the tenant, skips
// records that left the active set and records that already had feedback
// in fb.Scope, and asks apply for the new state of the rest, reading them
// at time at. Salience moves without a revision; a payload change (an
// outcome counted in a procedure's or plan's statistics) is a revision with
// an audit entry.
func (s *Store) Feedback(ctx context.Context, tenant string, fb Feedback, at time.Time, ch Change,
	apply func(recs []memory.Record) ([]Reinforcement, error)) (FeedbackResult, error) {
	var res FeedbackResult
	if err := checkChange(ch); err != nil {
		return res, err
	}
	if err := checkIDs(fb.RecordIDs, 1, "/record_ids"); err != nil {
		return res, err
	}
	if len(fb.RecordIDs) > MaxFeedbackRecords {
		return res, &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: "/record_ids", Message: fmt.Sprintf("names %d records; at most %d a call", len(fb.RecordIDs), MaxFeedbackRecords)}}}
	}
	at = at.UTC().Truncate(time.Microsecond)
	err := pg.WithTx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		rows, err := tx.Query(ctx, lockFeedbackSQL, tenant, uuids(fb.RecordIDs))
		if err != nil {
			return fmt.Errorf("lock records: %w", err)
		}
		recs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (memory.Record, error) { return scanRecord(row) })
		if err != nil {
			return fmt.Errorf("lock records: %w", err)
		}
		if err := checkFound(fb.RecordIDs, recs); err != nil {
			return err
		}
		live := recs[:0:0]
		var liveIDs []uuid.UUID
		for _, r := range recs {
			if !r.Live() {
				res.NotLive = append(res.NotLive, r.ID)
				continue
			}
			live = append(live, r)
			liveIDs = append(liveIDs, r.ID)
		}
		if len(live) == 0 {
			return nil
		}
		rows, err = tx.Query(ctx, recordFeedbackSQL, tenant, fb.Scope, uuids(liveIDs), fb.Outcome, at)
		if err != nil {
			return fmt.Errorf("record feedback: %w", err)
		}
		fresh, err := pgx.CollectRows(rows, pgx.RowTo[[16]byte])
		if err != nil {
			return fmt.Errorf("record feedback: %w", err)
		}
		isFresh := make(map[uuid.UUID]bool, len(fresh))
		for _, id := range fresh {
			isFresh[uuid.UUID(id)] = true
		}
		todo := live[:0:0]
		for _, r := range live {
			if isFresh[r.ID] {
				todo = append(todo, r)
			} else {
				res.Duplicate = append(res.Duplicate, r.ID)
			}
		}
		if len(todo) == 0 {
			return nil
		}
		reinf, err := apply(todo)
		if err != nil {
			return err
		}
		if res.Applied, err = s.reinforce(ctx, tx, tenant, todo, reinf, at, ch); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return FeedbackResult{}, err
	}
	return res, nil
}

// reinforce writes reinf, two set-based statements at most, and returns
// recs as they now are.
func (s *Store) reinforce(ctx context.Context, tx pgx.Tx, tenant string, recs []memory.Record, reinf []Reinforcement, at time.Time, ch Change) ([]memory.Record, error) {
	byID := make(map[uuid.UUID]int, len(recs))
	for i, r := range recs {
		byID[r.ID] = i
	}
	var (
		ids, revIDs    []uuid.UUID
		sal, revSal    []float64
		fields, values []string
		out            = slices.Clone(recs)
	)
	for _, rf := range reinf {
		i, ok := byID[rf.ID]
		if !ok {
			return nil, fmt.Errorf("reinforce: record %s was not asked for", rf.ID)
		}
		out[i].Salience, out[i].Lifecycle.LastReinforcedAt = rf.Salience, at
		if rf.Field == "" {
			ids, sal = append(ids, rf.ID), append(sal, rf.Salience)
			continue
		}
		revIDs, revSal = append(revIDs, rf.ID), append(revSal, rf.Salience)
		fields, values = append(fields, rf.Field), append(values, string(rf.Value))
		out[i].Version, out[i].UpdatedAt = out[i].Version+1, at
	}
	if len(ids) > 0 {
		if _, err := tx.Exec(ctx, reinforceSQL, tenant, at, uuids(ids), sal); err != nil {
			return nil, fmt.Errorf("reinforce records: %w", err)
		}
	}
	if len(revIDs) > 0 {
		ev := ch.Evidence
		if ev == nil {
			ev = []memory.Source{}
		}
		rows, err := tx.Query(ctx, reviseFeedbackSQL, tenant, at, uuids(revIDs), revSal, fields, values, ch.Actor, ch.Rationale, ev)
		if err != nil {
			return nil, fmt.Errorf("revise records: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var id [16]byte
			var payload []byte
			if err := rows.Scan(&id, &payload); err != nil {
				return nil, fmt.Errorf("revise records: %w", err)
			}
			if len(payload) > s.maxPayloadBytes {
				return nil, &TooLargeError{Pointer: "/payload", Size: len(payload), Limit: s.maxPayloadBytes}
			}
			out[byID[uuid.UUID(id)]].Payload = payload
		}
		if err := rows.Err(); err != nil {
			return nil, s.writeError(ctx, tenant, memory.Record{ID: revIDs[0]}, err)
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
