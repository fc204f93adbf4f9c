package pg_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/internal/pgtest"
)

// A pool's connections carry the session's bounds; a context's statement
// timeout replaces the pool's on the connection it acquires, and a
// transaction keeps the one it began with.
func TestSessionBounds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pg.Session{ApplicationName: "engramd-test", StatementTimeout: 7 * time.Second, LockTimeout: 3 * time.Second,
		IdleInTransactionTimeout: time.Minute, ClientCheckInterval: 2 * time.Second, KeepAlive: 30 * time.Second}
	pool, err := pg.NewPool(ctx, pgtest.URL(), func(c *pgxpool.Config) { c.MaxConns = 1; s.Configure(c) })
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	show := func(ctx context.Context, db pg.DBTX, name string) string {
		t.Helper()
		var v string
		require.NoError(t, db.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v))
		return v
	}
	for name, want := range map[string]string{
		"application_name": "engramd-test", "statement_timeout": "7s", "lock_timeout": "3s",
		"idle_in_transaction_session_timeout": "1min", "client_connection_check_interval": "2s",
		"tcp_keepalives_idle": "30", "tcp_keepalives_interval": "10", "tcp_keepalives_count": "3",
	} {
		require.Equal(t, want, show(ctx, pool, name), name)
	}
	job := pg.WithStatementTimeout(ctx, 15*time.Minute)
	require.Equal(t, "15min", show(job, pool, "statement_timeout"))
	require.Equal(t, "7s", show(ctx, pool, "statement_timeout"), "the same connection, back to the pool's")
	require.Equal(t, "0", show(pg.WithStatementTimeout(ctx, 0), pool, "statement_timeout"), "none")
	require.NoError(t, pg.WithTx(job, pool, func(_ context.Context, tx pgx.Tx) error {
		require.Equal(t, "15min", show(ctx, tx, "statement_timeout"))
		return nil
	}))
}

// Behind a session-mode pooler the session's bounds and pgvector's
// iterative scans are not sent as startup parameters, which PgBouncer
// refuses, but set as each connection opens: they hold all the same.
func TestForSessionPooler(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pg.Session{ApplicationName: "engramd-test", StatementTimeout: 7 * time.Second, LockTimeout: 3 * time.Second}
	var params map[string]string
	pool, err := pg.NewPool(ctx, pgtest.URL(), func(c *pgxpool.Config) {
		c.MaxConns = 1
		s.Configure(c)
		pg.ForSessionPooler(c)
		params = c.ConnConfig.RuntimeParams
	})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.Equal(t, map[string]string{"application_name": "engramd-test"}, params, "only what PgBouncer passes")
	for name, want := range map[string]string{
		"application_name": "engramd-test", "statement_timeout": "7s", "lock_timeout": "3s", pg.IterativeScanParam: "relaxed_order",
	} {
		var v string
		require.NoError(t, pool.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v))
		require.Equal(t, want, v, name)
	}
}
