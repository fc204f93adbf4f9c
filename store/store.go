// Package store is engram's query layer over PostgreSQL (substrate RFC
// §15.1): every SQL statement that touches memory, as functions that take
// the executor — a pool or a transaction — on every call, and nothing else.
// It keeps no state and no configuration, applies no defaults and decides
// no revision policy: the write path (package revise) does, and composes
// these statements into its transactions. Every function takes the tenant
// explicitly and no statement crosses tenants.
//
// Database errors become the sentinels of errors.go: a missing row
// [ErrNotFound], the unique active fact [ErrActiveFactExists], a version
// guard [ErrVersionConflict], a trigger's refusal [*ImmutableError].
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
)

const ensureTenantSQL = `INSERT INTO tenants (id) VALUES ($1) ON CONFLICT (id) DO NOTHING`

// EnsureTenant registers a tenant id; every row belongs to one.
func EnsureTenant(ctx context.Context, db pg.DBTX, tenant string) error {
	if _, err := db.Exec(ctx, ensureTenantSQL, tenant); err != nil {
		return fmt.Errorf("ensure tenant: %w", err)
	}
	return nil
}

// recordColumns are the columns a record is read from, in [scanRecord]'s order.
// Versions recorded before a column existed have it NULL: the coalesces
// give them its default.
const recordColumns = `id, type, status, version, sensitivity, confidence, salience, scope, tags,
	decay_curve, decay_half_life_seconds, decay_floor, decay_max_age_seconds, decay_reinforcement_gain,
	decay_points, last_reinforced_at, pinned, deletion_policy, expires_at, provenance, payload,
	created_at, updated_at, coalesce(visibility, 'tenant'), coalesce(agent_id, ''), coalesce(thread_id, '')`

// scanRecord reads a record from row; prefix are destinations for columns
// the row has before the record's.
func scanRecord(row pgx.Row, prefix ...any) (memory.Record, error) {
	var (
		r      memory.Record
		maxAge *int64
		points []byte
	)
	err := row.Scan(append(prefix, &r.ID, &r.Type, &r.Status, &r.Version, &r.Sensitivity, &r.Confidence, &r.Salience,
		&r.Scope, &r.Tags, &r.Lifecycle.Decay.Curve, &r.Lifecycle.Decay.HalfLifeSeconds,
		&r.Lifecycle.Decay.MinSalience, &maxAge, &r.Lifecycle.Decay.ReinforcementGain, &points,
		&r.Lifecycle.LastReinforcedAt, &r.Lifecycle.Pinned, &r.Lifecycle.DeletionPolicy,
		&r.Lifecycle.ExpiresAt, &r.Provenance, &r.Payload, &r.CreatedAt, &r.UpdatedAt,
		&r.Visibility, &r.AgentID, &r.ThreadID)...)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return r, ErrNotFound
		}
		return r, fmt.Errorf("scan record: %w", err)
	}
	if maxAge != nil {
		r.Lifecycle.Decay.MaxAgeSeconds = *maxAge
	}
	if len(points) > 0 {
		if err := json.Unmarshal(points, &r.Lifecycle.Decay.Points); err != nil {
			return r, fmt.Errorf("decode decay points: %w", err)
		}
	}
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	r.Lifecycle.LastReinforcedAt = r.Lifecycle.LastReinforcedAt.UTC()
	return r, nil
}

// recordArgs are a record's column values in the order of insertRecordSQL
// and updateRecordSQL.
func recordArgs(tenant string, r memory.Record) []any {
	d := r.Lifecycle.Decay
	var maxAge *int64
	if d.MaxAgeSeconds > 0 {
		maxAge = &d.MaxAgeSeconds
	}
	var points any
	if len(d.Points) > 0 {
		points = d.Points
	}
	var deletedAt *time.Time
	if r.Status == memory.Deleted {
		deletedAt = &r.UpdatedAt
	}
	return []any{
		tenant, r.ID, r.Type, r.Status, r.Version, r.Sensitivity, r.Confidence, r.Salience, r.Scope, r.Tags,
		d.Curve, d.HalfLifeSeconds, d.MinSalience, maxAge, d.ReinforcementGain, points,
		r.Lifecycle.LastReinforcedAt, r.Lifecycle.Pinned, r.Lifecycle.DeletionPolicy, r.Lifecycle.ExpiresAt,
		r.Provenance, r.Payload, r.CreatedAt, r.UpdatedAt, deletedAt, r.Visibility, r.AgentID, r.ThreadID,
	}
}

const insertRecordSQL = `
INSERT INTO records (tenant_id, id, type, status, version, sensitivity, confidence, salience, scope, tags,
	decay_curve, decay_half_life_seconds, decay_floor, decay_max_age_seconds, decay_reinforcement_gain,
	decay_points, last_reinforced_at, pinned, deletion_policy, expires_at, provenance, payload,
	created_at, updated_at, deleted_at, visibility, agent_id, thread_id, decay_inherited)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
	$21, $22, $23, $24, $25, $26, $27, $28, $29)`

// InsertRecord writes a new record as it is. inherited says it named no
// decay profile, so it follows its type's configured one (see the decay
// package).
func InsertRecord(ctx context.Context, db pg.DBTX, tenant string, rec memory.Record, inherited bool) error {
	if _, err := db.Exec(ctx, insertRecordSQL, append(recordArgs(tenant, rec), inherited)...); err != nil {
		return writeError(tenant, rec.ID, err)
	}
	return nil
}

// updateRecordSQL writes every mutable column of a record, guarded by its
// previous version: a record that changed underneath is never overwritten.
const updateRecordSQL = `
UPDATE records SET (status, version, sensitivity, confidence, salience, scope, tags,
	decay_curve, decay_half_life_seconds, decay_floor, decay_max_age_seconds, decay_reinforcement_gain,
	decay_points, last_reinforced_at, pinned, deletion_policy, expires_at, provenance, payload,
	created_at, updated_at, deleted_at, visibility, agent_id, thread_id)
	= ($4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25,
	$26, $27, $28)
WHERE tenant_id = $1 AND id = $2 AND type = $3 AND version = $5 - 1`

// UpdateRecord writes rec, whose version the caller advanced by one, over
// its previous version: [ErrVersionConflict] when that is not the version
// stored.
func UpdateRecord(ctx context.Context, db pg.DBTX, tenant string, rec memory.Record) error {
	tag, err := db.Exec(ctx, updateRecordSQL, recordArgs(tenant, rec)...)
	if err != nil {
		return writeError(tenant, rec.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("record %s: %w", rec.ID, ErrVersionConflict)
	}
	return nil
}

const findActiveFactSQL = `
SELECT id FROM records
WHERE tenant_id = $1 AND type = 'semantic' AND status = 'active' AND scope = $2
	AND subject = $3::jsonb ->> 'subject' AND predicate = $3::jsonb ->> 'predicate'
	AND validity_key = COALESCE($3::jsonb -> 'validity', '{}'::jsonb) - 'mode'`

// FindActiveFact returns the id of the active fact with the scope, subject,
// predicate and validity of the semantic payload given, or [ErrNotFound].
func FindActiveFact(ctx context.Context, db pg.DBTX, tenant, scope string, payload json.RawMessage) (uuid.UUID, error) {
	var id uuid.UUID
	err := db.QueryRow(ctx, findActiveFactSQL, tenant, scope, payload).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return id, ErrNotFound
	}
	if err != nil {
		return id, fmt.Errorf("find active fact: %w", err)
	}
	return id, nil
}

// writeError turns a failed write of record id into the package's errors.
func writeError(tenant string, id uuid.UUID, err error) error {
	code, constraint := pg.Code(err)
	switch {
	case code == pg.UniqueViolation && constraint == "records_one_active_fact":
		return ErrActiveFactExists
	case code == pg.UniqueViolation && constraint == "records_openintent_key":
		return ErrEntryKeyTaken
	case code == pg.UniqueViolation && constraint == "records_pkey":
		return fmt.Errorf("record %s: %w", id, ErrExists)
	case code == pg.RestrictViolation:
		return &ImmutableError{Message: pgMessage(err)}
	case code == pg.ProgramLimitExceeded:
		return fmt.Errorf("record %s: %w", id, ErrTooLargeToIndex)
	case code == pg.ForeignKeyViolation && constraint == "records_tenant_id_fkey":
		return fmt.Errorf("unknown tenant %q: %w", tenant, err)
	}
	return fmt.Errorf("write record: %w", err)
}

// pgMessage is the message of a PostgreSQL error, without the driver's
// decoration.
func pgMessage(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Message
	}
	return err.Error()
}

// Lock reads a record for update: concurrent revisions of it queue here.
// Call it in a transaction.
func Lock(ctx context.Context, db pg.DBTX, tenant string, id uuid.UUID) (memory.Record, error) {
	return scanRecord(db.QueryRow(ctx, `SELECT `+recordColumns+` FROM records WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenant, id))
}

// LockMany locks records in id order, so two revisions over overlapping sets
// cannot deadlock, and returns them in the order of ids.
func LockMany(ctx context.Context, db pg.DBTX, tenant string, ids []uuid.UUID) ([]memory.Record, error) {
	sorted := slices.Clone(ids)
	slices.SortFunc(sorted, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	byID := make(map[uuid.UUID]memory.Record, len(ids))
	for _, id := range sorted {
		r, err := Lock(ctx, db, tenant, id)
		if err != nil {
			return nil, fmt.Errorf("record %s: %w", id, err)
		}
		byID[id] = r
	}
	out := make([]memory.Record, len(ids))
	for i, id := range ids {
		out[i] = byID[id]
	}
	return out, nil
}

const getRecordSQL = `SELECT ` + recordColumns + ` FROM records WHERE tenant_id = $1 AND id = $2`

// Get returns a record, whatever its status, with its outgoing relations.
func Get(ctx context.Context, db pg.DBTX, tenant string, id uuid.UUID) (memory.Record, error) {
	r, err := scanRecord(db.QueryRow(ctx, getRecordSQL, tenant, id))
	if err != nil {
		return r, err
	}
	recs := []memory.Record{r}
	if err := complete(ctx, db, tenant, recs, nil); err != nil {
		return r, err
	}
	return recs[0], nil
}
