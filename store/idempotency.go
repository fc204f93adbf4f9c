package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
)

// IdempotencyKey names an idempotency key: its tenant (empty for an operator
// key), the API key's name and the key a client chose.
type IdempotencyKey struct {
	Tenant, Principal, Key string
}

// IdempotentResult is what is kept under an idempotency key: the hash of
// the request that claimed it and, once that request has finished, its
// status and response (as the caller encoded it); Status is 0 while it
// runs.
type IdempotentResult struct {
	RequestHash []byte
	Status      int
	Response    []byte
	CreatedAt   time.Time
}

const claimIdempotencySQL = `
INSERT INTO idempotency_keys AS k (tenant_id, principal, key, request_hash, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (tenant_id, principal, key) DO UPDATE
SET request_hash = excluded.request_hash, status = NULL, response = NULL,
    created_at = excluded.created_at, expires_at = excluded.expires_at
WHERE k.expires_at <= excluded.created_at OR (k.status IS NULL AND k.created_at < $7)
RETURNING true`

const readIdempotencySQL = `
SELECT request_hash, coalesce(status, 0), response, created_at FROM idempotency_keys
WHERE tenant_id = $1 AND principal = $2 AND key = $3`

// ClaimIdempotencyKey claims k for a request whose hash is given, at now,
// until expires: it succeeds (claimed) when the key is new, expired, or
// held by a request still unfinished since before stale (a daemon stopped
// mid-request). Otherwise it returns what the key holds.
func ClaimIdempotencyKey(ctx context.Context, db pg.DBTX, k IdempotencyKey, hash []byte, now, expires, stale time.Time) (held IdempotentResult, claimed bool, err error) {
	err = db.QueryRow(ctx, claimIdempotencySQL, k.Tenant, k.Principal, k.Key, hash, now, expires, stale).Scan(&claimed)
	if err == nil {
		return held, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return held, false, fmt.Errorf("claim idempotency key: %w", err)
	}
	err = db.QueryRow(ctx, readIdempotencySQL, k.Tenant, k.Principal, k.Key).Scan(&held.RequestHash, &held.Status, &held.Response, &held.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		// Released between the two statements: the caller may claim again.
		return held, false, ErrNotFound
	}
	if err != nil {
		return held, false, fmt.Errorf("read idempotency key: %w", err)
	}
	return held, false, nil
}

const finishIdempotencySQL = `
UPDATE idempotency_keys SET status = $5, response = $6
WHERE tenant_id = $1 AND principal = $2 AND key = $3 AND request_hash = $4 AND status IS NULL`

// FinishIdempotencyKey keeps the result of the request that claimed k (its
// hash given).
func FinishIdempotencyKey(ctx context.Context, db pg.DBTX, k IdempotencyKey, hash []byte, status int, response []byte) error {
	if _, err := db.Exec(ctx, finishIdempotencySQL, k.Tenant, k.Principal, k.Key, hash, status, response); err != nil {
		return fmt.Errorf("finish idempotency key: %w", err)
	}
	return nil
}

const releaseIdempotencySQL = `
DELETE FROM idempotency_keys
WHERE tenant_id = $1 AND principal = $2 AND key = $3 AND request_hash = $4 AND status IS NULL`

// ReleaseIdempotencyKey gives up the claim of the request (its hash given)
// on k, which kept no result: the key is free again.
func ReleaseIdempotencyKey(ctx context.Context, db pg.DBTX, k IdempotencyKey, hash []byte) error {
	if _, err := db.Exec(ctx, releaseIdempotencySQL, k.Tenant, k.Principal, k.Key, hash); err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}

const purgeIdempotencySQL = `
DELETE FROM idempotency_keys WHERE ctid = ANY (ARRAY(
    SELECT ctid FROM idempotency_keys WHERE expires_at <= $1 LIMIT $2))`

// PurgeIdempotencyKeys deletes at most limit keys expired at now, and
// says how many it deleted.
func PurgeIdempotencyKeys(ctx context.Context, db pg.DBTX, now time.Time, limit int) (int64, error) {
	tag, err := db.Exec(ctx, purgeIdempotencySQL, now, limit)
	if err != nil {
		return 0, fmt.Errorf("purge idempotency keys: %w", err)
	}
	return tag.RowsAffected(), nil
}
