package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
)

// AuditRow is one audit entry to write: who did what to which version of a
// record, why, on what evidence (substrate RFC §15A.8).
type AuditRow struct {
	RecordID  uuid.UUID
	Version   int
	Action    string
	Actor     string
	Rationale string
	Evidence  []memory.Source
}

const insertAuditSQL = `
INSERT INTO audit_log (tenant_id, record_id, action, actor, version, rationale, evidence)
VALUES ($1, $2, $3, $4, $5, $6, $7)`

// InsertAudit writes an audit entry.
func InsertAudit(ctx context.Context, db pg.DBTX, tenant string, a AuditRow) error {
	if _, err := db.Exec(ctx, insertAuditSQL, tenant, a.RecordID, a.Action, a.Actor, a.Version, a.Rationale, nonNil(a.Evidence)); err != nil {
		return fmt.Errorf("audit %s: %w", a.Action, err)
	}
	return nil
}

// NewRecord is a new record to write with its audit entry and, for the
// types that have one, its provenance stamp.
type NewRecord struct {
	Record     memory.Record
	Inherited  bool // see [InsertRecord]
	Audit      AuditRow
	Provenance *ProvenanceRow
}

// InsertNew writes new records with their audit entries and stamps in one
// round trip: the statements of [InsertRecord], [InsertAudit] and
// [InsertProvenance], pipelined in one batch. Call it in a transaction: a
// failed statement fails the rest.
func InsertNew(ctx context.Context, db pg.DBTX, tenant string, recs []NewRecord) error {
	if len(recs) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, n := range recs {
		b.Queue(insertRecordSQL, append(recordArgs(tenant, n.Record), n.Inherited)...)
	}
	for _, n := range recs {
		a := n.Audit
		b.Queue(insertAuditSQL, tenant, a.RecordID, a.Action, a.Actor, a.Version, a.Rationale, nonNil(a.Evidence))
	}
	for _, n := range recs {
		if p := n.Provenance; p != nil {
			var sig any
			if p.KeyID != "" {
				sig = p.Signature
			}
			b.Queue(insertProvenanceSQL, p.Tenant, p.RecordID, p.Stamp, p.ContentHash, p.Fingerprint, p.KeyID, sig)
		}
	}
	res := db.SendBatch(ctx, b)
	defer res.Close()
	for _, n := range recs {
		if _, err := res.Exec(); err != nil {
			return writeError(tenant, n.Record.ID, err)
		}
	}
	for _, n := range recs {
		if _, err := res.Exec(); err != nil {
			return fmt.Errorf("audit %s: %w", n.Audit.Action, err)
		}
	}
	for _, n := range recs {
		if n.Provenance == nil {
			continue
		}
		if _, err := res.Exec(); err != nil {
			return fmt.Errorf("stamp provenance: %w", err)
		}
	}
	if err := res.Close(); err != nil {
		return fmt.Errorf("write records: %w", err)
	}
	return nil
}

const insertRelationSQL = `
INSERT INTO relations (tenant_id, source_id, predicate, target_id, weight)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (tenant_id, source_id, predicate, target_id) DO NOTHING`

// AddRelation writes a relation from source, once.
func AddRelation(ctx context.Context, db pg.DBTX, tenant string, source uuid.UUID, rel memory.Relation) error {
	if _, err := db.Exec(ctx, insertRelationSQL, tenant, source, rel.Predicate, rel.TargetID, rel.Weight); err != nil {
		return fmt.Errorf("add relation: %w", err)
	}
	return nil
}

const existingIDsSQL = `SELECT id FROM records WHERE tenant_id = $1 AND id = ANY($2)`

const insertRelationsSQL = `
INSERT INTO relations (tenant_id, source_id, predicate, target_id, weight)
SELECT $1, $2, r.predicate, r.target_id, r.weight
FROM unnest($3::text[], $4::uuid[], $5::float8[]) AS r(predicate, target_id, weight)
ON CONFLICT (tenant_id, source_id, predicate, target_id) DO NOTHING`

// AddRelations writes relations from source, each once, in one statement.
func AddRelations(ctx context.Context, db pg.DBTX, tenant string, source uuid.UUID, rels []memory.Relation) error {
	if len(rels) == 0 {
		return nil
	}
	preds := make([]string, len(rels))
	targets := make([]uuid.UUID, len(rels))
	weights := make([]*float64, len(rels))
	for i, r := range rels {
		preds[i], targets[i], weights[i] = string(r.Predicate), r.TargetID, r.Weight
	}
	if _, err := db.Exec(ctx, insertRelationsSQL, tenant, source, preds, targets, weights); err != nil {
		return fmt.Errorf("add relations: %w", err)
	}
	return nil
}

// ExistingIDs returns which of ids are records of the tenant.
func ExistingIDs(ctx context.Context, db pg.DBTX, tenant string, ids []uuid.UUID) ([]uuid.UUID, error) {
	rows, err := db.Query(ctx, existingIDsSQL, tenant, ids)
	if err != nil {
		return nil, fmt.Errorf("read record ids: %w", err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("read record ids: %w", err)
	}
	return found, nil
}

const purgeRecordSQL = `DELETE FROM records WHERE tenant_id = $1 AND id = $2 AND status IN ('deleted', 'expired')`

// PurgeRecord hard-deletes a deleted or expired record with its versions
// and relations (the append-only version log allows it only in a
// transaction that says so). Call it in a transaction.
func PurgeRecord(ctx context.Context, db pg.DBTX, tenant string, id uuid.UUID) error {
	if _, err := db.Exec(ctx, "SET LOCAL engram.purge = 'on'"); err != nil {
		return fmt.Errorf("allow purge: %w", err)
	}
	if _, err := db.Exec(ctx, purgeRecordSQL, tenant, id); err != nil {
		return fmt.Errorf("purge record: %w", err)
	}
	if _, err := db.Exec(ctx, "SET LOCAL engram.purge = 'off'"); err != nil {
		return fmt.Errorf("end purge: %w", err)
	}
	return nil
}

const previousStatusSQL = `
SELECT snapshot ->> 'status' FROM record_versions
WHERE tenant_id = $1 AND record_id = $2 AND version = $3`

// StatusAt returns a record's status at a version, or "" when that version
// is not in the log.
func StatusAt(ctx context.Context, db pg.DBTX, tenant string, id uuid.UUID, version int) (memory.Status, error) {
	var s string
	err := db.QueryRow(ctx, previousStatusSQL, tenant, id, version).Scan(&s)
	if err != nil && err != pgx.ErrNoRows {
		return "", fmt.Errorf("read status at version %d: %w", version, err)
	}
	return memory.Status(s), nil
}
