package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
)

// Lease is a lease-based write lock on a record or a scope (write-path RFC
// §12.8.3), as stored: its resource's latest grant.
type Lease struct {
	ID uuid.UUID
	// RecordID or Scope names what is leased; exactly one is set.
	RecordID *uuid.UUID
	Scope    string
	// AgentID is the holder.
	AgentID      string
	FencingToken int64
	GrantedAt    time.Time
	ExpiresAt    time.Time
	ReleasedAt   *time.Time
	// Status (active, expired, released) and Outcome (granted, renewed)
	// are what the write path makes of the row as of an answer: the store
	// neither reads nor writes them.
	Status  string
	Outcome string
}

// LeaseResource names what a lease locks: a record (RecordID) or a scope
// (Scope, with RecordID nil).
type LeaseResource struct {
	RecordID *uuid.UUID
	Scope    string
}

// leaseColumns are the columns a lease is read from, in [scanLease]'s order.
const leaseColumns = `id, record_id, coalesce(scope, ''), agent_id, token, granted_at, expires_at, released_at`

func scanLease(row pgx.Row) (Lease, error) {
	var l Lease
	err := row.Scan(&l.ID, &l.RecordID, &l.Scope, &l.AgentID, &l.FencingToken, &l.GrantedAt, &l.ExpiresAt, &l.ReleasedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return l, ErrNotFound
	}
	if err != nil {
		return l, fmt.Errorf("scan lease: %w", err)
	}
	l.GrantedAt, l.ExpiresAt = l.GrantedAt.UTC(), l.ExpiresAt.UTC()
	if l.ReleasedAt != nil {
		*l.ReleasedAt = l.ReleasedAt.UTC()
	}
	return l, nil
}

// The advisory lock of a leased resource: held shared by a write that
// checks the resource's lease, exclusively by a grant on it, until the
// transaction ends. It serialises a grant with the writes it fences even
// before the resource has a row to lock.
const lockLeaseResourceSQL = `
SELECT pg_advisory_xact_lock(hashtextextended(concat_ws(chr(31), 'engram.lease', $1::text, $2::text, $3::text), 0))`

const lockLeaseResourceSharedSQL = `
SELECT pg_advisory_xact_lock_shared(hashtextextended(concat_ws(chr(31), 'engram.lease', $1::text, $2::text, $3::text), 0))`

// LockLeaseResource takes the advisory lock of a resource for the rest of
// the transaction: exclusive to grant a lease on it, shared to check a
// write against it.
func LockLeaseResource(ctx context.Context, db pg.DBTX, tenant string, res LeaseResource, exclusive bool) error {
	kind, key := "scope", res.Scope
	if res.RecordID != nil {
		kind, key = "record", res.RecordID.String()
	}
	q := lockLeaseResourceSharedSQL
	if exclusive {
		q = lockLeaseResourceSQL
	}
	if _, err := db.Exec(ctx, q, tenant, kind, key); err != nil {
		return fmt.Errorf("lock lease resource: %w", err)
	}
	return nil
}

const lockLeaseSQL = `
SELECT ` + leaseColumns + ` FROM leases
WHERE tenant_id = $1 AND (record_id = $2 OR ($2 IS NULL AND scope = $3))
FOR UPDATE`

// LockLease reads the lease of a resource for update, or [ErrNotFound]
// when it was never leased.
func LockLease(ctx context.Context, db pg.DBTX, tenant string, res LeaseResource) (Lease, error) {
	return scanLease(db.QueryRow(ctx, lockLeaseSQL, tenant, res.RecordID, res.Scope))
}

const lockLeaseByIDSQL = `SELECT ` + leaseColumns + ` FROM leases WHERE tenant_id = $1 AND id = $2 FOR UPDATE`

// LockLeaseByID reads the lease with id for update, or [ErrNotFound].
func LockLeaseByID(ctx context.Context, db pg.DBTX, tenant string, id uuid.UUID) (Lease, error) {
	return scanLease(db.QueryRow(ctx, lockLeaseByIDSQL, tenant, id))
}

const getLeaseSQL = `SELECT ` + leaseColumns + ` FROM leases WHERE tenant_id = $1 AND id = $2`

// GetLease reads the lease with id, or [ErrNotFound].
func GetLease(ctx context.Context, db pg.DBTX, tenant string, id uuid.UUID) (Lease, error) {
	return scanLease(db.QueryRow(ctx, getLeaseSQL, tenant, id))
}

const coveringLeasesSQL = `
SELECT ` + leaseColumns + ` FROM leases
WHERE tenant_id = $1 AND (record_id = $2 OR scope = $3)
ORDER BY token DESC`

// CoveringLeases reads the leases that cover a write to record id of
// scope: the record's own and its scope's, newest grant first.
func CoveringLeases(ctx context.Context, db pg.DBTX, tenant string, id uuid.UUID, scope string) ([]Lease, error) {
	rows, err := db.Query(ctx, coveringLeasesSQL, tenant, id, scope)
	if err != nil {
		return nil, fmt.Errorf("read covering leases: %w", err)
	}
	defer rows.Close()
	var out []Lease
	for rows.Next() {
		l, err := scanLease(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read covering leases: %w", err)
	}
	return out, nil
}

const recordLeaseInScopeSQL = `
SELECT l.id, l.record_id, coalesce(l.scope, ''), l.agent_id, l.token, l.granted_at, l.expires_at, l.released_at
FROM leases l JOIN records r ON r.tenant_id = l.tenant_id AND r.id = l.record_id
WHERE l.tenant_id = $1 AND r.scope = $2 AND l.agent_id <> $3
  AND l.released_at IS NULL AND l.expires_at > $4
ORDER BY l.expires_at DESC
LIMIT 1`

// RecordLeaseInScope reads an active lease, at now, on a record of scope
// held by an agent other than agent, or [ErrNotFound].
func RecordLeaseInScope(ctx context.Context, db pg.DBTX, tenant, scope, agent string, now time.Time) (Lease, error) {
	return scanLease(db.QueryRow(ctx, recordLeaseInScopeSQL, tenant, scope, agent, now))
}

const nextFencingTokenSQL = `
INSERT INTO lease_counters AS c (tenant_id, last_token) VALUES ($1, 1)
ON CONFLICT (tenant_id) DO UPDATE SET last_token = c.last_token + 1
RETURNING last_token`

// NextFencingToken advances the tenant's fencing counter and returns its
// new value. The counter's row stays locked until the transaction ends.
func NextFencingToken(ctx context.Context, db pg.DBTX, tenant string) (int64, error) {
	var token int64
	if err := db.QueryRow(ctx, nextFencingTokenSQL, tenant).Scan(&token); err != nil {
		return 0, fmt.Errorf("next fencing token: %w", err)
	}
	return token, nil
}

const insertLeaseSQL = `
INSERT INTO leases (tenant_id, id, record_id, scope, agent_id, token, granted_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`

// InsertLease writes the first grant on a resource.
func InsertLease(ctx context.Context, db pg.DBTX, tenant string, l Lease) error {
	_, err := db.Exec(ctx, insertLeaseSQL, tenant, l.ID, l.RecordID, nilIfZero(l.Scope), l.AgentID, l.FencingToken, l.GrantedAt, l.ExpiresAt)
	return leaseWritten("insert lease", err)
}

const replaceLeaseSQL = `
UPDATE leases SET id = $3, agent_id = $4, token = $5, granted_at = $6, expires_at = $7, released_at = NULL
WHERE tenant_id = $1 AND id = $2`

// ReplaceLease writes a new grant l over the resource's previous one, old.
func ReplaceLease(ctx context.Context, db pg.DBTX, tenant string, old uuid.UUID, l Lease) error {
	tag, err := db.Exec(ctx, replaceLeaseSQL, tenant, old, l.ID, l.AgentID, l.FencingToken, l.GrantedAt, l.ExpiresAt)
	if err == nil && tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return leaseWritten("replace lease", err)
}

const extendLeaseSQL = `UPDATE leases SET expires_at = $3 WHERE tenant_id = $1 AND id = $2`

// ExtendLease moves the expiry of the lease with id to expires.
func ExtendLease(ctx context.Context, db pg.DBTX, tenant string, id uuid.UUID, expires time.Time) error {
	tag, err := db.Exec(ctx, extendLeaseSQL, tenant, id, expires)
	if err == nil && tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return leaseWritten("extend lease", err)
}

const releaseLeaseSQL = `UPDATE leases SET released_at = $3 WHERE tenant_id = $1 AND id = $2 AND released_at IS NULL`

// ReleaseLease marks the lease with id released at at; a lease released
// already is left as it is.
func ReleaseLease(ctx context.Context, db pg.DBTX, tenant string, id uuid.UUID, at time.Time) error {
	_, err := db.Exec(ctx, releaseLeaseSQL, tenant, id, at)
	return leaseWritten("release lease", err)
}

// leaseWritten names a failed lease statement; a trigger's refusal (a
// fencing token going back) is an [*ImmutableError].
func leaseWritten(what string, err error) error {
	if err == nil {
		return nil
	}
	if code, _ := pg.Code(err); code == pg.RestrictViolation {
		return &ImmutableError{Message: pgMessage(err)}
	}
	return fmt.Errorf("%s: %w", what, err)
}

const leaseOfSQL = `
SELECT ` + leaseColumns + ` FROM leases
WHERE tenant_id = $1 AND (record_id = $2 OR ($2 IS NULL AND scope = $3))`

// LeaseOf reads the lease of a resource, or [ErrNotFound] when it was
// never leased.
func LeaseOf(ctx context.Context, db pg.DBTX, tenant string, res LeaseResource) (Lease, error) {
	return scanLease(db.QueryRow(ctx, leaseOfSQL, tenant, res.RecordID, res.Scope))
}
