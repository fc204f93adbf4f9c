package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
)

// SearchQuery is one search of a tenant's active set, of one record type:
// the lexical half (BM25 over the records' tsvector) and, when a query
// vector is given, the vector half (pgvector, nearest first). Every filter
// runs inside both scans, before their limits.
type SearchQuery struct {
	Type memory.Type
	// AgentID and ThreadID are the caller's: a record visible only to
	// another agent or thread is not a candidate (after 003 §12.8.5). For
	// working memory, ThreadID names the thread whose open working memory
	// is the answer; working memory is not searched otherwise.
	AgentID, ThreadID string
	// Text is matched lexically: any of its terms (OR, not AND), ranked by
	// BM25. Empty text searches by vector only.
	Text string
	// Conditions are the task's context: facts whose validity and
	// procedures whose every trigger contradicts them are left out.
	Conditions map[string]any
	// Scope, when set, keeps records of that scope and records of none.
	Scope *string
	// MaxSensitivity is the highest sensitivity returned.
	MaxSensitivity memory.Sensitivity
	// At is the time facts' validity boxes are checked at.
	At time.Time
	// Limit caps the candidates of each half.
	Limit int
	// CommonTermShare: a term held by more than this share of the
	// tenant's passages scores, but selects candidates only when the rarer
	// terms bring too few (0, or 1 and above: every term selects).
	CommonTermShare float64
	// Model names the embedder whose vectors Sparse or Dense is compared
	// with; with neither, the search is lexical only.
	Model  string
	Sparse *pgvector.SparseVector
	Dense  *pgvector.Vector
	// DenseScan, with Dense, has the vector half walk the model's HNSW
	// index ([DenseIndex]) rather than rank the tenant's vectors of the
	// type exactly. It is the caller's choice, by the tenant's size:
	// searches run generic plans, which cannot tell a tenant of a million
	// vectors from one of fifty.
	DenseScan *DenseScan
}

// DenseScan is how a search walks a dense model's HNSW index.
type DenseScan struct {
	Index DenseIndex
	// EfSearch is hnsw.ef_search, the candidates the walk keeps (1..1000),
	// raised to the walk's limit (four times the search's) when below it:
	// more is better recall and slower.
	EfSearch int
	// MaxScanTuples is hnsw.max_scan_tuples, how far an iterative scan
	// goes when the tenant, type and sensitivity filters leave too few
	// vectors (pgvector's default is 20,000).
	MaxScanTuples int
}

// Hit is one record a search found, with what found it.
type Hit struct {
	Record memory.Record
	// BM25 is the lexical score; zero when lexical search did not find it.
	BM25 float64
	// Terms are the query's lexemes the record holds.
	Terms []string
	// Similarity is the cosine similarity of the record's vector with the
	// query's, when vector search found it.
	Similarity *float64
}

// SearchResult is what one [SearchQuery] found.
type SearchResult struct {
	Hits []Hit
	// Elapsed is how long the database took over this query, as the
	// server measured it.
	Elapsed time.Duration
	// Withheld counts the records above MaxSensitivity that lexical search
	// would have ranked among its candidates: what the caller's trust kept
	// back (never which).
	Withheld int
}

// searchTermsSQL is the lexical query: the text's lexemes with their BM25
// inverse document frequencies from the tenant's statistics (every term
// alike when there are none yet), and two tsqueries OR-ing them: rare, the
// rarest eight terms among those held by at most a share ($11) of the
// tenant's passages (in a tenant of fewer than 1,000 passages, any term;
// with a share of 1, every term), and every, those and the others in order
// of rarity while together they hold at most 200 times the limit ($8) of
// passages (with a share of 1, all of them): a common term held by a tenth
// of a large tenant's records would make them all candidates, each scored,
// and what only it brings scores lowest. The share is cast where it is
// first read: PostgreSQL infers a parameter's type from its first use, and
// beside a count it would infer bigint, to which pgx converts 0.05 as 0,
// which leaves no term rare. A passage is a
// record, or one timeline entry of an episode (migration 007); docs is the
// number of live records.
const searchTermsSQL = `
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

// searchFilter is what a record must satisfy besides a match, its tenant
// and type: live, within scope, visible to the caller's agent ($12) and
// thread ($13), and not contradicting the task's conditions ($5) at the
// time $6. A record's conditions are precomputed (migration 016): they
// hold when no key has a different value in the task's, that is when
// adding the task's to them changes nothing the other way round; a
// procedure whose triggers name different conditions has none, and is
// checked trigger by trigger on its payload.
const searchFilter = `
	r.status IN ('active', 'contested')
	AND ($7::text IS NULL OR r.scope IN ('', $7))
	AND (r.visibility = 'tenant' OR (r.visibility = 'agent' AND r.agent_id = $12) OR (r.visibility = 'thread' AND r.thread_id = $13))
	AND CASE WHEN r.conditions IS NULL THEN engram_procedure_applies(r.payload, $5)
		ELSE r.conditions || $5::jsonb = $5::jsonb || r.conditions END
	AND (r.type <> 'semantic' OR (coalesce((r.payload #>> '{validity,start}')::timestamptz <= $6, true)
		AND coalesce((r.payload #>> '{validity,end}')::timestamptz >= $6, true)))`

// searchLexical finds the tenant's records of the type that hold the
// query's lexemes, on the records_search index (its search_key is tenant
// and type), and, for episodes, the timeline entries that hold them, on
// episode_entries_search: an episode's passages are its own text and each
// of its entries, and it ranks by its best one, so that a running task is
// found by the words of its latest event without its text ever being
// rewritten (issue 9; substrate RFC §5). The rare terms select the
// candidates; only when they bring fewer records than the limit ($8) do the
// others select too: a query of common words would otherwise make nearly
// every record a candidate, and the records only common words bring score
// lowest. Every term scores every candidate passage with BM25 (k1 = 1.2,
// b = 0.75; a passage's length is its number of distinct lexemes), its term
// frequency counted as presence: passages are short texts in which a term
// seldom repeats, and reading a term's positions takes a set-returning call
// per passage, which costs more than the whole search otherwise does. Each
// (passage, term) pair is one tsvector match. lex ranks the candidates at
// or below the caller's sensitivity ($4); withheld counts those above it
// that would have ranked among them.
const searchLexical = `, rare AS MATERIALIZED (
	SELECT r.id, 0::bigint AS pid, r.tsv, length(r.tsv) AS len, r.sensitivity_rank <= $4 AS allowed
	FROM records r, tq
	WHERE r.search_key = $1 || '/' || $3 AND r.tsv @@ tq.rare AND ` + searchFilter + `
	UNION ALL
	SELECT r.id, e.seq, e.tsv, length(e.tsv), r.sensitivity_rank <= $4
	FROM tq, episode_entries e JOIN records r ON r.tenant_id = e.tenant_id AND r.id = e.record_id
	WHERE $3::text = 'episodic' AND e.tenant_id = $1 AND e.tsv @@ tq.rare AND r.type = 'episodic' AND ` + searchFilter + `
), few AS (
	SELECT count(DISTINCT id) < $8 AS yes FROM rare WHERE allowed
), matched AS (
	SELECT * FROM rare
	UNION ALL
	SELECT r.id, 0, r.tsv, length(r.tsv), r.sensitivity_rank <= $4
	FROM records r, tq, few
	WHERE few.yes AND r.search_key = $1 || '/' || $3 AND r.tsv @@ tq.every AND NOT coalesce(r.tsv @@ tq.rare, false)
		AND ` + searchFilter + `
	UNION ALL
	SELECT r.id, e.seq, e.tsv, length(e.tsv), r.sensitivity_rank <= $4
	FROM tq, few, episode_entries e JOIN records r ON r.tenant_id = e.tenant_id AND r.id = e.record_id
	WHERE few.yes AND $3::text = 'episodic' AND e.tenant_id = $1 AND e.tsv @@ tq.every AND NOT coalesce(e.tsv @@ tq.rare, false)
		AND r.type = 'episodic' AND ` + searchFilter + `
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

// searchSparse is the vector half for the built-in embedder's sparse
// vectors: the nearest vectors of the model ($9) to the query vector
// ($10), four times the limit, filtered on what the vector rows hold
// themselves — tenant (its partition), model, type, sensitivity; a record
// that leaves the active set leaves the table. Its vectors are a weighted
// match of hashed features, so a vector that shares no feature with the
// query's is at distance 1 and never a hit: the candidates are the vectors
// that share one, found on the feature keys' GIN index, and only they are
// ranked exactly. A feature key (engram_feature_keys, migration 026) is
// the feature with the hash of the vector's search key (tenant, model and
// type), so a key's posting list holds exactly the vectors this search
// may compare, not every vector of the partition with the feature, which
// a scan would decode whole at a cost that grows with the partition rather
// than the tenant; the search key and its parts are checked again (two
// search keys may share a hash, and a model name may hold a slash).
// The query's features select in order of
// rarity (their document frequency in the tenant) while together they
// reach at most 70 times the limit of the tenant's vectors, the rarest one
// always: a common feature (a trigram of a frequent word) would make most
// of the tenant's vectors candidates, and its weight in them, scaled by its
// inverse document frequency, is the lowest, so the vectors only common
// features bring rank last. The cost is bounded whatever the tenant's
// size, where ranking every vector of a tenant grows with it and an HNSW
// walk over sparse vectors goes far for a good top-k. With a share ($11)
// of 1, every feature selects: exact. The two bounds (this one and the
// lexical half's, 200 times) were chosen to keep recall@10 against exact
// search at its target of 0.95 on one tenant of 100,000 records
// (BenchmarkRecall/large-tenant; the measurements are in
// docs/bench/history.md).
// The record-level filters (visibility, scope, conditions) then choose
// among them; joining the records inside the scan would make the planner
// rank every vector of the tenant through the records. vq is materialized:
// inlined into the window below, each feature's document frequency would
// be looked up twice (the sort key and the sum). The result drops a hit
// below a similarity of 0.05 as noise (searchResult); near_v drops it
// before joining the records, which keeps the same hits (the nearest
// first either way) without a record lookup for each: in a small tenant
// most of the nearest vectors share only a common trigram with the task,
// so most of those lookups would be for hits then dropped. The OFFSET 0 keeps
// the distance computed once.
const searchSparse = `, vq AS MATERIALIZED (
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
	WHERE r.type = $3 AND ` + searchFilter + `
	ORDER BY v.dist
	LIMIT $8
)`

// searchDense is the vector half for dense vectors (an OpenAI-compatible
// model) of a tenant small enough to rank exactly (a large one walks their
// HNSW index: denseNearSQL, searchDenseNear): the tenant's vectors of the
// model and type are ranked exactly, four times the limit, and the
// record-level filters choose among them as searchSparse's do.
const searchDense = `, near_v AS (
	SELECT v.record_id, v.dense <=> $10::vector AS dist
	FROM record_vectors v
	WHERE v.tenant_id = $1 AND v.model = $9 AND v.type = $3 AND v.sensitivity_rank <= $4 AND v.dense IS NOT NULL
	ORDER BY v.dense <=> $10::vector
	LIMIT 4 * $8
), vec AS (
	SELECT v.record_id AS id, v.dist
	FROM near_v v JOIN records r ON r.tenant_id = $1 AND r.id = v.record_id
	WHERE r.type = $3 AND ` + searchFilter + `
	ORDER BY v.dist
	LIMIT $8
)`

// denseNearSQL is the vector half for a large tenant's dense vectors, a
// statement of its own (runNear): the nearest vectors of the model to the
// query's, four times the limit ($5), on the model's HNSW index
// ([DenseIndex]). The index is an expression index, partial on the model
// and the type, so the statement names all three, {{cast}} (vector(N) or
// halfvec(N)), {{model}} and {{type}} (quoted literals):
// denseNearStatement writes them in. It runs
// with sorting disabled, which leaves the index the only way to the order
// (a generic plan estimates a tenant at the average tenant's size and
// would otherwise sort the tenant's vectors), and with relaxed iterative
// scans, so that the tenant, type and sensitivity filters, applied to
// what the walk finds, still leave the limit's worth; the search ranks
// what it returns again.
const denseNearSQL = `
SELECT v.record_id, v.dense::{{cast}} <=> $2::vector::{{cast}} AS dist
FROM record_vectors v
WHERE v.model = {{model}} AND v.type = {{type}} AND v.tenant_id = $1 AND v.sensitivity_rank <= $3
ORDER BY v.dense::{{cast}} <=> $2::vector::{{cast}}
LIMIT $4`

// denseScanSettingsSQL sets, for the transaction of one denseNearSQL, what
// the walk needs: a generic plan without sorts, hnsw.ef_search ($1), and
// iterative scans up to hnsw.max_scan_tuples ($2) (pgvector 0.8).
const denseScanSettingsSQL = `
SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_sort', 'off', true),
	set_config('hnsw.ef_search', $1, true), set_config('hnsw.iterative_scan', 'relaxed_order', true),
	set_config('hnsw.max_scan_tuples', $2, true)`

// searchDenseNear is the vector half of a dense search whose nearest
// vectors denseNearSQL found: their ids ($10) and distances ($14), which
// the record-level filters choose among as searchDense's do.
const searchDenseNear = `, near_v AS (
	SELECT n.record_id, n.dist FROM unnest($10::uuid[], $14::float8[]) AS n(record_id, dist) WHERE $9::text IS NOT NULL
), vec AS (
	SELECT v.record_id AS id, v.dist
	FROM near_v v JOIN records r ON r.tenant_id = $1 AND r.id = v.record_id
	WHERE r.type = $3 AND ` + searchFilter + `
	ORDER BY v.dist
	LIMIT $8
)`

// searchNoVector is the vector half of a lexical-only search.
const searchNoVector = `, vec AS (
	SELECT NULL::uuid AS id, NULL::float8 AS dist WHERE $9::text IS NULL AND $10::text IS NULL
)`

// searchResult joins both halves with the records they found. A vector
// hit below a cosine similarity of 0.05 is noise (and an empty text's zero
// vector is at distance NaN, which compares above everything): it is
// dropped after the scan, whose limit keeps it bounded. The first row
// always comes, carrying the withheld count, even when nothing matched,
// and how long the statement has taken so far (the statements of a batch
// run back to back before the client reads the first answer, so only the
// server can tell each one's time).
const searchResult = `, near AS (
	SELECT * FROM vec WHERE dist <= 0.95
), hits AS (
	SELECT coalesce(lex.id, near.id) AS hid, coalesce(lex.bm25, 0) AS bm25, lex.terms, 1 - near.dist AS sim
	FROM lex FULL JOIN near ON lex.id = near.id
)
SELECT w.n, extract(epoch FROM clock_timestamp() - statement_timestamp()), h.hid, h.bm25, h.terms, h.sim, ` + recordColumns + `
FROM withheld w
LEFT JOIN (hits h JOIN records r ON r.tenant_id = $1 AND r.id = h.hid) ON true
ORDER BY h.bm25 DESC, h.sim DESC NULLS LAST`

// searchWorkingSQL is a thread's working memory, in the shape of a search
// result: it is withheld when above the caller's sensitivity.
const searchWorkingSQL = `
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
	searchSparseSQL   = searchTermsSQL + searchLexical + searchSparse + searchResult
	searchDenseSQL    = searchTermsSQL + searchLexical + searchDense + searchResult
	searchNearSQL     = searchTermsSQL + searchLexical + searchDenseNear + searchResult
	searchLexicalSQL  = searchTermsSQL + searchLexical + searchNoVector + searchResult
	maxSearchLimit    = 1000
	defaultSearchSize = 50
)

// Search runs each query (one per layer, say) and returns their results in
// order. On a pool the queries run at once, each on a connection of its
// own, so that an answer takes as long as its slowest query; inside a
// caller's transaction they run as one batch. Episodes come with their
// appended entries; records come without their relations.
func Search(ctx context.Context, db pg.DBTX, tenant string, qs []SearchQuery) ([]SearchResult, error) {
	stmts := make([]statement, len(qs))
	for i, q := range qs {
		if !q.Type.Valid() {
			return nil, fmt.Errorf("search: unknown type %q", q.Type)
		}
		st, err := searchStatement(tenant, q)
		if err != nil {
			return nil, err
		}
		stmts[i] = st
	}
	out := make([]SearchResult, len(qs))
	if _, inTx := db.(pgx.Tx); inTx {
		if err := runSearches(ctx, db, stmts, out, false); err != nil {
			return nil, err
		}
	} else {
		var wg sync.WaitGroup
		errs := make([]error, len(qs))
		for i := range stmts {
			wg.Go(func() { errs[i] = runSearches(ctx, db, stmts[i:i+1], out[i:i+1], true) })
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

// statement is one search statement with its arguments, and the dense
// index walk whose result it takes, if any.
type statement struct {
	what memory.Type
	sql  string
	args []any
	near *nearStatement
}

// nearStatement is a walk of a dense index (denseNearSQL) with its
// arguments and settings.
type nearStatement struct {
	sql           string
	args          []any
	ef, maxTuples string
}

// denseNearSQLs holds denseNearSQL written for each index and type
// searched.
var denseNearSQLs sync.Map

type denseNearKey struct {
	ix DenseIndex
	t  memory.Type
}

// denseNearStatement is denseNearSQL for ix, which must be valid, and a
// valid type: the dimension is an integer, the model and the type quoted
// literals.
func denseNearStatement(ix DenseIndex, t memory.Type) string {
	k := denseNearKey{ix, t}
	if s, ok := denseNearSQLs.Load(k); ok {
		return s.(string)
	}
	s := strings.NewReplacer("{{cast}}", ix.castType(), "{{model}}", quoteLiteral(ix.Model), "{{type}}", quoteLiteral(string(t))).Replace(denseNearSQL)
	denseNearSQLs.Store(k, s)
	return s
}

func searchStatement(tenant string, q SearchQuery) (statement, error) {
	if q.Type == memory.Working {
		return statement{what: q.Type, sql: searchWorkingSQL, args: []any{tenant, q.ThreadID, q.MaxSensitivity.Rank()}}, nil
	}
	limit := q.Limit
	if limit <= 0 {
		limit = defaultSearchSize
	}
	limit = min(limit, maxSearchLimit)
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
		return statement{what: q.Type, sql: searchSparseSQL, args: append(args, q.Model, q.Sparse, share, q.AgentID, q.ThreadID, q.Sparse.Indices())}, nil
	case q.Dense != nil && q.DenseScan != nil:
		ds := q.DenseScan
		if err := ds.Index.Validate(); err != nil {
			return statement{}, err
		}
		if ds.Index.Model != q.Model {
			return statement{}, fmt.Errorf("search: dense index of model %q, query vector of %q", ds.Index.Model, q.Model)
		}
		if ds.EfSearch < 1 || ds.EfSearch > 1000 || ds.MaxScanTuples < 1 {
			return statement{}, fmt.Errorf("search: dense scan ef_search %d (1..1000), max_scan_tuples %d (≥ 1)", ds.EfSearch, ds.MaxScanTuples)
		}
		near := &nearStatement{
			sql:  denseNearStatement(ds.Index, q.Type),
			args: []any{tenant, q.Dense, q.MaxSensitivity.Rank(), 4 * limit},
			// A walk keeps at least as many candidates as it returns,
			// so that an unfiltered one needs no second pass.
			ef: strconv.Itoa(min(max(ds.EfSearch, 4*limit), 1000)), maxTuples: strconv.Itoa(ds.MaxScanTuples),
		}
		// $10 and $14, the walk's ids and distances, are filled in by
		// runNear.
		return statement{what: q.Type, sql: searchNearSQL, args: append(args, q.Model, nil, share, q.AgentID, q.ThreadID, nil), near: near}, nil
	case q.Dense != nil:
		return statement{what: q.Type, sql: searchDenseSQL, args: append(args, q.Model, q.Dense, share, q.AgentID, q.ThreadID)}, nil
	}
	return statement{what: q.Type, sql: searchLexicalSQL, args: append(args, nil, nil, share, q.AgentID, q.ThreadID)}, nil
}

// runNear walks the dense index for st (statement.near) and puts what it
// found into st's arguments. On a pool it is a read-only transaction of its
// own; inside a caller's transaction, a savepoint rolled back after, so
// that its settings end with it.
func runNear(ctx context.Context, db pg.DBTX, st *statement, inTx bool) error {
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

// runSearches runs statements as one batch on db and reads their results
// into out. With genericPlans, the batch is a read-only transaction that
// plans its statements generically: they have one shape whatever their
// parameters, and planning them costs more than running them, so a generic
// plan, made once per connection, serves every call.
func runSearches(ctx context.Context, db pg.DBTX, stmts []statement, out []SearchResult, genericPlans bool) error {
	for i := range stmts {
		if stmts[i].near != nil {
			if err := runNear(ctx, db, &stmts[i], !genericPlans); err != nil {
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
		if err := readSearch(br, &out[i]); err != nil {
			return fmt.Errorf("search %s: %w", st.what, err)
		}
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("search: %w", err)
	}
	return nil
}

// readSearch reads one search statement's rows.
func readSearch(br pgx.BatchResults, out *SearchResult) error {
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
