package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
)

// Referrer is a record with a relation to another, and its status.
type Referrer struct {
	ID     uuid.UUID
	Status memory.Status
}

const referrersSQL = `
SELECT DISTINCT r.id, r.status
FROM relations rel
JOIN records r ON r.tenant_id = rel.tenant_id AND r.id = rel.source_id
WHERE rel.tenant_id = $1 AND rel.predicate = $2 AND rel.target_id = ANY($3::uuid[])
ORDER BY r.id`

// Referrers returns the records with a relation of predicate to any of
// targets (the relation's sources), in id order, whatever their status.
func Referrers(ctx context.Context, db pg.DBTX, tenant string, predicate memory.Predicate, targets []uuid.UUID) ([]Referrer, error) {
	rows, err := db.Query(ctx, referrersSQL, tenant, predicate, uuids(targets))
	if err != nil {
		return nil, fmt.Errorf("read referrers: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Referrer, error) {
		var r Referrer
		return r, row.Scan(&r.ID, &r.Status)
	})
	if err != nil {
		return nil, fmt.Errorf("read referrers: %w", err)
	}
	return out, nil
}

const insertFlagsSQL = `
INSERT INTO record_flags (tenant_id, record_id, flag, source_id, reason, at)
SELECT $1, id, $2, $3, $4, $5 FROM unnest($6::uuid[]) AS u(id)
ON CONFLICT (tenant_id, record_id, flag, source_id) DO NOTHING`

// InsertFlags flags records for re-validation because of source, once per
// (record, flag, source).
func InsertFlags(ctx context.Context, db pg.DBTX, tenant string, f memory.Flag, ids []uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := db.Exec(ctx, insertFlagsSQL, tenant, f.Kind, f.SourceID, f.Reason, f.At, uuids(ids)); err != nil {
		return fmt.Errorf("flag records: %w", err)
	}
	return nil
}

const clearFlagsSQL = `
DELETE FROM record_flags WHERE tenant_id = $1 AND source_id = $2 AND flag = $3
RETURNING record_id`

// ClearFlags removes the flags of a kind that source raised, and returns
// the records that carried them.
func ClearFlags(ctx context.Context, db pg.DBTX, tenant string, source uuid.UUID, kind memory.FlagKind) ([]uuid.UUID, error) {
	rows, err := db.Query(ctx, clearFlagsSQL, tenant, source, kind)
	if err != nil {
		return nil, fmt.Errorf("clear flags: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("clear flags: %w", err)
	}
	return ids, nil
}

const flagsSQL = `
SELECT record_id, flag, source_id, reason, at FROM record_flags
WHERE tenant_id = $1 AND record_id = ANY($2::uuid[])
ORDER BY record_id, at, source_id`

// AttachFlags sets the flags of recs, as they are now, with one query.
func AttachFlags(ctx context.Context, db pg.DBTX, tenant string, recs []memory.Record) error {
	if len(recs) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	rows, err := db.Query(ctx, flagsSQL, tenant, uuids(ids))
	if err != nil {
		return fmt.Errorf("read flags: %w", err)
	}
	defer rows.Close()
	byID := map[uuid.UUID][]memory.Flag{}
	for rows.Next() {
		var (
			id uuid.UUID
			f  memory.Flag
		)
		if err := rows.Scan(&id, &f.Kind, &f.SourceID, &f.Reason, &f.At); err != nil {
			return fmt.Errorf("read flags: %w", err)
		}
		f.At = f.At.UTC()
		byID[id] = append(byID[id], f)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read flags: %w", err)
	}
	for i := range recs {
		recs[i].Flags = byID[recs[i].ID]
	}
	return nil
}
