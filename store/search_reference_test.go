package store

// The search as it was before the task's statistics were read once per
// retrieval: one statement per layer, each looking them up. Kept as the
// reference the new search is compared with (search_layers_test.go's
// TestSearchMatchesReference).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
)

// The reference SQL: each statement one layer, looking the task's
// statistics up itself.
const refSearchTermsSQL = `
WITH c AS (
	SELECT coalesce(max(docs), 0) AS docs, coalesce(max(passages), 0) AS n, coalesce(max(avg_len), 1) AS avg_len
	FROM corpus_stats WHERE tenant_id = $1
), q AS (
	SELECT t.lexeme, coalesce(s.df, 0) AS df, ln(1 + (greatest(c.n - coalesce(s.df, 0), 0) + 0.5) / (coalesce(s.df, 0) + 0.5)) AS idf,
		c.n < 1000 OR coalesce(s.df, 0) <= $11::float8 * c.n AS selective,
		row_number() OVER (ORDER BY coalesce(s.df, 0), t.lexeme) AS rarity,
		'''' || replace(replace(t.lexeme, '\', '\\'), '''', '''''') || '''' AS quoted,
		('''' || replace(replace(t.lexeme, '\', '\\'), '''', '''''') || '''')::tsquery AS term
	FROM c, unnest(tsvector_to_array(to_tsvector('english', $2))) AS t(lexeme)
	LEFT JOIN lexeme_stats s ON s.tenant_id = $1 AND s.lexeme = t.lexeme
), qr AS (
	SELECT quoted, rare, sum(df) FILTER (WHERE NOT rare) OVER (ORDER BY rarity) AS reach
	FROM (SELECT quoted, df, rarity, selective AND (rarity <= 8 OR $11 >= 1) AS rare FROM q) AS q
), tq AS (
	SELECT (string_agg(quoted, ' | ') FILTER (WHERE rare))::tsquery AS rare,
		(string_agg(quoted, ' | ') FILTER (WHERE rare OR reach <= 200 * $8 OR $11 >= 1))::tsquery AS every
	FROM qr
)`

const refSearchFilter = `
	r.status IN ('active', 'contested')
	AND ($7::text IS NULL OR r.scope IN ('', $7))
	AND (r.visibility = 'tenant' OR (r.visibility = 'agent' AND r.agent_id = $12) OR (r.visibility = 'thread' AND r.thread_id = $13))
	AND CASE WHEN r.conditions IS NULL THEN engram_procedure_applies(r.payload, $5)
		ELSE r.conditions || $5::jsonb = $5::jsonb || r.conditions END
	AND (r.type <> 'semantic' OR (coalesce((r.payload #>> '{validity,start}')::timestamptz <= $6, true)
		AND coalesce((r.payload #>> '{validity,end}')::timestamptz >= $6, true)))`

const refSearchLexical = `, rare AS MATERIALIZED (
	SELECT r.id, 0::bigint AS pid, r.tsv, length(r.tsv) AS len, r.sensitivity_rank <= $4 AS allowed
	FROM records r, tq
	WHERE r.search_key = $1 || '/' || $3 AND r.tsv @@ tq.rare AND ` + refSearchFilter + `
	UNION ALL
	SELECT r.id, e.seq, e.tsv, length(e.tsv), r.sensitivity_rank <= $4
	FROM tq, episode_entries e JOIN records r ON r.tenant_id = e.tenant_id AND r.id = e.record_id
	WHERE $3::text = 'episodic' AND e.tenant_id = $1 AND e.tsv @@ tq.rare AND r.type = 'episodic' AND ` + refSearchFilter + `
), few AS (
	SELECT count(DISTINCT id) < $8 AS yes FROM rare WHERE allowed
), matched AS (
	SELECT * FROM rare
	UNION ALL
	SELECT r.id, 0, r.tsv, length(r.tsv), r.sensitivity_rank <= $4
	FROM records r, tq, few
	WHERE few.yes AND r.search_key = $1 || '/' || $3 AND r.tsv @@ tq.every AND NOT coalesce(r.tsv @@ tq.rare, false)
		AND ` + refSearchFilter + `
	UNION ALL
	SELECT r.id, e.seq, e.tsv, length(e.tsv), r.sensitivity_rank <= $4
	FROM tq, few, episode_entries e JOIN records r ON r.tenant_id = e.tenant_id AND r.id = e.record_id
	WHERE few.yes AND $3::text = 'episodic' AND e.tenant_id = $1 AND e.tsv @@ tq.every AND NOT coalesce(e.tsv @@ tq.rare, false)
		AND r.type = 'episodic' AND ` + refSearchFilter + `
), passages AS (
	SELECT m.id, m.allowed, array_agg(q.lexeme ORDER BY q.lexeme) AS terms,
		sum(q.idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * m.len / c.avg_len))) AS bm25
	FROM matched m CROSS JOIN c JOIN q ON m.tsv @@ q.term
	GROUP BY m.id, m.pid, m.allowed
), scored AS (
	SELECT DISTINCT ON (id) id, allowed, terms, bm25 FROM passages ORDER BY id, bm25 DESC
), lex AS (
	SELECT id, bm25, terms FROM scored WHERE allowed ORDER BY bm25 DESC, id LIMIT $8
), withheld AS (
	SELECT count(*) AS n FROM scored
	WHERE NOT allowed AND bm25 >= CASE WHEN (SELECT count(*) FROM lex) < $8 THEN 0 ELSE (SELECT min(bm25) FROM lex) END
)`

const refSearchSparse = `, vq AS MATERIALIZED (
	SELECT f.feature, coalesce((
		SELECT d.df FROM embedding_df d WHERE d.tenant_id = $1 AND d.model = $9 AND d.feature = f.feature), 0) AS df
	FROM unnest($14::int4[]) AS f(feature)
), vf AS MATERIALIZED (
	SELECT coalesce(engram_feature_keys($1 || '/' || $9 || '/' || $3,
		array_agg(feature) FILTER (WHERE $11 >= 1 OR reach <= 70 * $8 OR rarity = 1)), '{}') AS selected
	FROM (SELECT feature, sum(df) OVER w AS reach, row_number() OVER w AS rarity FROM vq WINDOW w AS (ORDER BY df, feature)) AS r
), near_v AS (
	SELECT record_id, dist FROM (
		SELECT v.record_id, v.sparse <=> $10::sparsevec AS dist
		FROM record_vectors v, vf
		WHERE v.feature_keys && vf.selected AND v.search_key = $1 || '/' || $9 || '/' || $3
			AND v.tenant_id = $1 AND v.model = $9 AND v.type = $3 AND v.sparse IS NOT NULL AND v.sensitivity_rank <= $4
		OFFSET 0) AS v
	WHERE dist <= 0.95
	ORDER BY dist
	LIMIT 4 * $8
), vec AS (
	SELECT v.record_id AS id, v.dist
	FROM near_v v JOIN records r ON r.tenant_id = $1 AND r.id = v.record_id
	WHERE r.type = $3 AND ` + refSearchFilter + `
	ORDER BY v.dist
	LIMIT $8
)`

const refSearchDense = `, near_v AS (
	SELECT v.record_id, v.dense <=> $10::vector AS dist
	FROM record_vectors v
	WHERE v.tenant_id = $1 AND v.model = $9 AND v.type = $3 AND v.sensitivity_rank <= $4 AND v.dense IS NOT NULL
	ORDER BY v.dense <=> $10::vector
	LIMIT 4 * $8
), vec AS (
	SELECT v.record_id AS id, v.dist
	FROM near_v v JOIN records r ON r.tenant_id = $1 AND r.id = v.record_id
	WHERE r.type = $3 AND ` + refSearchFilter + `
	ORDER BY v.dist
	LIMIT $8
)`

const refSearchDenseNear = `, near_v AS (
	SELECT n.record_id, n.dist FROM unnest($10::uuid[], $14::float8[]) AS n(record_id, dist) WHERE $9::text IS NOT NULL
), vec AS (
	SELECT v.record_id AS id, v.dist
	FROM near_v v JOIN records r ON r.tenant_id = $1 AND r.id = v.record_id
	WHERE r.type = $3 AND ` + refSearchFilter + `
	ORDER BY v.dist
	LIMIT $8
)`

const refSearchNoVector = `, vec AS (
	SELECT NULL::uuid AS id, NULL::float8 AS dist WHERE $9::text IS NULL AND $10::text IS NULL
)`

const refSearchResult = `, near AS (
	SELECT * FROM vec WHERE dist <= 0.95
), hits AS (
	SELECT coalesce(lex.id, near.id) AS hid, coalesce(lex.bm25, 0) AS bm25, lex.terms, 1 - near.dist AS sim
	FROM lex FULL JOIN near ON lex.id = near.id
)
SELECT w.n, extract(epoch FROM clock_timestamp() - statement_timestamp()), h.hid, h.bm25, h.terms, h.sim, ` + recordColumns + `
FROM withheld w
LEFT JOIN (hits h JOIN records r ON r.tenant_id = $1 AND r.id = h.hid) ON true
ORDER BY h.bm25 DESC, h.sim DESC NULLS LAST`

const refSearchWorkingSQL = `
WITH w AS (
	SELECT r.id, r.sensitivity_rank FROM threads t JOIN records r ON r.tenant_id = t.tenant_id AND r.id = t.working_id
	WHERE t.tenant_id = $1 AND t.thread_id = $2 AND t.status = 'open' AND r.status IN ('active', 'contested')
), withheld AS (
	SELECT count(*) AS n FROM w WHERE sensitivity_rank > $3
), hits AS (
	SELECT id AS hid, 0::float8 AS bm25, NULL::text[] AS terms, NULL::float8 AS sim FROM w WHERE sensitivity_rank <= $3
)
SELECT w.n, extract(epoch FROM clock_timestamp() - statement_timestamp()), h.hid, h.bm25, h.terms, h.sim, ` + recordColumns + `
FROM withheld w
LEFT JOIN (hits h JOIN records r ON r.tenant_id = $1 AND r.id = h.hid) ON true`

const (
	refSearchSparseSQL   = refSearchTermsSQL + refSearchLexical + refSearchSparse + refSearchResult
	refSearchDenseSQL    = refSearchTermsSQL + refSearchLexical + refSearchDense + refSearchResult
	refSearchNearSQL     = refSearchTermsSQL + refSearchLexical + refSearchDenseNear + refSearchResult
	refSearchLexicalSQL  = refSearchTermsSQL + refSearchLexical + refSearchNoVector + refSearchResult
	refMaxSearchLimit    = 1000
	refDefaultSearchSize = 50
)

// refSearch runs each query on a connection of its own, at once.
func refSearch(ctx context.Context, db pg.DBTX, tenant string, qs []SearchQuery) ([]SearchResult, error) {
	stmts := make([]refStatement, len(qs))
	for i, q := range qs {
		if !q.Type.Valid() {
			return nil, fmt.Errorf("search: unknown type %q", q.Type)
		}
		st, err := refSearchStatement(tenant, q)
		if err != nil {
			return nil, err
		}
		stmts[i] = st
	}
	out := make([]SearchResult, len(qs))
	if _, inTx := db.(pgx.Tx); inTx {
		if err := refRunSearches(ctx, db, stmts, out, false); err != nil {
			return nil, err
		}
	} else {
		var wg sync.WaitGroup
		errs := make([]error, len(qs))
		for i := range stmts {
			wg.Go(func() { errs[i] = refRunSearches(ctx, db, stmts[i:i+1], out[i:i+1], true) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	}
	var all []memory.Record
	for i := range out {
		for _, h := range out[i].Hits {
			all = append(all, h.Record)
		}
	}
	if len(all) == 0 {
		return out, nil
	}
	if err := mergeEpisodeEntries(ctx, db, tenant, all, nil); err != nil {
		return nil, err
	}
	k := 0
	for i := range out {
		for j := range out[i].Hits {
			out[i].Hits[j].Record = all[k]
			k++
		}
	}
	return out, nil
}

type refStatement struct {
	what memory.Type
	sql  string
	args []any
	near *refNearStatement
}

type refNearStatement struct {
	sql           string
	args          []any
	ef, maxTuples string
}

func refSearchStatement(tenant string, q SearchQuery) (refStatement, error) {
	if q.Type == memory.Working {
		return refStatement{what: q.Type, sql: refSearchWorkingSQL, args: []any{tenant, q.ThreadID, q.MaxSensitivity.Rank()}}, nil
	}
	limit := q.Limit
	if limit <= 0 {
		limit = refDefaultSearchSize
	}
	limit = min(limit, refMaxSearchLimit)
	cond := q.Conditions
	if cond == nil {
		cond = map[string]any{}
	}
	share := q.CommonTermShare
	if share <= 0 || share > 1 {
		share = 1
	}
	args := []any{tenant, q.Text, q.Type, q.MaxSensitivity.Rank(), cond, q.At.UTC(), q.Scope, limit}
	switch {
	case q.Sparse != nil:
		// The query vector's features ($14), as the vector half selects
		// candidates by them.
		return refStatement{what: q.Type, sql: refSearchSparseSQL, args: append(args, q.Model, q.Sparse, share, q.AgentID, q.ThreadID, q.Sparse.Indices())}, nil
	case q.Dense != nil && q.DenseScan != nil:
		ds := q.DenseScan
		if err := ds.Index.Validate(); err != nil {
			return refStatement{}, err
		}
		if ds.Index.Model != q.Model {
			return refStatement{}, fmt.Errorf("search: dense index of model %q, query vector of %q", ds.Index.Model, q.Model)
		}
		if ds.EfSearch < 1 || ds.EfSearch > 1000 || ds.MaxScanTuples < 1 {
			return refStatement{}, fmt.Errorf("search: dense scan ef_search %d (1..1000), max_scan_tuples %d (≥ 1)", ds.EfSearch, ds.MaxScanTuples)
		}
		near := &refNearStatement{
			sql:  denseNearStatement(ds.Index, q.Type),
			args: []any{tenant, q.Dense, q.MaxSensitivity.Rank(), 4 * limit},
			// A walk keeps at least as many candidates as it returns,
			// so that an unfiltered one needs no second pass.
			ef: strconv.Itoa(min(max(ds.EfSearch, 4*limit), 1000)), maxTuples: strconv.Itoa(ds.MaxScanTuples),
		}
		// $10 and $14, the walk's ids and distances, are filled in by
		// refRunNear.
		return refStatement{what: q.Type, sql: refSearchNearSQL, args: append(args, q.Model, nil, share, q.AgentID, q.ThreadID, nil), near: near}, nil
	case q.Dense != nil:
		return refStatement{what: q.Type, sql: refSearchDenseSQL, args: append(args, q.Model, q.Dense, share, q.AgentID, q.ThreadID)}, nil
	}
	return refStatement{what: q.Type, sql: refSearchLexicalSQL, args: append(args, nil, nil, share, q.AgentID, q.ThreadID)}, nil
}

func refRunNear(ctx context.Context, db pg.DBTX, st *refStatement, inTx bool) error {
	n := st.near
	begin, end := "BEGIN READ ONLY", "COMMIT"
	if inTx {
		begin, end = "SAVEPOINT engram_dense_scan", "ROLLBACK TO SAVEPOINT engram_dense_scan"
	}
	b := &pgx.Batch{}
	b.Queue(begin)
	b.Queue(denseScanSettingsSQL, n.ef, n.maxTuples)
	b.Queue(n.sql, n.args...)
	b.Queue(end)
	if inTx {
		b.Queue("RELEASE SAVEPOINT engram_dense_scan")
	}
	br := db.SendBatch(ctx, b)
	defer func() { _ = br.Close() }()
	for range 2 {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("dense index scan: %w", err)
		}
	}
	rows, err := br.Query()
	if err != nil {
		return fmt.Errorf("dense index scan: %w", err)
	}
	var ids []uuid.UUID
	var dists []float64
	var id uuid.UUID
	var dist float64
	_, err = pgx.ForEachRow(rows, []any{&id, &dist}, func() error {
		ids, dists = append(ids, id), append(dists, dist)
		return nil
	})
	if err != nil {
		return fmt.Errorf("dense index scan: %w", err)
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("dense index scan: %w", err)
	}
	st.args[9], st.args[13] = ids, dists
	return nil
}

func refRunSearches(ctx context.Context, db pg.DBTX, stmts []refStatement, out []SearchResult, genericPlans bool) error {
	for i := range stmts {
		if stmts[i].near != nil {
			if err := refRunNear(ctx, db, &stmts[i], !genericPlans); err != nil {
				return fmt.Errorf("search %s: %w", stmts[i].what, err)
			}
		}
	}
	b := &pgx.Batch{}
	if genericPlans {
		b.Queue("BEGIN READ ONLY")
		b.Queue("SET LOCAL plan_cache_mode = force_generic_plan")
	}
	for _, st := range stmts {
		b.Queue(st.sql, st.args...)
	}
	if genericPlans {
		b.Queue("COMMIT")
	}
	br := db.SendBatch(ctx, b)
	defer func() { _ = br.Close() }()
	if genericPlans {
		for range 2 {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("search: %w", err)
			}
		}
	}
	for i, st := range stmts {
		if err := refReadSearch(br, &out[i]); err != nil {
			return fmt.Errorf("search %s: %w", st.what, err)
		}
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("search: %w", err)
	}
	return nil
}

func refReadSearch(br pgx.BatchResults, out *SearchResult) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var n int64
		var took float64
		if rows.RawValues()[2] == nil {
			// Nothing matched: the row carries the withheld count only.
			skip := make([]any, len(rows.FieldDescriptions()))
			skip[0], skip[1] = &n, &took
			err = rows.Scan(skip...)
		} else {
			var h Hit
			var id uuid.UUID
			h.Record, err = scanRecord(rows, &n, &took, &id, &h.BM25, &h.Terms, &h.Similarity)
			out.Hits = append(out.Hits, h)
		}
		if err != nil {
			return err
		}
		out.Withheld = int(n)
		out.Elapsed = max(out.Elapsed, time.Duration(took*float64(time.Second)))
	}
	return rows.Err()
}
