package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
)

// The statements of retention (write-path RFC §12.10.4) and the compliance
// report (§12.10.5). A record's retention class is the database's
// engram_retention_class(tags, sensitivity) (migration 021), on which the
// records_retention index is built; a record is past retention when it was
// created before its class's cutoff, whatever its salience, pins or
// deletion policy.

// retentionExpireSQL soft-deletes, oldest first, up to $3 records of class
// $1 created before $2 that are not expired yet: each becomes expired as
// its next version (snapshot by trigger), with an audit entry, and decay's
// purge deletes it after its grace period. A record an operator deleted
// becomes expired too, so that the purge takes it. A semantic payload loses
// its revision status, as expireSQL does. Locked rows are skipped: the next
// run takes them.
const retentionExpireSQL = `
WITH doomed AS (
	SELECT tenant_id, id FROM records
	WHERE engram_retention_class(tags, sensitivity) = $1 AND created_at < $2 AND status <> 'expired'
	ORDER BY created_at, tenant_id, id
	LIMIT $3
	FOR UPDATE SKIP LOCKED
), expired AS (
	UPDATE records r SET status = 'expired', version = r.version + 1, updated_at = $4, deleted_at = NULL,
		payload = CASE
			WHEN r.type <> 'semantic' OR NOT r.payload ? 'revision' THEN r.payload
			WHEN (r.payload -> 'revision') - 'status' = '{}'::jsonb THEN r.payload - 'revision'
			ELSE jsonb_set(r.payload, '{revision}', (r.payload -> 'revision') - 'status')
		END
	FROM doomed d
	WHERE r.tenant_id = d.tenant_id AND r.id = d.id
	RETURNING r.tenant_id, r.id, r.version
)
INSERT INTO audit_log (tenant_id, record_id, action, actor, version, rationale)
SELECT tenant_id, id, 'expire', $5, version, $6 FROM expired`

// ExpirePastRetention soft-deletes up to limit records of class created
// before cutoff that are not expired yet, overriding pins, salience and
// deletion policy (§12.10.4: "regardless of relevance"). Each becomes
// expired at at, a revision with an audit entry by actor giving rationale
// (which names no content). It returns how many it expired.
func ExpirePastRetention(ctx context.Context, db pg.DBTX, class memory.RetentionClass, cutoff, at time.Time, limit int, actor, rationale string) (int, error) {
	tag, err := db.Exec(ctx, retentionExpireSQL, string(class), cutoff.UTC(), limit, at.UTC(), actor, rationale)
	if err != nil {
		return 0, fmt.Errorf("expire records past retention: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// retentionPurgeSQL hard-deletes, oldest first, up to $3 records of class
// $1 created before $2, whatever their status, with their versions,
// relations, entries, vectors and feedback (by cascade), leaving an audit
// entry for each that names no content. It returns the artifact references
// of purged episodes.
const retentionPurgeSQL = `
WITH doomed AS (
	SELECT tenant_id, id FROM records
	WHERE engram_retention_class(tags, sensitivity) = $1 AND created_at < $2
	ORDER BY created_at, tenant_id, id
	LIMIT $3
	FOR UPDATE SKIP LOCKED
), gone AS (
	DELETE FROM records r USING doomed d
	WHERE r.tenant_id = d.tenant_id AND r.id = d.id
	RETURNING r.tenant_id, r.id, r.version, CASE WHEN r.type = 'episodic' THEN r.payload -> 'artifacts' END AS artifacts
), audited AS (
	INSERT INTO audit_log (tenant_id, record_id, action, actor, version, rationale)
	SELECT tenant_id, id, 'purge', $4, version + 1, $5 FROM gone
)
SELECT tenant_id, artifacts FROM gone`

// PurgePastRetention hard-deletes up to limit records of class created
// before cutoff, whatever their status, pins, salience or deletion policy
// (§12.10.4: "hard delete + audit"), and the artifacts of purged episodes
// no remaining record references. Each purged record leaves an audit entry
// by actor giving rationale, naming its id only.
func PurgePastRetention(ctx context.Context, db pg.DBTX, class memory.RetentionClass, cutoff time.Time, limit int, actor, rationale string) (PurgeResult, error) {
	res, err := purge(ctx, db, retentionPurgeSQL, string(class), cutoff.UTC(), limit, actor, rationale)
	if err != nil {
		return res, fmt.Errorf("purge records past retention: %w", err)
	}
	return res, nil
}

// RetentionCount is how many records of one tenant, class and status are
// past retention, and the oldest one's creation time.
type RetentionCount struct {
	Tenant        string
	Status        memory.Status
	Count         int64
	OldestCreated time.Time
}

const pastRetentionSQL = `
SELECT tenant_id, status, count(*), min(created_at) FROM records
WHERE engram_retention_class(tags, sensitivity) = $1 AND created_at < $2 AND ($3 OR status <> 'expired')
GROUP BY tenant_id, status
ORDER BY tenant_id, status`

// PastRetention counts the records of class created before cutoff, by
// tenant and status: the records retention has yet to act on. Expired
// records count only when withExpired (under hard delete, they must go
// too; under soft delete, they are done).
func PastRetention(ctx context.Context, db pg.DBTX, class memory.RetentionClass, cutoff time.Time, withExpired bool) ([]RetentionCount, error) {
	rows, err := db.Query(ctx, pastRetentionSQL, string(class), cutoff.UTC(), withExpired)
	if err != nil {
		return nil, fmt.Errorf("count records past retention: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RetentionCount, error) {
		var c RetentionCount
		err := row.Scan(&c.Tenant, &c.Status, &c.Count, &c.OldestCreated)
		c.OldestCreated = c.OldestCreated.UTC()
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("count records past retention: %w", err)
	}
	return out, nil
}

// TenantCount is a count of one tenant's records, with a few of their ids
// as examples.
type TenantCount struct {
	Tenant string
	Count  int64
	// Examples are up to five record ids, the oldest first.
	Examples []string
}

// unmarkedPIISQL finds records tagged PII-bearing whose sensitivity is
// below $1: personal data marked public or low. The containment reads the
// records_by_tag index.
const unmarkedPIISQL = `
SELECT tenant_id, count(*), (array_agg(id::text ORDER BY created_at, id))[1:5] FROM records
WHERE tags @> '{pii}' AND sensitivity_rank < $1
GROUP BY tenant_id
ORDER BY tenant_id`

// UnmarkedPII counts, by tenant, the records tagged [memory.PIITag] whose
// sensitivity ranks below min.
func UnmarkedPII(ctx context.Context, db pg.DBTX, min memory.Sensitivity) ([]TenantCount, error) {
	return tenantCounts(ctx, db, "count unmarked personal data", unmarkedPIISQL, min.Rank())
}

// futureCreatedSQL finds records created after $1: a creation time in the
// future puts a record out of retention's reach until then. Naming every
// class lets it read the records_retention index.
const futureCreatedSQL = `
SELECT tenant_id, count(*), (array_agg(id::text ORDER BY created_at, id))[1:5] FROM records
WHERE engram_retention_class(tags, sensitivity) IN ('pii', 'business_sensitive', 'general', 'public') AND created_at > $1
GROUP BY tenant_id
ORDER BY tenant_id`

// CreatedAfter counts, by tenant, the records whose creation time is after
// t.
func CreatedAfter(ctx context.Context, db pg.DBTX, t time.Time) ([]TenantCount, error) {
	return tenantCounts(ctx, db, "count records created in the future", futureCreatedSQL, t.UTC())
}

func tenantCounts(ctx context.Context, db pg.DBTX, what, sql string, args ...any) ([]TenantCount, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (TenantCount, error) {
		var c TenantCount
		return c, row.Scan(&c.Tenant, &c.Count, &c.Examples)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// keepReports is how many compliance reports the table keeps.
const keepReports = 20

const (
	saveReportSQL  = `INSERT INTO compliance_reports (run_id, at, report) VALUES ($1, $2, $3)`
	trimReportsSQL = `
DELETE FROM compliance_reports WHERE id NOT IN (SELECT id FROM compliance_reports ORDER BY id DESC LIMIT $1)`
	latestReportSQL = `SELECT report FROM compliance_reports ORDER BY id DESC LIMIT 1`
)

// SaveComplianceReport stores a compliance report (JSON, naming no
// content) written at at by the job run runID (0 for none), and drops all
// but the newest few.
func SaveComplianceReport(ctx context.Context, db pg.DBTX, runID int64, at time.Time, report json.RawMessage) error {
	var run *int64
	if runID != 0 {
		run = &runID
	}
	return pg.WithTx(ctx, db, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, saveReportSQL, run, at.UTC(), report); err != nil {
			return fmt.Errorf("save compliance report: %w", err)
		}
		if _, err := tx.Exec(ctx, trimReportsSQL, keepReports); err != nil {
			return fmt.Errorf("trim compliance reports: %w", err)
		}
		return nil
	})
}

// LatestComplianceReport returns the newest compliance report, or
// [ErrNotFound] when none was written.
func LatestComplianceReport(ctx context.Context, db pg.DBTX) (json.RawMessage, error) {
	var report json.RawMessage
	err := db.QueryRow(ctx, latestReportSQL).Scan(&report)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read compliance report: %w", err)
	}
	return report, nil
}
