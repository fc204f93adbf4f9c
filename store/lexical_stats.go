package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
)

// staleLexicalTenantsSQL lists the tenants whose BM25 statistics are
// missing or older than their latest record change or episode entry.
const staleLexicalTenantsSQL = `
SELECT t.id FROM tenants t
LEFT JOIN corpus_stats c ON c.tenant_id = t.id
WHERE c.computed_at IS NULL
	OR EXISTS (SELECT 1 FROM records r WHERE r.tenant_id = t.id AND r.updated_at >= c.computed_at)
	OR (SELECT max(seq) FROM episode_entries e WHERE e.tenant_id = t.id) > c.entries_seq
ORDER BY t.id`

// StaleLexicalTenants lists the tenants whose lexical statistics need a
// refresh: never computed, or older than a record change or an episode's
// newest entry.
func StaleLexicalTenants(ctx context.Context, db pg.DBTX) ([]string, error) {
	rows, err := db.Query(ctx, staleLexicalTenantsSQL)
	if err != nil {
		return nil, fmt.Errorf("list stale lexical statistics: %w", err)
	}
	tenants, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list stale lexical statistics: %w", err)
	}
	return tenants, nil
}

const (
	deleteLexemeStatsSQL = `DELETE FROM lexeme_stats WHERE tenant_id = $1`
	// passagesSQL are the tenant's passages: its live records, and the
	// timeline entries of its live episodes, which lexical search matches
	// one by one (migration 007).
	passagesSQL = `
WITH passages AS (
	SELECT r.tsv FROM records r WHERE r.tenant_id = $1 AND r.status IN ('active', 'contested')
	UNION ALL
	SELECT e.tsv FROM episode_entries e
	JOIN records r ON r.tenant_id = e.tenant_id AND r.id = e.record_id AND r.status IN ('active', 'contested')
	WHERE e.tenant_id = $1 AND e.tsv IS NOT NULL
)`
	insertLexemeStatsSQL = passagesSQL + `
INSERT INTO lexeme_stats (tenant_id, lexeme, df)
SELECT $1, u.lexeme, count(*)
FROM passages p, unnest(tsvector_to_array(p.tsv)) AS u(lexeme)
GROUP BY u.lexeme`
	// The newest entry is read first: one appended while the statistics
	// are counted makes them stale at once rather than never. type_docs is
	// docs by record type (migration 023), by which the dense vector
	// search chooses its path.
	upsertCorpusStatsSQL = passagesSQL + `
INSERT INTO corpus_stats (tenant_id, docs, passages, avg_len, entries_seq, computed_at, type_docs)
SELECT $1, (SELECT count(*) FROM records WHERE tenant_id = $1 AND status IN ('active', 'contested')),
	count(*), greatest(coalesce(avg(length(tsv)), 1), 1), $3, $2,
	(SELECT coalesce(jsonb_object_agg(type, n), '{}') FROM (
		SELECT type, count(*) AS n FROM records WHERE tenant_id = $1 AND status IN ('active', 'contested') GROUP BY type) AS t)
FROM passages
ON CONFLICT (tenant_id) DO UPDATE SET docs = excluded.docs, passages = excluded.passages, avg_len = excluded.avg_len,
	entries_seq = excluded.entries_seq, computed_at = excluded.computed_at, type_docs = excluded.type_docs
RETURNING docs, passages`
	newestEntrySQL = `SELECT coalesce(max(seq), 0) FROM episode_entries WHERE tenant_id = $1`
)

// LexicalStats are a tenant's BM25 statistics after a refresh.
type LexicalStats struct {
	Docs     int64 // live records
	Passages int64 // live records and their episodes' entries
	Lexemes  int64
}

// RefreshLexicalStats recomputes a tenant's BM25 statistics from its active
// set in one transaction: how many live records hold each lexeme, how many
// there are and their mean length. Readers see the old statistics until it
// commits. at is the time the statistics count as of; records changed from
// then on make them stale again.
func RefreshLexicalStats(ctx context.Context, db pg.DBTX, tenant string, at time.Time) (LexicalStats, error) {
	var st LexicalStats
	err := pg.WithTx(ctx, db, func(ctx context.Context, tx pgx.Tx) error {
		var newest int64
		if err := tx.QueryRow(ctx, newestEntrySQL, tenant).Scan(&newest); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, deleteLexemeStatsSQL, tenant); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, insertLexemeStatsSQL, tenant)
		if err != nil {
			return err
		}
		st.Lexemes = tag.RowsAffected()
		return tx.QueryRow(ctx, upsertCorpusStatsSQL, tenant, at.UTC(), newest).Scan(&st.Docs, &st.Passages)
	})
	if err != nil {
		return st, fmt.Errorf("refresh lexical statistics of %s: %w", tenant, err)
	}
	return st, nil
}
