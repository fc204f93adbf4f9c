package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
)

// RecordMark is a position in a time order of records: the time of a
// record's latest revision (or of its vector), then tenant and record id.
type RecordMark struct {
	At     time.Time `json:"at"`
	Tenant string    `json:"tenant"`
	ID     uuid.UUID `json:"id"`
}

// ChangedRecord is a live durable record revised (or embedded) after a
// mark, with its tenant and its place in the order.
type ChangedRecord struct {
	Tenant string
	Record memory.Record
	Mark   RecordMark
}

// changedRecordsSQL reads the live semantic, competence and plan records
// whose latest revision is after a mark, across tenants, in mark order
// (records_by_revision, migration 014).
const changedRecordsSQL = `
SELECT tenant_id, ` + recordColumns + ` FROM records
WHERE type IN ('semantic', 'competence', 'plan_graph') AND status IN ('active', 'contested')
	AND (updated_at, tenant_id, id) > ($1::timestamptz, $2::text, $3::uuid)
ORDER BY updated_at, tenant_id, id
LIMIT $4`

// ChangedRecords returns up to limit live durable records (semantic,
// competence, plan graph) created or revised after mark, in revision order.
func ChangedRecords(ctx context.Context, db pg.DBTX, mark RecordMark, limit int) ([]ChangedRecord, error) {
	rows, err := db.Query(ctx, changedRecordsSQL, mark.At, mark.Tenant, mark.ID, limit)
	if err != nil {
		return nil, fmt.Errorf("read changed records: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ChangedRecord, error) {
		var c ChangedRecord
		var err error
		c.Record, err = scanRecord(row, &c.Tenant)
		c.Mark = RecordMark{At: c.Record.UpdatedAt, Tenant: c.Tenant, ID: c.Record.ID}
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("read changed records: %w", err)
	}
	return out, nil
}

// embeddedRecordsSQL reads the live semantic, competence and plan records
// whose vector was written after a mark, across tenants, in the order of
// the vectors' writing (record_vectors_by_embedding, migration 014).
const embeddedRecordsSQL = `
SELECT e.vt, e.vat, ` + recordColumns + ` FROM records
JOIN (
	SELECT tenant_id AS vt, record_id AS vid, embedded_at AS vat FROM record_vectors
	WHERE type IN ('semantic', 'competence', 'plan_graph')
) e ON records.tenant_id = e.vt AND records.id = e.vid
WHERE records.status IN ('active', 'contested') AND (e.vat, e.vt, e.vid) > ($1::timestamptz, $2::text, $3::uuid)
ORDER BY e.vat, e.vt, e.vid
LIMIT $4`

// EmbeddedRecords returns up to limit live durable records whose vector
// (of any model) was written after mark, in that order: the records
// vector near-duplicate detection has something new to compare for.
func EmbeddedRecords(ctx context.Context, db pg.DBTX, mark RecordMark, limit int) ([]ChangedRecord, error) {
	rows, err := db.Query(ctx, embeddedRecordsSQL, mark.At, mark.Tenant, mark.ID, limit)
	if err != nil {
		return nil, fmt.Errorf("read embedded records: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ChangedRecord, error) {
		var c ChangedRecord
		var err error
		c.Record, err = scanRecord(row, &c.Tenant, &c.Mark.At)
		c.Mark.Tenant, c.Mark.ID = c.Tenant, c.Record.ID
		c.Mark.At = c.Mark.At.UTC()
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("read embedded records: %w", err)
	}
	return out, nil
}

// sameContentAllSQL finds the tenant's other live records of a type and
// scope whose stored content hash or fingerprint is the one given, oldest
// first.
const sameContentAllSQL = `
SELECT ` + recordColumns + `
FROM provenance p JOIN records r ON r.tenant_id = p.tenant_id AND r.id = p.record_id
WHERE p.tenant_id = $1 AND r.type = $2 AND r.scope = $3 AND r.id <> $4 AND r.status IN ('active', 'contested')
	AND (p.content_hash = $5 OR ($6::bytea IS NOT NULL AND p.fingerprint = $6))
ORDER BY r.created_at, r.id
LIMIT $7`

// SameContentAll returns up to limit of the tenant's live records of a
// type and scope, other than id, with the content hash or else the
// fingerprint given (nil for none), oldest first: the candidates of the
// dedup tiers 1 and 2 (write-path RFC §12.3.2) among stored records.
func SameContentAll(ctx context.Context, db pg.DBTX, tenant string, typ memory.Type, scope string, id uuid.UUID, hash, fingerprint []byte, limit int) ([]memory.Record, error) {
	var fp any
	if fingerprint != nil {
		fp = fingerprint
	}
	rows, err := db.Query(ctx, sameContentAllSQL, tenant, typ, scope, id, hash, fp, limit)
	if err != nil {
		return nil, fmt.Errorf("read same content: %w", err)
	}
	recs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (memory.Record, error) { return scanRecord(row) })
	if err != nil {
		return nil, fmt.Errorf("read same content: %w", err)
	}
	return recs, nil
}

// Near is a record near another in vector space.
type Near struct {
	ID         uuid.UUID
	Similarity float64
}

// nearDuplicatesSQL ranks, for each model a record has a vector of, the
// tenant's other vectors of its type exactly by cosine distance (sparse
// against sparse, dense against dense), keeps those of live records of its
// scope within the distance given, nearest first. A record without a
// vector gives no row; one with a vector and no neighbour gives a row with
// no id. A zero vector's distance is NaN, which is never within a bound.
const nearDuplicatesSQL = `
WITH me AS (
	SELECT model, sparse, dense FROM record_vectors WHERE tenant_id = $1 AND record_id = $2
)
SELECT n.record_id, 1 - n.dist FROM me LEFT JOIN LATERAL (
	SELECT o.record_id, coalesce(o.sparse <=> me.sparse, o.dense <=> me.dense) AS dist
	FROM record_vectors o JOIN records r ON r.tenant_id = o.tenant_id AND r.id = o.record_id
	WHERE o.tenant_id = $1 AND o.model = me.model AND o.type = $3 AND o.record_id <> $2
		AND r.scope = $4 AND r.status IN ('active', 'contested')
		AND coalesce(o.sparse <=> me.sparse, o.dense <=> me.dense) <= $5
	ORDER BY 2, 1
	LIMIT $6
) n ON true
ORDER BY 2 DESC NULLS LAST, 1`

// NearDuplicates returns up to limit of the tenant's live records of a
// type and scope whose vector is at or above a cosine similarity to the
// record id's, most similar first (the dedup tier 3, write-path RFC
// §12.3.2), and whether id has a vector at all: without one the tier has
// nothing to compare.
func NearDuplicates(ctx context.Context, db pg.DBTX, tenant string, id uuid.UUID, typ memory.Type, scope string, similarity float64, limit int) ([]Near, bool, error) {
	rows, err := db.Query(ctx, nearDuplicatesSQL, tenant, id, typ, scope, 1-similarity, limit)
	if err != nil {
		return nil, false, fmt.Errorf("read near duplicates: %w", err)
	}
	defer rows.Close()
	var out []Near
	embedded := false
	for rows.Next() {
		embedded = true
		var other *uuid.UUID
		var sim *float64
		if err := rows.Scan(&other, &sim); err != nil {
			return nil, false, fmt.Errorf("read near duplicates: %w", err)
		}
		if other != nil && sim != nil {
			out = append(out, Near{ID: *other, Similarity: *sim})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("read near duplicates: %w", err)
	}
	return out, embedded, nil
}
