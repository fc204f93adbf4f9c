package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
)

// staleLexicalTenantsSQL lists the tenants whose BM25 statistics are
// missing or older than their latest record change.
const staleLexicalTenantsSQL = `
SELECT t.id FROM tenants t
LEFT JOIN corpus_stats c ON c.tenant_id = t.id
WHERE c.computed_at IS NULL
	OR EXISTS (SELECT 1 FROM records r WHERE r.tenant_id = t.id AND r.updated_at >= c.computed_at)
ORDER BY t.id`

// StaleLexicalTenants lists the tenants whose lexical statistics need a
// refresh: never computed, or older than a record change.
func (s *Store) StaleLexicalTenants(ctx context.Context) ([]string, error) {
	rows, err := s.db.Query(ctx, staleLexicalTenantsSQL)
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
	insertLexemeStatsSQL = `
INSERT INTO lexeme_stats (tenant_id, lexeme, df)
SELECT $1, u.lexeme, count(*)
FROM records r, unnest(tsvector_to_array(r.tsv)) AS u(lexeme)
WHERE r.tenant_id = $1 AND r.status IN ('active', 'contested')
GROUP BY u.lexeme`
	upsertCorpusStatsSQL = `
INSERT INTO corpus_stats (tenant_id, docs, avg_len, computed_at)
SELECT $1, count(*), greatest(coalesce(avg(length(tsv)), 1), 1), $2
FROM records WHERE tenant_id = $1 AND status IN ('active', 'contested')
ON CONFLICT (tenant_id) DO UPDATE SET docs = excluded.docs, avg_len = excluded.avg_len, computed_at = excluded.computed_at
RETURNING docs`
)

// LexicalStats are a tenant's BM25 statistics after a refresh.
type LexicalStats struct {
	Docs    int64
	Lexemes int64
}

// RefreshLexicalStats recomputes a tenant's BM25 statistics from its active
// set in one transaction: how many live records hold each lexeme, how many
// there are and their mean length. Readers see the old statistics until it
// commits. at is the time the statistics count as of; records changed from
// then on make them stale again.
func (s *Store) RefreshLexicalStats(ctx context.Context, tenant string, at time.Time) (LexicalStats, error) {
	var st LexicalStats
	err := pg.WithTx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, deleteLexemeStatsSQL, tenant); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, insertLexemeStatsSQL, tenant)
		if err != nil {
			return err
		}
		st.Lexemes = tag.RowsAffected()
		return tx.QueryRow(ctx, upsertCorpusStatsSQL, tenant, at.UTC()).Scan(&st.Docs)
	})
	if err != nil {
		return st, fmt.Errorf("refresh lexical statistics of %s: %w", tenant, err)
	}
	return st, nil
}
