package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
)

// ErrKeyExists: a key with that name exists (revoked or not).
var ErrKeyExists = errors.New("a key with that name exists")

// APIKey is an API key as stored, without its secret: only the secret's
// SHA-256 is stored, and it is never read back.
type APIKey struct {
	Name string
	// Tenant is empty for an operator key.
	Tenant    string
	Role      string
	AgentID   string
	Domains   []string
	Clearance memory.Sensitivity
	CreatedAt time.Time
	RevokedAt *time.Time
}

// NewKey is a key to store: its attributes and the SHA-256 of its secret.
type NewKey struct {
	APIKey
	Hash []byte
}

const insertKeySQL = `
INSERT INTO api_keys (name, tenant_id, role, agent_id, domains, clearance, hash)
VALUES ($1, NULLIF($2, ''), $3, $4, $5, $6, $7)
RETURNING created_at`

// InsertKey stores k; a name taken is [ErrKeyExists].
func InsertKey(ctx context.Context, db pg.DBTX, k NewKey) (APIKey, error) {
	domains := k.Domains
	if domains == nil {
		domains = []string{}
	}
	err := db.QueryRow(ctx, insertKeySQL, k.Name, k.Tenant, k.Role, k.AgentID, domains, k.Clearance, k.Hash).Scan(&k.CreatedAt)
	if code, _ := pg.Code(err); code == pg.UniqueViolation {
		return APIKey{}, ErrKeyExists
	}
	if err != nil {
		return APIKey{}, fmt.Errorf("insert key: %w", err)
	}
	k.Domains = domains
	return k.APIKey, nil
}

const keyColumns = `name, coalesce(tenant_id, ''), role, agent_id, domains, clearance, created_at, revoked_at`

func scanKey(row pgx.Row) (APIKey, error) {
	var k APIKey
	err := row.Scan(&k.Name, &k.Tenant, &k.Role, &k.AgentID, &k.Domains, &k.Clearance, &k.CreatedAt, &k.RevokedAt)
	return k, err
}

const keyByHashSQL = `SELECT ` + keyColumns + ` FROM api_keys WHERE hash = $1 AND revoked_at IS NULL`

// KeyByHash returns the live (unrevoked) key whose secret hashes to hash,
// or [ErrNotFound]. One index lookup (api_keys_hash_key).
func KeyByHash(ctx context.Context, db pg.DBTX, hash []byte) (APIKey, error) {
	k, err := scanKey(db.QueryRow(ctx, keyByHashSQL, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return k, ErrNotFound
	}
	if err != nil {
		return k, fmt.Errorf("look up key: %w", err)
	}
	return k, nil
}

const listKeysSQL = `SELECT ` + keyColumns + ` FROM api_keys
WHERE ($1::text IS NULL OR tenant_id = $1) ORDER BY name`

// ListKeys lists the stored keys, of one tenant when tenant is not empty.
func ListKeys(ctx context.Context, db pg.DBTX, tenant string) ([]APIKey, error) {
	rows, err := db.Query(ctx, listKeysSQL, nilIfZero(tenant))
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (APIKey, error) { return scanKey(row) })
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return keys, nil
}

const revokeKeySQL = `
UPDATE api_keys SET revoked_at = coalesce(revoked_at, $2) WHERE name = $1
RETURNING ` + keyColumns

// RevokeKey revokes the key named name at at (a key revoked before keeps
// its first revocation time) and returns it; [ErrNotFound] if there is none.
func RevokeKey(ctx context.Context, db pg.DBTX, name string, at time.Time) (APIKey, error) {
	k, err := scanKey(db.QueryRow(ctx, revokeKeySQL, name, at))
	if errors.Is(err, pgx.ErrNoRows) {
		return k, ErrNotFound
	}
	if err != nil {
		return k, fmt.Errorf("revoke key: %w", err)
	}
	return k, nil
}
