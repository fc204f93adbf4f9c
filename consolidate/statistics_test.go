package consolidate_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/consolidate"
)

// forget makes the test's schema one whose tables were never analysed, as
// after a bulk load or a restore on a server with autovacuum off: no column
// statistics, row counts unknown.
func (e *env) forget() {
	e.t.Helper()
	ctx := context.Background()
	_, err := e.db.Pool.Exec(ctx, `DELETE FROM pg_statistic WHERE starelid IN (
		SELECT oid FROM pg_class WHERE relnamespace = current_schema()::regnamespace)`)
	require.NoError(e.t, err)
	_, err = e.db.Pool.Exec(ctx, `UPDATE pg_class SET reltuples = -1, relpages = 0, relallvisible = 0
		WHERE relnamespace = current_schema()::regnamespace AND relkind = 'r'`)
	require.NoError(e.t, err)
}

// analysedSince is, for each table named, whether it has column statistics
// and was analysed at or after since (pg_stat_user_tables).
func (e *env) analysedSince(since time.Time, tables ...string) map[string]string {
	e.t.Helper()
	out := map[string]string{}
	for _, t := range tables {
		var stats bool
		var last *time.Time
		require.NoError(e.t, e.db.Pool.QueryRow(context.Background(), `
			SELECT EXISTS (SELECT 1 FROM pg_stats WHERE schemaname = current_schema() AND tablename = $1),
				(SELECT greatest(last_analyze, last_autoanalyze) FROM pg_stat_user_tables
				 WHERE relid = (quote_ident(current_schema()) || '.' || quote_ident($1))::regclass)`, t).Scan(&stats, &last))
		out[t] = fmt.Sprintf("statistics %v, analysed since %v", stats, last != nil && !last.Before(since))
	}
	return out
}

// A pass on a database never analysed analyses the tables it reads first
// (issue 33, item 3: the planner otherwise reads a whole tenant for each
// episode), says so, and a pass on a database analysed since leaves it.
func TestPassAnalysesTablesNeverAnalysed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for i := range 3 {
		e.post(episode(fmt.Sprintf("fix-%d", i), map[string]any{"os": "linux"}, fmt.Sprintf("ld: cache mismatch in /tmp/b-%d/obj.o", i),
			[]map[string]any{step("shell", map[string]any{"command": fmt.Sprintf("rm -rf /tmp/b-%d/cache", i)}, map[string]any{"exit_code": 0}), buildOK},
			"success"))
	}
	e.forget()
	var since time.Time
	require.NoError(t, e.db.Pool.QueryRow(context.Background(), `SELECT now()`).Scan(&since))
	tables := []string{"records", "threads", "candidates", "episode_entries", "provenance"}
	analysed := map[string]string{}
	for _, table := range tables {
		analysed[table] = "statistics true, analysed since true"
	}
	require.NotEqual(t, analysed, e.analysedSince(since, tables...), "forget left statistics")

	counts := e.consolidate()
	require.Equal(t, int64(1), counts["competence_created"], counts)
	require.Equal(t, analysed, e.analysedSince(since, tables...))
	require.Positive(t, counts["tables_analyzed"], counts)
	require.Positive(t, e.metric("engram_tables_analyzed_total"))

	// Analysed, and few rows modified since: the next pass analyses nothing.
	e.post(episode("fix-3", map[string]any{"os": "linux"}, "ld: cache mismatch in /tmp/b-3/obj.o",
		[]map[string]any{step("shell", map[string]any{"command": "rm -rf /tmp/b-3/cache"}, map[string]any{"exit_code": 0}), buildOK}, "success"))
	counts = e.consolidate()
	require.Zero(t, counts["tables_analyzed"], counts)

	// Many rows modified since the last analysis (autovacuum off or
	// behind): the pass analyses that table again, and only it.
	ctx := context.Background()
	conn, err := e.db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	var before time.Time
	require.NoError(t, conn.QueryRow(ctx, `SELECT now()`).Scan(&before))
	var rows int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM candidates`).Scan(&rows))
	for modified := 0; modified <= consolidate.AnalyzeModifiedRows+rows; modified += rows {
		// Each statement's counts reach pg_stat_user_tables as it ends.
		_, err := conn.Exec(ctx, `SELECT pg_stat_force_next_flush()`)
		require.NoError(t, err)
		_, err = conn.Exec(ctx, `UPDATE candidates SET attempts = attempts`)
		require.NoError(t, err)
	}
	_, err = conn.Exec(ctx, `SELECT pg_stat_force_next_flush()`)
	require.NoError(t, err)
	counts = e.consolidate()
	require.Equal(t, int64(1), counts["tables_analyzed"], counts)
	require.Equal(t, map[string]string{"candidates": "statistics true, analysed since true", "records": "statistics true, analysed since false"},
		e.analysedSince(before, "candidates", "records"))
}
