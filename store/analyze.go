package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
)

// TableStatistics is what PostgreSQL's planner has to go on for one of
// engram's tables (issue 33, item 3).
type TableStatistics struct {
	Table string
	// Rows is the planner's row count of the table (pg_class.reltuples):
	// negative when it was never vacuumed nor analysed.
	Rows float64
	// Analysed is whether the table has column statistics (pg_stats): a
	// table without them is planned with PostgreSQL's default selectivities.
	Analysed bool
	// Modified is how many rows were inserted, updated or deleted since the
	// table's last analysis (pg_stat_user_tables.n_mod_since_analyze); 0
	// when the statistics system has no entry for the table (a database
	// made from a template, a server after a crash).
	Modified int64
	// LastAnalysed is when the table was last analysed, by ANALYZE or by
	// autovacuum, when the statistics system knows it.
	LastAnalysed *time.Time
}

// tableStatisticsSQL reads the planner's statistics of every table of the
// current schema (engram's: every connection's search path names it) but
// the migrations' own version table, which no query of engram plans.
const tableStatisticsSQL = `
SELECT c.relname::text, c.reltuples::float8,
	EXISTS (SELECT 1 FROM pg_stats p WHERE p.schemaname = n.nspname AND p.tablename = c.relname),
	coalesce(s.n_mod_since_analyze, 0), greatest(s.last_analyze, s.last_autoanalyze)
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND c.relname <> 'goose_db_version'
ORDER BY c.relname`

// ReadTableStatistics returns the planner's statistics of each of the
// current schema's tables, by name.
func ReadTableStatistics(ctx context.Context, db pg.DBTX) ([]TableStatistics, error) {
	rows, err := db.Query(ctx, tableStatisticsSQL)
	if err != nil {
		return nil, fmt.Errorf("read table statistics: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (TableStatistics, error) {
		var s TableStatistics
		err := row.Scan(&s.Table, &s.Rows, &s.Analysed, &s.Modified, &s.LastAnalysed)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("read table statistics: %w", err)
	}
	return out, nil
}

// AnalyzeTable analyses one table of the current schema, so that the
// planner knows its rows and their values. A table whose lock another
// session holds (autovacuum analysing it, say) is skipped without waiting.
func AnalyzeTable(ctx context.Context, db pg.DBTX, table string) error {
	if _, err := db.Exec(ctx, "ANALYZE (SKIP_LOCKED) "+pgx.Identifier{table}.Sanitize()); err != nil {
		return fmt.Errorf("analyze %s: %w", table, err)
	}
	return nil
}
