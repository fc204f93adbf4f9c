package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

// The database holds the review queue's invariants whatever the code does:
// one review a draft, a decision only with a decider, a reason exactly for
// a rejection, what the reviewer was shown never changes, escalation once,
// and a decided review is final.
func TestReviewInvariants(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := revise.ReviewRequest{Tier: revise.TierAsync, Risk: 0.5, Reasons: []string{"low evidence"}}
	draft, rv, err := b.w.SubmitForReview(b.ctx, b.tenant, fact("user", "prefers_editor", "helix", nil), b.ch, r)
	require.NoError(t, err)
	exec := func(sql string, args ...any) error {
		_, err := b.pool.Exec(b.ctx, sql, args...)
		return err
	}

	require.ErrorContains(t, exec(`INSERT INTO reviews (tenant_id, id, record_id, tier, risk, created_at, sla_deadline)
		VALUES ($1, gen_random_uuid(), $2, 'async', 0.5, now(), now())`, b.tenant, draft.ID), "reviews_one_per_record")
	require.ErrorContains(t, exec(`UPDATE reviews SET status = 'approved' WHERE id = $1`, rv.ID), "reviews_decided")
	require.ErrorContains(t, exec(`UPDATE reviews SET status = 'rejected', decided_at = now(), decided_by = 'x' WHERE id = $1`, rv.ID),
		"reviews_rejection_reason")
	require.ErrorContains(t, exec(`UPDATE reviews SET status = 'approved', decided_at = now(), decided_by = 'x', rejection_reason = 'other' WHERE id = $1`, rv.ID),
		"reviews_rejection_reason")
	require.ErrorContains(t, exec(`UPDATE reviews SET status = 'rejected', decided_at = now(), decided_by = 'x', rejection_reason = 'bogus' WHERE id = $1`, rv.ID), "reviews_rejection_reason_check")
	require.ErrorContains(t, exec(`UPDATE reviews SET risk = 0.1 WHERE id = $1`, rv.ID), "only its escalation and its decision change")
	require.ErrorContains(t, exec(`UPDATE reviews SET sla_deadline = sla_deadline + interval '1 day' WHERE id = $1`, rv.ID),
		"only its escalation and its decision change")
	require.NoError(t, exec(`UPDATE reviews SET escalated_at = now() WHERE id = $1`, rv.ID))
	require.ErrorContains(t, exec(`UPDATE reviews SET escalated_at = now() + interval '1 hour' WHERE id = $1`, rv.ID), "escalated once")

	_, _, err = b.w.Reject(b.ctx, b.tenant, rv.ID, revise.Decision{Approver: "alice", Justification: "no", Reason: revise.ReasonOther})
	require.NoError(t, err)
	require.ErrorContains(t, exec(`UPDATE reviews SET justification = 'rewritten' WHERE id = $1`, rv.ID), "is final")
	require.ErrorContains(t, exec(`UPDATE reviews SET status = 'pending', decided_at = NULL, decided_by = NULL, rejection_reason = NULL WHERE id = $1`, rv.ID),
		"is final")
	got, err := store.GetReview(b.ctx, b.pool, b.tenant, rv.ID)
	require.NoError(t, err)
	require.Equal(t, "rejected", got.Status)
	require.Equal(t, "no", got.Justification)
}

// Reviews list oldest first, by status, a page at a time, each with its
// draft as it stands; a cursor this package did not issue is refused.
func TestListReviews(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := revise.ReviewRequest{Tier: revise.TierAsync, Risk: 0.5}
	var ids []string
	for _, object := range []string{"a", "b", "c"} {
		_, rv, err := b.w.SubmitForReview(b.ctx, b.tenant, fact("user", "prefers_editor", object, nil), b.ch, r)
		require.NoError(t, err)
		ids = append(ids, rv.ID.String())
	}
	page, err := store.ListReviews(b.ctx, b.pool, b.tenant, store.ReviewFilter{Limit: 2})
	require.NoError(t, err)
	require.Len(t, page.Reviews, 2)
	require.NotEmpty(t, page.NextCursor)
	require.Equal(t, ids[0], page.Reviews[0].ID.String())
	require.Equal(t, "draft", string(page.Reviews[0].Record.Status))
	first := page.Reviews[0]
	next, err := store.ListReviews(b.ctx, b.pool, b.tenant, store.ReviewFilter{Limit: 2, Cursor: page.NextCursor})
	require.NoError(t, err)
	require.Len(t, next.Reviews, 1)
	require.Equal(t, ids[2], next.Reviews[0].ID.String())
	require.Empty(t, next.NextCursor)

	_, _, err = b.w.Approve(b.ctx, b.tenant, first.ID, revise.Decision{Approver: "alice", Justification: "yes"})
	require.NoError(t, err)
	approved, err := store.ListReviews(b.ctx, b.pool, b.tenant, store.ReviewFilter{Statuses: []string{"approved"}})
	require.NoError(t, err)
	require.Len(t, approved.Reviews, 1)
	require.Equal(t, "active", string(approved.Reviews[0].Record.Status))
	require.WithinDuration(t, time.Now(), *approved.Reviews[0].DecidedAt, time.Minute)
	pending, err := store.ListReviews(b.ctx, b.pool, b.tenant, store.ReviewFilter{})
	require.NoError(t, err)
	require.Len(t, pending.Reviews, 2)
	other, err := store.ListReviews(b.ctx, b.pool, "other", store.ReviewFilter{})
	require.NoError(t, err)
	require.Empty(t, other.Reviews)

	_, err = store.ListReviews(b.ctx, b.pool, b.tenant, store.ReviewFilter{Cursor: "nope"})
	require.ErrorIs(t, err, store.ErrBadCursor)
}

// TenantQueues counts the pending reviews of the tenants asked for, each
// with its oldest, and leaves out decided reviews, other tenants and
// tenants with none pending.
func TestTenantQueues(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tenant := range []string{"beta", "gamma"} {
		require.NoError(t, store.EnsureTenant(b.ctx, b.pool, tenant))
	}
	r := revise.ReviewRequest{Tier: revise.TierAsync, Risk: 0.5}
	submit := func(tenant, object string) revise.Review {
		_, rv, err := b.w.SubmitForReview(b.ctx, tenant, fact("user", "prefers_editor", object, nil), b.ch, r)
		require.NoError(t, err)
		return rv
	}
	first := submit("acme", "vim")
	submit("acme", "helix")
	decided := submit("beta", "emacs")
	submit("gamma", "nano")
	_, _, err := b.w.Reject(b.ctx, "beta", decided.ID, revise.Decision{Approver: "alice", Justification: "no", Reason: revise.ReasonOther})
	require.NoError(t, err)

	qs, err := store.TenantQueues(b.ctx, b.pool, []string{"acme", "beta"})
	require.NoError(t, err)
	require.Len(t, qs, 1, "beta has none pending; gamma was not asked for")
	require.Equal(t, "acme", qs[0].Tenant)
	require.Equal(t, int64(2), qs[0].Pending)
	require.True(t, first.CreatedAt.Equal(qs[0].Oldest), "%s, want %s", qs[0].Oldest, first.CreatedAt)

	qs, err = store.TenantQueues(b.ctx, b.pool, nil)
	require.NoError(t, err)
	require.Empty(t, qs)
}
