package store

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
)

// Review is a write held for a human reviewer (write-path RFC §12.6).
type Review struct {
	ID       uuid.UUID
	RecordID uuid.UUID
	// Tier is async or sync; Status pending, approved, rejected or
	// expired.
	Tier   string
	Status string
	// Risk is the write's risk score, RiskFactors the factor values it was
	// computed from; Reasons say why the write needs review.
	Risk        float64
	RiskFactors map[string]float64
	Reasons     []string
	Proposal    *ReviewProposal
	AgentID     string
	CreatedAt   time.Time
	SLADeadline time.Time
	EscalatedAt *time.Time
	DecidedAt   *time.Time
	// DecidedBy, Justification and RejectionReason are empty until a
	// decision.
	DecidedBy       string
	Justification   string
	RejectionReason string
	// Record is the draft as it stands now, as [ListReviews] and
	// [GetReviewWithRecord] read it; nil otherwise, or when it is gone.
	Record *memory.Record
}

// ReviewProposal is what approving a review does beyond activating its
// draft: Supersedes names a record the draft replaces. Its JSON is the
// reviews.proposal column's.
type ReviewProposal struct {
	Supersedes uuid.UUID `json:"supersedes"`
}

// ReviewPage is one page of a tenant's reviews, and the cursor of the
// next (empty on the last).
type ReviewPage struct {
	Reviews    []Review
	NextCursor string
}

// reviewColumns are the columns a review is read from, in [scanReview]'s
// order.
const reviewColumns = `id, record_id, tier, status, risk, risk_factors, reasons, proposal, coalesce(agent_id, ''),
	created_at, sla_deadline, escalated_at, decided_at, coalesce(decided_by, ''), justification, coalesce(rejection_reason, '')`

func scanReview(row pgx.Row) (Review, error) {
	var r Review
	err := row.Scan(&r.ID, &r.RecordID, &r.Tier, &r.Status, &r.Risk, &r.RiskFactors, &r.Reasons, &r.Proposal, &r.AgentID,
		&r.CreatedAt, &r.SLADeadline, &r.EscalatedAt, &r.DecidedAt, &r.DecidedBy, &r.Justification, &r.RejectionReason)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, ErrNotFound
	}
	if err != nil {
		return r, fmt.Errorf("scan review: %w", err)
	}
	r.CreatedAt, r.SLADeadline = r.CreatedAt.UTC(), r.SLADeadline.UTC()
	for _, t := range []*time.Time{r.EscalatedAt, r.DecidedAt} {
		if t != nil {
			*t = t.UTC()
		}
	}
	return r, nil
}

const insertReviewSQL = `
INSERT INTO reviews (tenant_id, id, record_id, tier, risk, risk_factors, reasons, proposal, agent_id, created_at, sla_deadline)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`

// InsertReview queues a pending review of a draft record.
func InsertReview(ctx context.Context, db pg.DBTX, tenant string, r Review) error {
	_, err := db.Exec(ctx, insertReviewSQL, tenant, r.ID, r.RecordID, r.Tier, r.Risk, r.RiskFactors, nonNil(r.Reasons),
		r.Proposal, nilIfZero(r.AgentID), r.CreatedAt, r.SLADeadline)
	if err != nil {
		return fmt.Errorf("insert review: %w", err)
	}
	return nil
}

const getReviewSQL = `SELECT ` + reviewColumns + ` FROM reviews WHERE tenant_id = $1 AND id = $2`

// GetReview returns a review, without its record.
func GetReview(ctx context.Context, db pg.DBTX, tenant string, id uuid.UUID) (Review, error) {
	return scanReview(db.QueryRow(ctx, getReviewSQL, tenant, id))
}

// LockReview reads a review for update: its decisions queue here. Call it
// in a transaction.
func LockReview(ctx context.Context, db pg.DBTX, tenant string, id uuid.UUID) (Review, error) {
	return scanReview(db.QueryRow(ctx, getReviewSQL+` FOR UPDATE`, tenant, id))
}

const decideReviewSQL = `
UPDATE reviews SET status = $3, decided_at = $4, decided_by = $5, justification = $6, rejection_reason = $7
WHERE tenant_id = $1 AND id = $2 AND status = 'pending'`

// DecideReview records a pending review's decision: r's status (approved,
// rejected or expired), time, decider, justification and rejection
// reason. [ErrNotFound] when it is not pending.
func DecideReview(ctx context.Context, db pg.DBTX, tenant string, r Review) error {
	tag, err := db.Exec(ctx, decideReviewSQL, tenant, r.ID, r.Status, r.DecidedAt, r.DecidedBy, r.Justification, nilIfZero(r.RejectionReason))
	if err != nil {
		return fmt.Errorf("decide review: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("review %s is not pending: %w", r.ID, ErrNotFound)
	}
	return nil
}

// ReviewFilter selects reviews for [ListReviews].
type ReviewFilter struct {
	// Statuses defaults to pending.
	Statuses []string
	Limit    int
	Cursor   string
}

const listReviewsSQL = `
SELECT ` + reviewColumns + ` FROM reviews
WHERE tenant_id = $1 AND status = ANY($2)
	AND ($3::timestamptz IS NULL OR (created_at, id) > ($3, $4::uuid))
ORDER BY created_at, id
LIMIT $5`

// ListReviews returns one page of a tenant's reviews, oldest first, each
// with its record as it stands now.
func ListReviews(ctx context.Context, db pg.DBTX, tenant string, f ReviewFilter) (ReviewPage, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	var (
		afterAt *time.Time
		afterID uuid.UUID
	)
	if f.Cursor != "" {
		at, id, err := decodeReviewCursor(f.Cursor)
		if err != nil {
			return ReviewPage{}, err
		}
		afterAt, afterID = &at, id
	}
	statuses := f.Statuses
	if len(statuses) == 0 {
		statuses = []string{"pending"}
	}
	rows, err := db.Query(ctx, listReviewsSQL, tenant, statuses, afterAt, afterID, limit+1)
	if err != nil {
		return ReviewPage{}, fmt.Errorf("list reviews: %w", err)
	}
	revs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Review, error) { return scanReview(row) })
	if err != nil {
		return ReviewPage{}, fmt.Errorf("list reviews: %w", err)
	}
	page := ReviewPage{Reviews: revs}
	if len(revs) > limit {
		page.Reviews = revs[:limit]
		last := page.Reviews[limit-1]
		page.NextCursor = encodeReviewCursor(last.CreatedAt, last.ID)
	}
	if err := attachDrafts(ctx, db, tenant, page.Reviews); err != nil {
		return ReviewPage{}, err
	}
	return page, nil
}

const recordsByIDSQL = `SELECT ` + recordColumns + ` FROM records WHERE tenant_id = $1 AND id = ANY($2)`

// attachDrafts reads the record of each review.
func attachDrafts(ctx context.Context, db pg.DBTX, tenant string, revs []Review) error {
	if len(revs) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(revs))
	for i, r := range revs {
		ids[i] = r.RecordID
	}
	rows, err := db.Query(ctx, recordsByIDSQL, tenant, ids)
	if err != nil {
		return fmt.Errorf("read reviewed records: %w", err)
	}
	recs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (memory.Record, error) { return scanRecord(row) })
	if err != nil {
		return fmt.Errorf("read reviewed records: %w", err)
	}
	if err := complete(ctx, db, tenant, recs, nil); err != nil {
		return err
	}
	byID := make(map[uuid.UUID]*memory.Record, len(recs))
	for i := range recs {
		byID[recs[i].ID] = &recs[i]
	}
	for i := range revs {
		revs[i].Record = byID[revs[i].RecordID]
	}
	return nil
}

// GetReviewWithRecord returns a review with its record as it stands now.
func GetReviewWithRecord(ctx context.Context, db pg.DBTX, tenant string, id uuid.UUID) (Review, error) {
	r, err := GetReview(ctx, db, tenant, id)
	if err != nil {
		return r, err
	}
	revs := []Review{r}
	if err := attachDrafts(ctx, db, tenant, revs); err != nil {
		return r, err
	}
	return revs[0], nil
}

// encodeReviewCursor encodes the place of a review in the oldest-first
// order: its creation time (microseconds) and id.
func encodeReviewCursor(at time.Time, id uuid.UUID) string {
	b := make([]byte, 8, 24)
	binary.BigEndian.PutUint64(b, uint64(at.UnixMicro()))
	return base64.RawURLEncoding.EncodeToString(append(b, id[:]...))
}

func decodeReviewCursor(c string) (time.Time, uuid.UUID, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) != 24 {
		return time.Time{}, uuid.Nil, ErrBadCursor
	}
	return time.UnixMicro(int64(binary.BigEndian.Uint64(b[:8]))).UTC(), uuid.UUID(b[8:]), nil
}

// ReviewKey names a review of some tenant.
type ReviewKey struct {
	Tenant string
	ID     uuid.UUID
}

const overdueSyncReviewsSQL = `
SELECT tenant_id, id FROM reviews
WHERE status = 'pending' AND tier = 'sync' AND sla_deadline <= $1
ORDER BY sla_deadline
LIMIT $2`

// OverdueSyncReviews returns up to limit pending sync reviews, of every
// tenant, whose deadline is at or before now: their writers stopped
// waiting without refusing them (a daemon died).
func OverdueSyncReviews(ctx context.Context, db pg.DBTX, now time.Time, limit int) ([]ReviewKey, error) {
	rows, err := db.Query(ctx, overdueSyncReviewsSQL, now, limit)
	if err != nil {
		return nil, fmt.Errorf("read overdue sync reviews: %w", err)
	}
	keys, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ReviewKey, error) {
		var k ReviewKey
		return k, row.Scan(&k.Tenant, &k.ID)
	})
	if err != nil {
		return nil, fmt.Errorf("read overdue sync reviews: %w", err)
	}
	return keys, nil
}

// escalateReviewsSQL marks a batch of pending async reviews past their SLA
// as escalated and audits each on its draft record, in one statement. Rows
// another transaction holds (being decided) are left for the next batch.
const escalateReviewsSQL = `
WITH due AS (
	SELECT tenant_id, id FROM reviews
	WHERE status = 'pending' AND tier = 'async' AND escalated_at IS NULL AND sla_deadline <= $1
	ORDER BY sla_deadline
	LIMIT $2
	FOR UPDATE SKIP LOCKED
), escalated AS (
	UPDATE reviews r SET escalated_at = $1
	FROM due WHERE r.tenant_id = due.tenant_id AND r.id = due.id
	RETURNING r.tenant_id, r.id, r.record_id, r.sla_deadline
)
INSERT INTO audit_log (tenant_id, record_id, action, actor, version, rationale)
SELECT e.tenant_id, e.record_id, $3, $4, rec.version,
	format('review %s passed its SLA (%s) undecided', e.id, to_char(e.sla_deadline AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
FROM escalated e JOIN records rec ON rec.tenant_id = e.tenant_id AND rec.id = e.record_id`

// EscalateReviews marks up to limit pending async reviews, of every tenant,
// whose SLA passed by now as escalated, writing an audit entry with action
// on each one's record, and returns how many it escalated.
func EscalateReviews(ctx context.Context, db pg.DBTX, now time.Time, limit int, action, actor string) (int, error) {
	tag, err := db.Exec(ctx, escalateReviewsSQL, now, limit, action, actor)
	if err != nil {
		return 0, fmt.Errorf("escalate reviews: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

const reviewQueueSQL = `SELECT count(*), min(created_at) FROM reviews WHERE status = 'pending'`

// ReviewQueue returns how many reviews are pending, across every tenant,
// and when the oldest was queued (nil when none is).
func ReviewQueue(ctx context.Context, db pg.DBTX) (int64, *time.Time, error) {
	var (
		n      int64
		oldest *time.Time
	)
	if err := db.QueryRow(ctx, reviewQueueSQL).Scan(&n, &oldest); err != nil {
		return 0, nil, fmt.Errorf("read review queue: %w", err)
	}
	return n, oldest, nil
}

// TenantQueue is one tenant's review queue: how many reviews are pending
// and when the oldest was queued.
type TenantQueue struct {
	Tenant  string
	Pending int64
	Oldest  time.Time
}

const tenantQueuesSQL = `
SELECT tenant_id, count(*), min(created_at) FROM reviews
WHERE status = 'pending' AND tenant_id = ANY($1::text[])
GROUP BY tenant_id ORDER BY tenant_id`

// TenantQueues returns the review queue of each of tenants that has a
// pending review, by tenant; a tenant with none is left out.
func TenantQueues(ctx context.Context, db pg.DBTX, tenants []string) ([]TenantQueue, error) {
	rows, err := db.Query(ctx, tenantQueuesSQL, tenants)
	if err != nil {
		return nil, fmt.Errorf("read review queues: %w", err)
	}
	qs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (TenantQueue, error) {
		var q TenantQueue
		err := row.Scan(&q.Tenant, &q.Pending, &q.Oldest)
		q.Oldest = q.Oldest.UTC()
		return q, err
	})
	if err != nil {
		return nil, fmt.Errorf("read review queues: %w", err)
	}
	return qs, nil
}
