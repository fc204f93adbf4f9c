package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/store"
)

// The audit log stays append-only except in a transaction that says it
// erases (migration 020), and the verification scan lists the text columns
// of every tenant table, partitions left to their parent.
func TestAuditLogDeletedOnlyByAnErasure(t *testing.T) {
	t.Parallel()
	db := pgtest.NewSchema(t)
	ctx := context.Background()
	require.NoError(t, store.EnsureTenant(ctx, db.Pool, "acme"))
	require.NoError(t, store.InsertTenantAudit(ctx, db.Pool, "acme", "erase", "test", "{}"))
	_, err := db.Pool.Exec(ctx, `DELETE FROM audit_log`)
	require.ErrorContains(t, err, "append-only")
	err = pg.WithTx(ctx, db.Pool, func(ctx context.Context, tx pgx.Tx) error {
		var ids []int64
		if err := tx.QueryRow(ctx, `SELECT array_agg(id) FROM audit_log`).Scan(&ids); err != nil {
			return err
		}
		n, err := store.DeleteAuditEntries(ctx, tx, "acme", ids)
		require.Equal(t, 1, n)
		return err
	})
	require.NoError(t, err)

	cols, err := store.TenantTextColumns(ctx, db.Pool)
	require.NoError(t, err)
	tables := map[string]bool{}
	for _, c := range cols {
		tables[c.Table+"."+c.Column] = true
	}
	for _, want := range []string{"records.payload", "records.tags", "candidates.event", "episode_entries.entry",
		"record_versions.snapshot", "audit_log.rationale", "artifacts.content", "retrievals.thread_id", "lexeme_stats.lexeme"} {
		require.True(t, tables[want], want)
	}
	require.False(t, tables["record_vectors_0.model"], "partitions are scanned through their parent")
	require.True(t, tables["record_vectors.model"])
	require.False(t, tables["job_runs.error"], "job runs hold no tenant's rows")
}

// TestUnfinishedErasures: the compliance report's erasures are those not
// completed, of every tenant, oldest first, named by id and state only.
func TestUnfinishedErasures(t *testing.T) {
	t.Parallel()
	db := pgtest.NewSchema(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	sha := strings.Repeat("ab", 32)
	for i, e := range []struct {
		tenant, status string
	}{{"acme", "completed"}, {"acme", "interrupted"}, {"globex", "running"}} {
		require.NoError(t, store.EnsureTenant(ctx, db.Pool, e.tenant))
		row := store.Erasure{ID: uuid.New(), SubjectSHA256: sha, Identifiers: map[string]int{"email": 1}, Status: "running",
			Phase: "matching", Rebuilt: []uuid.UUID{}, RequestedAt: at.Add(time.Duration(i) * time.Hour)}
		require.NoError(t, store.InsertErasure(ctx, db.Pool, e.tenant, row))
		if e.status != "running" {
			// A run ends, completed or not, with its end time.
			end := at.Add(5 * time.Hour)
			row.Status, row.CompletedAt, row.UpdatedAt = e.status, &end, end
			require.NoError(t, store.UpdateErasure(ctx, db.Pool, e.tenant, row))
		}
	}
	got, err := store.UnfinishedErasures(ctx, db.Pool, 10)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, "interrupted", got[0].Status)
	require.Equal(t, "acme", got[0].Tenant)
	require.Equal(t, "matching", got[0].Phase)
	require.Equal(t, at.Add(time.Hour), got[0].RequestedAt)
	require.Equal(t, "running", got[1].Status)
	require.Equal(t, "globex", got[1].Tenant)
}
