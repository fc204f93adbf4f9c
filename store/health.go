package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
)

// HealthCount is one count of a tenant's health series: Metric names what
// is counted, Bucket the start of the time bucket it falls in, Key what it is grouped by (a record type, an audit action, a
// feedback outcome, a rejection reason), N the count.
type HealthCount struct {
	Metric string
	Bucket time.Time
	Key    string
	N      int64
}

// The metrics of [HealthSeries]' counts.
const (
	// HealthCreated: records created in the bucket, by type (growth).
	HealthCreated = "created"
	// HealthFeedback: feedback given in the bucket, by "type:outcome".
	HealthFeedback = "feedback"
	// HealthRetrievals: retrievals answered in the bucket (key empty).
	HealthRetrievals = "retrievals"
	// HealthAudit: audit entries in the bucket, by action.
	HealthAudit = "audit"
	// HealthRejected: reviews rejected in the bucket, by rejection reason.
	HealthRejected = "rejected"
)

// healthSeriesSQL counts, in one round trip, what the health page charts:
// each part reads one tenant's time range through an index made for it
// (migration 025), and date_bin puts each row in its bucket, counted from
// the range's start ($2). Feedback looks its record's type up row by row
// (a subquery, not a join the planner could answer by hashing every
// record of the tenant), so its cost follows the range. Records still stored are counted, whatever their
// status: the growth of what the tenant holds. What reads every record of
// the tenant is [HeldRecords], apart.
const healthSeriesSQL = `
SELECT 'created', date_bin($4::interval, created_at, $2), type, count(*)
  FROM records WHERE tenant_id = $1 AND created_at >= $2 AND created_at < $3
 GROUP BY 2, 3
UNION ALL
SELECT 'feedback', date_bin($4::interval, f.at, $2),
       coalesce((SELECT r.type FROM records r WHERE r.tenant_id = f.tenant_id AND r.id = f.record_id), '') || ':' || f.outcome, count(*)
  FROM feedback f
 WHERE f.tenant_id = $1 AND f.at >= $2 AND f.at < $3
 GROUP BY 2, 3
UNION ALL
SELECT 'retrievals', date_bin($4::interval, at, $2), '', count(*)
  FROM retrievals WHERE tenant_id = $1 AND at >= $2 AND at < $3
 GROUP BY 2
UNION ALL
SELECT 'audit', date_bin($4::interval, at, $2), action, count(*)
  FROM audit_log WHERE tenant_id = $1 AND at >= $2 AND at < $3
 GROUP BY 2, 3
UNION ALL
SELECT 'rejected', date_bin($4::interval, decided_at, $2), rejection_reason, count(*)
  FROM reviews WHERE tenant_id = $1 AND status = 'rejected' AND decided_at >= $2 AND decided_at < $3
 GROUP BY 2, 3`

// HealthSeries returns a tenant's health counts over [from, to), in
// buckets of step from from.
func HealthSeries(ctx context.Context, db pg.DBTX, tenant string, from, to time.Time, step time.Duration) ([]HealthCount, error) {
	rows, err := db.Query(ctx, healthSeriesSQL, tenant, from, to, step)
	if err != nil {
		return nil, fmt.Errorf("read health series: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (HealthCount, error) {
		var c HealthCount
		var bucket *time.Time
		err := row.Scan(&c.Metric, &bucket, &c.Key, &c.N)
		if bucket != nil {
			c.Bucket = bucket.UTC()
		}
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("read health series: %w", err)
	}
	return out, nil
}

// Held is how many records of a type and status a tenant holds, created
// before a time or not.
type Held struct {
	Type, Status string
	Before       bool
	N            int64
}

// heldSQL is the one count that reads every record of the tenant: a single
// index-only pass, grouped by plain columns so that PostgreSQL can split it
// over parallel workers.
const heldSQL = `
SELECT type, status, created_at < $2, count(*) FROM records WHERE tenant_id = $1 GROUP BY 1, 2, 3`

// HeldRecords counts a tenant's records by type and status, and whether
// they were created before before.
func HeldRecords(ctx context.Context, db pg.DBTX, tenant string, before time.Time) ([]Held, error) {
	rows, err := db.Query(ctx, heldSQL, tenant, before)
	if err != nil {
		return nil, fmt.Errorf("count held records: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Held, error) {
		var h Held
		return h, row.Scan(&h.Type, &h.Status, &h.Before, &h.N)
	})
	if err != nil {
		return nil, fmt.Errorf("count held records: %w", err)
	}
	return out, nil
}

// HealthTotals are a tenant's counts over a time range that the composite
// health score (write-path RFC §12.12.7) reads besides the series.
type HealthTotals struct {
	// Tasks are the distinct retrievals (feedback scopes) given feedback in
	// the range; FailedTasks those with a record used in a failure.
	Tasks, FailedTasks int64
	// Committed are the records created in the range; Refuted those of them
	// since retracted or contested.
	Committed, Refuted int64
	// Pending are the tenant's pending reviews now; Overdue those of them
	// past their deadline at the range's end.
	Pending, Overdue int64
}

const healthTotalsSQL = `
SELECT
  (SELECT count(DISTINCT scope) FROM feedback WHERE tenant_id = $1 AND at >= $2 AND at < $3),
  (SELECT count(DISTINCT scope) FROM feedback WHERE tenant_id = $1 AND at >= $2 AND at < $3 AND outcome = 'used_failure'),
  (SELECT count(*) FROM records WHERE tenant_id = $1 AND created_at >= $2 AND created_at < $3),
  (SELECT count(*) FROM records WHERE tenant_id = $1 AND created_at >= $2 AND created_at < $3
      AND status IN ('retracted', 'contested')),
  (SELECT count(*) FROM reviews WHERE tenant_id = $1 AND status = 'pending'),
  (SELECT count(*) FROM reviews WHERE tenant_id = $1 AND status = 'pending' AND sla_deadline < $3)`

// ReadHealthTotals returns a tenant's [HealthTotals] over [from, to).
func ReadHealthTotals(ctx context.Context, db pg.DBTX, tenant string, from, to time.Time) (HealthTotals, error) {
	var t HealthTotals
	err := db.QueryRow(ctx, healthTotalsSQL, tenant, from, to).Scan(&t.Tasks, &t.FailedTasks,
		&t.Committed, &t.Refuted, &t.Pending, &t.Overdue)
	if err != nil {
		return t, fmt.Errorf("read health totals: %w", err)
	}
	return t, nil
}

// SalienceBucket is how many of a tenant's live records of a type have a
// stored salience in histogram bucket Bucket of [SalienceHistogram]'s
// bounds (0 for at most bounds[0], len(bounds) for above the last).
type SalienceBucket struct {
	Type   string
	Bucket int
	N      int64
}

// salienceHistogramSQL buckets live records' stored salience: the value
// the last decay sweep materialised (or the one they were written with),
// so one index-only pass per type, not a curve evaluated per record.
// width_bucket over the bounds counts a value equal to a bound in the next
// bucket; a histogram's bucket i holds the values above bounds[i-1] and at
// most bounds[i], hence the negation.
const (
	salienceHistogramSQL = `
SELECT type, cardinality($2::float8[]) - width_bucket(-salience, (SELECT array_agg(-b ORDER BY b DESC) FROM unnest($2::float8[]) b)), count(*)
  FROM records WHERE tenant_id = $1 AND status IN ('active', 'contested')
 GROUP BY 1, 2`
	// salienceSampleSQL is salienceHistogramSQL over a sample of the
	// table's pages ($3 percent), the same sample every time.
	salienceSampleSQL = `
SELECT type, cardinality($2::float8[]) - width_bucket(-salience, (SELECT array_agg(-b ORDER BY b DESC) FROM unnest($2::float8[]) b)), count(*)
  FROM records TABLESAMPLE SYSTEM ($3) REPEATABLE (16)
 WHERE tenant_id = $1 AND status IN ('active', 'contested')
 GROUP BY 1, 2`
)

// SalienceHistogram returns how a tenant's live records' stored salience
// falls over bounds (ascending), by type: counted exactly when percent is
// 100 or more, else over that percentage of the table's pages, which the
// caller scales.
func SalienceHistogram(ctx context.Context, db pg.DBTX, tenant string, bounds []float64, percent float64) ([]SalienceBucket, error) {
	sql, args := salienceHistogramSQL, []any{tenant, bounds}
	if percent < 100 {
		sql, args = salienceSampleSQL, append(args, percent)
	}
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("read salience histogram: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (SalienceBucket, error) {
		var b SalienceBucket
		return b, row.Scan(&b.Type, &b.Bucket, &b.N)
	})
	if err != nil {
		return nil, fmt.Errorf("read salience histogram: %w", err)
	}
	return out, nil
}

const tenantsSQL = `SELECT id, created_at FROM tenants ORDER BY id`

// Tenant is one row of the tenants table.
type Tenant struct {
	ID      string
	Created time.Time
}

// Tenants lists every tenant, by id: the operator's view of who is stored,
// naming no tenant's content.
func Tenants(ctx context.Context, db pg.DBTX) ([]Tenant, error) {
	rows, err := db.Query(ctx, tenantsSQL)
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Tenant, error) {
		var t Tenant
		err := row.Scan(&t.ID, &t.Created)
		t.Created = t.Created.UTC()
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	return out, nil
}

// CompetenceUses is how a tenant's live procedures' performance moved:
// Successes and Failures are the change, over the versions recorded in the
// bucket starting at Bucket (zero: before the range), of the successes
// and failures the tenant's active or contested procedures hold. Summed
// from the start, they are what the live procedures held then.
type CompetenceUses struct {
	Bucket              time.Time
	Successes, Failures int64
}

// competenceUsesSQL reads each procedure's version log: a version counts
// the performance of its payload while the procedure is live (active or
// contested) and nothing otherwise (a draft, superseded, retracted or
// expired), and each version's change from the one before falls in the
// bucket it was recorded in. So a successor carrying its predecessor's
// counts adds only its new uses, once the predecessor's version as
// superseded has taken its counts away. A sealed payload has no readable
// performance: it counts nothing. Its cost follows the tenant's
// procedures' versions (records_by_type, then each one's version log).
const competenceUsesSQL = `
WITH v AS (
	SELECT v.record_id, v.version, v.recorded_at,
	       CASE WHEN v.snapshot ->> 'status' IN ('active', 'contested')
	            THEN coalesce((v.snapshot -> 'payload' -> 'performance' ->> 'successes')::bigint, 0) ELSE 0 END AS s,
	       CASE WHEN v.snapshot ->> 'status' IN ('active', 'contested')
	            THEN coalesce((v.snapshot -> 'payload' -> 'performance' ->> 'failures')::bigint, 0) ELSE 0 END AS f
	  FROM records r
	  JOIN record_versions v ON v.tenant_id = r.tenant_id AND v.record_id = r.id
	 WHERE r.tenant_id = $1 AND r.type = 'competence' AND v.recorded_at < $3
), d AS (
	SELECT recorded_at, s - lag(s, 1, 0::bigint) OVER w AS ds, f - lag(f, 1, 0::bigint) OVER w AS df
	  FROM v WINDOW w AS (PARTITION BY record_id ORDER BY version)
)
SELECT CASE WHEN recorded_at >= $2 THEN date_bin($4::interval, recorded_at, $2) END,
       coalesce(sum(ds), 0)::bigint, coalesce(sum(df), 0)::bigint
  FROM d GROUP BY 1`

// CompetencePerformance returns how a tenant's live procedures'
// successes and failures changed, before from and in each bucket of step
// from from until to.
func CompetencePerformance(ctx context.Context, db pg.DBTX, tenant string, from, to time.Time, step time.Duration) ([]CompetenceUses, error) {
	rows, err := db.Query(ctx, competenceUsesSQL, tenant, from, to, step)
	if err != nil {
		return nil, fmt.Errorf("read competence performance: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (CompetenceUses, error) {
		var c CompetenceUses
		var bucket *time.Time
		err := row.Scan(&bucket, &c.Successes, &c.Failures)
		if bucket != nil {
			c.Bucket = bucket.UTC()
		}
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("read competence performance: %w", err)
	}
	return out, nil
}
