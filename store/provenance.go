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

// ProvenanceRow is a record's provenance stamp as stored: the stamp
// document, the hashes the dedup gate looks records up by, and the
// signature over the stamp.
type ProvenanceRow struct {
	Tenant      string
	RecordID    uuid.UUID
	Stamp       json.RawMessage
	ContentHash []byte
	Fingerprint []byte // nil when the record's type has none
	KeyID       string // "" when unsigned
	Signature   []byte
	TamperedAt  *time.Time
}

const insertProvenanceSQL = `
INSERT INTO provenance (tenant_id, record_id, stamp, content_hash, fingerprint, key_id, signature)
VALUES ($1, $2, $3, $4, $5, $6, $7)`

// InsertProvenance writes a record's provenance stamp.
func InsertProvenance(ctx context.Context, db pg.DBTX, p ProvenanceRow) error {
	var sig any
	if p.KeyID != "" {
		sig = p.Signature
	}
	if _, err := db.Exec(ctx, insertProvenanceSQL, p.Tenant, p.RecordID, p.Stamp, p.ContentHash, p.Fingerprint, p.KeyID, sig); err != nil {
		return fmt.Errorf("stamp provenance: %w", err)
	}
	return nil
}

// sameContentSQL finds the tenant's live records of a type whose content
// hash or structural fingerprint is the one given, oldest first.
const sameContentSQL = `
SELECT p.content_hash = $3 AS exact, ` + recordColumns + `
FROM provenance p JOIN records r ON r.tenant_id = p.tenant_id AND r.id = p.record_id
WHERE p.tenant_id = $1 AND r.type = $2 AND r.status IN ('active', 'contested')
	AND (p.content_hash = $3 OR ($4::bytea IS NOT NULL AND p.fingerprint = $4))
ORDER BY exact DESC, r.created_at, r.id
LIMIT 1`

// SameContent returns the oldest live record of the tenant and type with
// the content hash given (exact true) or else the fingerprint, or
// [ErrNotFound].
func SameContent(ctx context.Context, db pg.DBTX, tenant string, typ memory.Type, hash, fingerprint []byte) (rec memory.Record, exact bool, err error) {
	var fp any
	if fingerprint != nil {
		fp = fingerprint
	}
	rec, err = scanRecord(db.QueryRow(ctx, sameContentSQL, tenant, typ, hash, fp), &exact)
	if err != nil {
		return rec, false, err
	}
	return rec, exact, nil
}

// liveFactsSQL are the tenant's live facts of a scope, subject and
// predicate.
const liveFactsSQL = `
SELECT ` + recordColumns + ` FROM records
WHERE tenant_id = $1 AND type = 'semantic' AND status IN ('active', 'contested')
	AND scope = $2 AND subject = $3 AND predicate = $4
ORDER BY id`

// LiveFacts returns the tenant's live facts with a scope, subject and
// predicate, whatever their conditions and object.
func LiveFacts(ctx context.Context, db pg.DBTX, tenant, scope, subject, predicate string) ([]memory.Record, error) {
	rows, err := db.Query(ctx, liveFactsSQL, tenant, scope, subject, predicate)
	if err != nil {
		return nil, fmt.Errorf("read facts: %w", err)
	}
	recs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (memory.Record, error) { return scanRecord(row) })
	if err != nil {
		return nil, fmt.Errorf("read facts: %w", err)
	}
	return recs, nil
}

const stampsSQL = `SELECT record_id, stamp FROM provenance WHERE tenant_id = $1 AND record_id = ANY($2)`

// Stamps returns the provenance stamps of the records among ids that have
// one, by record.
func Stamps(ctx context.Context, db pg.DBTX, tenant string, ids []uuid.UUID) (map[uuid.UUID]json.RawMessage, error) {
	rows, err := db.Query(ctx, stampsSQL, tenant, ids)
	if err != nil {
		return nil, fmt.Errorf("read provenance: %w", err)
	}
	defer rows.Close()
	out := map[uuid.UUID]json.RawMessage{}
	for rows.Next() {
		var id uuid.UUID
		var stamp []byte
		if err := rows.Scan(&id, &stamp); err != nil {
			return nil, fmt.Errorf("read provenance: %w", err)
		}
		out[id] = stamp
	}
	return out, rows.Err()
}

const evidenceEdgesSQL = `
SELECT r.id, coalesce(array_agg(DISTINCT src.ref) FILTER (WHERE src.ref IS NOT NULL), '{}'),
	coalesce(array_agg(DISTINCT rel.target_id) FILTER (WHERE rel.target_id IS NOT NULL), '{}')
FROM records r
LEFT JOIN LATERAL jsonb_to_recordset(CASE jsonb_typeof(r.provenance -> 'sources') WHEN 'array' THEN r.provenance -> 'sources' ELSE '[]' END)
	AS src(kind text, ref text) ON src.kind = 'record'
LEFT JOIN relations rel ON rel.tenant_id = r.tenant_id AND rel.source_id = r.id AND rel.predicate IN ('derived_from', 'supersedes', 'forked_from')
WHERE r.tenant_id = $1 AND r.id = ANY($2)
GROUP BY r.id`

// EvidenceEdges returns, for each record among ids, the refs of its
// evidence of kind record and the targets of its derived_from, supersedes
// and forked_from relations: the edges of the provenance graph a cycle
// check walks.
func EvidenceEdges(ctx context.Context, db pg.DBTX, tenant string, ids []uuid.UUID) (map[uuid.UUID][]string, map[uuid.UUID][]uuid.UUID, error) {
	rows, err := db.Query(ctx, evidenceEdgesSQL, tenant, ids)
	if err != nil {
		return nil, nil, fmt.Errorf("read evidence: %w", err)
	}
	defer rows.Close()
	refs, rels := map[uuid.UUID][]string{}, map[uuid.UUID][]uuid.UUID{}
	for rows.Next() {
		var id uuid.UUID
		var rf []string
		var tg []uuid.UUID
		if err := rows.Scan(&id, &rf, &tg); err != nil {
			return nil, nil, fmt.Errorf("read evidence: %w", err)
		}
		refs[id], rels[id] = rf, tg
	}
	return refs, rels, rows.Err()
}

const scanProvenanceSQL = `
SELECT tenant_id, record_id, stamp, content_hash, fingerprint, key_id, signature, tampered_at FROM provenance
WHERE (tenant_id, record_id) > ($1, $2)
ORDER BY tenant_id, record_id
LIMIT $3`

// ScanProvenance returns up to limit stamps after key after, in key order,
// across tenants (for the audit job).
func ScanProvenance(ctx context.Context, db pg.DBTX, after Key, limit int) ([]ProvenanceRow, error) {
	rows, err := db.Query(ctx, scanProvenanceSQL, after.Tenant, after.ID, limit)
	if err != nil {
		return nil, fmt.Errorf("scan provenance: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ProvenanceRow, error) {
		var p ProvenanceRow
		err := row.Scan(&p.Tenant, &p.RecordID, &p.Stamp, &p.ContentHash, &p.Fingerprint, &p.KeyID, &p.Signature, &p.TamperedAt)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("scan provenance: %w", err)
	}
	return out, nil
}

const markTamperedSQL = `
WITH marked AS (
	UPDATE provenance p SET tampered_at = $3
	FROM unnest($1::text[], $2::uuid[]) AS u(tenant_id, record_id)
	WHERE p.tenant_id = u.tenant_id AND p.record_id = u.record_id AND p.tampered_at IS NULL
	RETURNING p.tenant_id, p.record_id
)
INSERT INTO audit_log (tenant_id, record_id, action, actor, rationale)
SELECT tenant_id, record_id, 'provenance_tampered', $4, $5 FROM marked`

// MarkTampered marks stamps whose signature no longer verifies, once each,
// with an audit entry for each record.
func MarkTampered(ctx context.Context, db pg.DBTX, keys []Key, at time.Time, actor, rationale string) (int64, error) {
	tenants, ids := make([]string, len(keys)), make([]uuid.UUID, len(keys))
	for i, k := range keys {
		tenants[i], ids[i] = k.Tenant, k.ID
	}
	tag, err := db.Exec(ctx, markTamperedSQL, tenants, ids, at, actor, rationale)
	if err != nil {
		return 0, fmt.Errorf("mark tampered provenance: %w", err)
	}
	return tag.RowsAffected(), nil
}

const recentReadersSQL = `SELECT count(DISTINCT agent_id) FROM retrievals WHERE tenant_id = $1 AND at >= $2`

// RecentReaders counts the agents that retrieved from the tenant since a
// time: the approval gate's blast radius.
func RecentReaders(ctx context.Context, db pg.DBTX, tenant string, since time.Time) (int, error) {
	var n int
	if err := db.QueryRow(ctx, recentReadersSQL, tenant, since).Scan(&n); err != nil {
		return 0, fmt.Errorf("count readers: %w", err)
	}
	return n, nil
}
