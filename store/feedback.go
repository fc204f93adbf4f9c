package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
)

// lockByIDSQL locks records in id order.
const lockByIDSQL = `SELECT ` + recordColumns + ` FROM records WHERE tenant_id = $1 AND id = ANY($2) ORDER BY id FOR UPDATE`

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
	SELECT * FROM unnest($3::uuid[], $4::float8[], $5::text[], $6::text[], $10::float8[]) AS u(id, salience, field, value, confidence)
), revised AS (
	UPDATE records r SET salience = u.salience, last_reinforced_at = $2,
		confidence = CASE WHEN u.confidence >= 0 THEN u.confidence ELSE r.confidence END,
		payload = jsonb_set(r.payload, ARRAY[u.field], u.value::jsonb), version = r.version + 1, updated_at = $2
	FROM u
	WHERE r.tenant_id = $1 AND r.id = u.id
	RETURNING r.id, r.version, r.payload
), audited AS (
	INSERT INTO audit_log (tenant_id, record_id, action, actor, version, rationale, evidence)
	SELECT $1, id, 'feedback', $7, version, $8, $9 FROM revised
)
SELECT id, payload FROM revised`

// LockByID locks the tenant's records among ids, in id order, and returns
// those it found.
func LockByID(ctx context.Context, db pg.DBTX, tenant string, ids []uuid.UUID) ([]memory.Record, error) {
	rows, err := db.Query(ctx, lockByIDSQL, tenant, uuids(ids))
	if err != nil {
		return nil, fmt.Errorf("lock records: %w", err)
	}
	recs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (memory.Record, error) { return scanRecord(row) })
	if err != nil {
		return nil, fmt.Errorf("lock records: %w", err)
	}
	return recs, nil
}

// RecordFeedback notes that records had feedback with outcome in scope (a
// retrieval id or an idempotency key) and returns those that had none
// there before.
func RecordFeedback(ctx context.Context, db pg.DBTX, tenant, scope string, ids []uuid.UUID, outcome string, at time.Time) ([]uuid.UUID, error) {
	rows, err := db.Query(ctx, recordFeedbackSQL, tenant, scope, uuids(ids), outcome, at)
	if err != nil {
		return nil, fmt.Errorf("record feedback: %w", err)
	}
	fresh, err := pgx.CollectRows(rows, pgx.RowTo[[16]byte])
	if err != nil {
		return nil, fmt.Errorf("record feedback: %w", err)
	}
	out := make([]uuid.UUID, len(fresh))
	for i, id := range fresh {
		out[i] = id
	}
	return out, nil
}

// Reinforce sets records' salience and restarts their decay at at: no
// revision.
func Reinforce(ctx context.Context, db pg.DBTX, tenant string, at time.Time, ids []uuid.UUID, salience []float64) error {
	if _, err := db.Exec(ctx, reinforceSQL, tenant, at, uuids(ids), salience); err != nil {
		return fmt.Errorf("reinforce records: %w", err)
	}
	return nil
}

// FeedbackRevision is a record's new salience, one top-level payload
// field replaced and, when Confidence is not negative, its new
// confidence.
type FeedbackRevision struct {
	ID         uuid.UUID
	Salience   float64
	Field      string
	Value      json.RawMessage
	Confidence float64
}

// ReviseFeedback writes revisions, each record at its next version with an
// audit entry of action feedback, and returns the new payloads by id.
func ReviseFeedback(ctx context.Context, db pg.DBTX, tenant string, at time.Time, revs []FeedbackRevision, a AuditRow) (map[uuid.UUID]json.RawMessage, error) {
	n := len(revs)
	ids, sal, fields, values, conf := make([]uuid.UUID, n), make([]float64, n), make([]string, n), make([]string, n), make([]float64, n)
	for i, r := range revs {
		ids[i], sal[i], fields[i], values[i], conf[i] = r.ID, r.Salience, r.Field, string(r.Value), r.Confidence
	}
	rows, err := db.Query(ctx, reviseFeedbackSQL, tenant, at, uuids(ids), sal, fields, values, a.Actor, a.Rationale, nonNil(a.Evidence), conf)
	if err != nil {
		return nil, fmt.Errorf("revise records: %w", err)
	}
	defer rows.Close()
	out := make(map[uuid.UUID]json.RawMessage, n)
	for rows.Next() {
		var id [16]byte
		var payload []byte
		if err := rows.Scan(&id, &payload); err != nil {
			return nil, fmt.Errorf("revise records: %w", err)
		}
		out[id] = payload
	}
	if err := rows.Err(); err != nil {
		return nil, writeError(tenant, ids[0], err)
	}
	return out, nil
}
