package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
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

// searchStatsSQL reads what a task is matched by, once for every layer of
// a retrieval (issue 29), so that no layer's statement looks them up
// again: the tenant's passages and their mean
// length; the lexemes of the text ($2) with the passages that hold each;
// and, for the built-in embedder's sparse vectors, the document frequency
// of each feature of the query vector ($4) under its model ($3). A
// statistic the tenant has none of yet counts as zero (every term alike).
// The layers' statements take them as parameters (searchTaskSQL,
// searchSparse). A passage is a record, or one timeline entry of an
// episode (migration 007).
const searchStatsSQL = `
SELECT c.n, c.avg_len, t.lexemes, t.dfs, f.dfs
FROM (
	SELECT coalesce(max(passages), 0) AS n, coalesce(max(avg_len), 1) AS avg_len
	FROM corpus_stats WHERE tenant_id = $1
) AS c, (
	SELECT coalesce(array_agg(t.lexeme ORDER BY t.i), '{}') AS lexemes,
		coalesce(array_agg(coalesce((
			SELECT s.df FROM lexeme_stats s WHERE s.tenant_id = $1 AND s.lexeme = t.lexeme), 0) ORDER BY t.i), '{}') AS dfs
	FROM unnest(tsvector_to_array(to_tsvector('english', $2))) WITH ORDINALITY AS t(lexeme, i)
) AS t, (
	SELECT coalesce(array_agg(coalesce((
			SELECT d.df FROM embedding_df d WHERE d.tenant_id = $1 AND d.model = $3 AND d.feature = f.feature), 0) ORDER BY f.i), '{}') AS dfs
	FROM unnest($4::int4[]) WITH ORDINALITY AS f(feature, i)
) AS f`

// searchTaskSQL heads a search statement: the task's statistics, which
// searchStatsSQL read, as the lexical half uses them. c is the tenant's
// passages ($15) and their mean length ($16); q the text's lexemes ($2)
// with their BM25 inverse document frequencies from the passages that hold
// each ($14); tq two tsqueries OR-ing them: rare, the rarest eight terms
// among those held by at most a share ($11) of the tenant's passages (in a
// tenant of fewer than 1,000 passages, any term; with a share of 1, every
// term), and every, those and the others in order of rarity while together
// they hold at most 200 times the limit ($8) of passages (with a share of
// 1, all of them): a common term held by a tenth of a large tenant's
// records would make them all candidates, each scored, and what only it
// brings scores lowest. The share is cast where it is first read:
// PostgreSQL infers a parameter's type from its first use, and beside a
// count it would infer bigint, to which pgx converts 0.05 as 0, which
// leaves no term rare.
const searchTaskSQL = `
WITH c AS (
	SELECT $15::int8 AS n, $16::float8 AS avg_len
), q AS (
	SELECT t.lexeme, t.df, ln(1 + (greatest(c.n - t.df, 0) + 0.5) / (t.df + 0.5)) AS idf,
		c.n < 1000 OR t.df <= $11::float8 * c.n AS selective,
		row_number() OVER (ORDER BY t.df, t.lexeme) AS rarity,
		'''' || replace(replace(t.lexeme, '\', '\\'), '''', '''''') || '''' AS quoted,
		('''' || replace(replace(t.lexeme, '\', '\\'), '''', '''''') || '''')::tsquery AS term
	FROM c, unnest($2::text[], $14::int8[]) AS t(lexeme, df)
), qr AS (
	SELECT quoted, rare, sum(df) FILTER (WHERE NOT rare) OVER (ORDER BY rarity) AS reach
	FROM (SELECT quoted, df, rarity, selective AND (rarity <= 8 OR $11 >= 1) AS rare FROM q) AS q
), tq AS (
	SELECT (string_agg(quoted, ' | ') FILTER (WHERE rare))::tsquery AS rare,
		(string_agg(quoted, ' | ') FILTER (WHERE rare OR reach <= 200 * $8 OR $11 >= 1))::tsquery AS every
	FROM qr
)`

// searchLayers opens the searches of the statement's layers (substrate RFC
// §15.8: retrieval proceeds in layers), one per type of $3 in order, each
// a lateral subquery over what searchTaskSQL made of the statistics: a
// retrieval's layers are one statement, or in a large tenant a few, run
// at once on connections of their own (parallelSearchPassages). Within
// it, l.type is the layer's type and l.i its place in $3.
const searchLayers = `
SELECT l.i, s.* FROM unnest($3::text[]) WITH ORDINALITY AS l(type, i)
CROSS JOIN LATERAL (`

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

// searchLexical finds the tenant's records of the layer's type that hold the
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
const searchLexical = `
WITH rare AS MATERIALIZED (
	SELECT r.id, 0::bigint AS pid, r.tsv, length(r.tsv) AS len, r.sensitivity_rank <= $4 AS allowed
	FROM records r, tq
	WHERE r.search_key = $1 || '/' || l.type AND r.tsv @@ tq.rare AND ` + searchFilter + `
	UNION ALL
	SELECT r.id, e.seq, e.tsv, length(e.tsv), r.sensitivity_rank <= $4
	FROM tq, episode_entries e JOIN records r ON r.tenant_id = e.tenant_id AND r.id = e.record_id
	WHERE l.type = 'episodic' AND e.tenant_id = $1 AND e.tsv @@ tq.rare AND r.type = 'episodic' AND ` + searchFilter + `
), few AS (
	SELECT count(DISTINCT id) < $8 AS yes FROM rare WHERE allowed
), matched AS (
	SELECT * FROM rare
	UNION ALL
	SELECT r.id, 0, r.tsv, length(r.tsv), r.sensitivity_rank <= $4
	FROM records r, tq, few
	WHERE few.yes AND r.search_key = $1 || '/' || l.type AND r.tsv @@ tq.every AND NOT coalesce(r.tsv @@ tq.rare, false)
		AND ` + searchFilter + `
	UNION ALL
	SELECT r.id, e.seq, e.tsv, length(e.tsv), r.sensitivity_rank <= $4
	FROM tq, few, episode_entries e JOIN records r ON r.tenant_id = e.tenant_id AND r.id = e.record_id
	WHERE few.yes AND l.type = 'episodic' AND e.tenant_id = $1 AND e.tsv @@ tq.every AND NOT coalesce(e.tsv @@ tq.rare, false)
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
// rank every vector of the tenant through the records. The features ($17)
// come with their document frequencies ($18), which searchStatsSQL read
// once for every layer. The result drops a hit below a similarity of 0.05
// as noise (searchResult); near_v drops it before joining the records,
// which keeps the same hits (the nearest first either way) without a
// record lookup for each: in a small tenant most of the nearest vectors
// share only a common trigram with the task, so most of those lookups
// would be for hits then dropped. The OFFSET 0 keeps the distance
// computed once.
const searchSparse = `, vf AS MATERIALIZED (
	SELECT coalesce(engram_feature_keys($1 || '/' || $9 || '/' || l.type,
		array_agg(feature) FILTER (WHERE $11 >= 1 OR reach <= 70 * $8 OR rarity = 1)), '{}') AS selected
	FROM (SELECT feature, sum(df) OVER w AS reach, row_number() OVER w AS rarity
		FROM unnest($17::int4[], $18::int8[]) AS f(feature, df) WINDOW w AS (ORDER BY df, feature)) AS r
), near_v AS (
	SELECT record_id, dist FROM (
		SELECT v.record_id, v.sparse <=> $10::sparsevec AS dist
		FROM record_vectors v, vf
		WHERE v.feature_keys && vf.selected AND v.search_key = $1 || '/' || $9 || '/' || l.type
			AND v.tenant_id = $1 AND v.model = $9 AND v.type = l.type AND v.sparse IS NOT NULL AND v.sensitivity_rank <= $4
		OFFSET 0) AS v
	WHERE dist <= 0.95
	ORDER BY dist
	LIMIT 4 * $8
), vec AS (
	SELECT v.record_id AS id, v.dist
	FROM near_v v JOIN records r ON r.tenant_id = $1 AND r.id = v.record_id
	WHERE r.type = l.type AND ` + searchFilter + `
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
	WHERE v.tenant_id = $1 AND v.model = $9 AND v.type = l.type AND v.sensitivity_rank <= $4 AND v.dense IS NOT NULL
	ORDER BY v.dense <=> $10::vector
	LIMIT 4 * $8
), vec AS (
	SELECT v.record_id AS id, v.dist
	FROM near_v v JOIN records r ON r.tenant_id = $1 AND r.id = v.record_id
	WHERE r.type = l.type AND ` + searchFilter + `
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
// vectors denseNearSQL found, a walk per layer: their ids ($10), distances
// ($17) and layers (their place in $3, $18), which the record-level
// filters choose among as searchDense's do.
const searchDenseNear = `, near_v AS (
	SELECT n.record_id, n.dist FROM unnest($10::uuid[], $17::float8[], $18::int8[]) AS n(record_id, dist, layer)
	WHERE n.layer = l.i AND $9::text IS NOT NULL
), vec AS (
	SELECT v.record_id AS id, v.dist
	FROM near_v v JOIN records r ON r.tenant_id = $1 AND r.id = v.record_id
	WHERE r.type = l.type AND ` + searchFilter + `
	ORDER BY v.dist
	LIMIT $8
)`

// searchNoVector is the vector half of a lexical-only search.
const searchNoVector = `, vec AS (
	SELECT NULL::uuid AS id, NULL::float8 AS dist WHERE $9::text IS NULL AND $10::text IS NULL
)`

// searchResult joins both halves of a layer with the records they found,
// and closes searchLayers. A vector hit below a cosine similarity of 0.05
// is noise (and an empty text's zero vector is at distance NaN, which
// compares above everything): it is dropped after the scan, whose limit
// keeps it bounded. A layer's first row always comes, carrying the
// withheld count, even when nothing matched, and how long the statement
// has taken so far (the layers run one after another: a layer's time is
// what its rows add to the layers' before it). The hits come by layer,
// best first.
const searchResult = `, near AS (
	SELECT * FROM vec WHERE dist <= 0.95
), hits AS (
	SELECT coalesce(lex.id, near.id) AS hid, coalesce(lex.bm25, 0) AS bm25, lex.terms, 1 - near.dist AS sim
	FROM lex FULL JOIN near ON lex.id = near.id
)
SELECT w.n, extract(epoch FROM clock_timestamp() - statement_timestamp()) AS took, h.hid, h.bm25, h.terms, h.sim, ` + recordColumns + `
FROM withheld w
LEFT JOIN (hits h JOIN records r ON r.tenant_id = $1 AND r.id = h.hid) ON true
) AS s
ORDER BY l.i, s.bm25 DESC, s.sim DESC NULLS LAST`

// searchWorkingSQL is a thread's working memory, in the shape of a search
// of one layer: it is withheld when above the caller's sensitivity.
const searchWorkingSQL = `
WITH w AS (
	SELECT r.id, r.sensitivity_rank FROM threads t JOIN records r ON r.tenant_id = t.tenant_id AND r.id = t.working_id
	WHERE t.tenant_id = $1 AND t.thread_id = $2 AND t.status = 'open' AND r.status IN ('active', 'contested')
), withheld AS (
	SELECT count(*) AS n FROM w WHERE sensitivity_rank > $3
), hits AS (
	SELECT id AS hid, 0::float8 AS bm25, NULL::text[] AS terms, NULL::float8 AS sim FROM w WHERE sensitivity_rank <= $3
)
SELECT 1::bigint, w.n, extract(epoch FROM clock_timestamp() - statement_timestamp()), h.hid, h.bm25, h.terms, h.sim, ` + recordColumns + `
FROM withheld w
LEFT JOIN (hits h JOIN records r ON r.tenant_id = $1 AND r.id = h.hid) ON true`

const (
	searchSparseSQL   = searchTaskSQL + searchLayers + searchLexical + searchSparse + searchResult
	searchDenseSQL    = searchTaskSQL + searchLayers + searchLexical + searchDense + searchResult
	searchNearSQL     = searchTaskSQL + searchLayers + searchLexical + searchDenseNear + searchResult
	searchLexicalSQL  = searchTaskSQL + searchLayers + searchLexical + searchNoVector + searchResult
	maxSearchLimit    = 1000
	defaultSearchSize = 50
)

// A retrieval's layers are one statement, searched one after another,
// unless its tenant holds parallelSearchPassages passages or more: then
// they are searchConns statements, run at once on connections of their
// own. A statement costs a round trip and the start of its plan, more than
// a small tenant's layer; a large tenant's layers take long enough for a
// second core to pay. Measured on a busy two-core machine, p50 of the
// statistics and the four layers (interleaved, 400 tasks): 100 tenants of
// 200 records, one statement 4.9 ms, two 5.6, four 7.2; one tenant of
// 1,000, 10.9, 12.0, 12.6; of 3,000, 16.5 all (p90 31.7, 25.5, 24.0); of
// 10,000, 30.1, 26.0, 25.4. Four used the most server CPU.
const (
	parallelSearchPassages = 2000
	searchConns            = 2
)

// Search runs the queries (one per layer, say) and returns their results in
// order. Queries that differ only in their type, as a retrieval's layers
// do, share one read of the task's statistics (searchStatsSQL) and are one
// statement, in one batch with the others; in a large tenant, on a pool,
// each layer is a statement of its own, and the statements run at once,
// each on a connection of its own. Episodes come with their appended
// entries; records come without their relations.
func Search(ctx context.Context, db pg.DBTX, tenant string, qs []SearchQuery) ([]SearchResult, error) {
	for _, q := range qs {
		if !q.Type.Valid() {
			return nil, fmt.Errorf("search: unknown type %q", q.Type)
		}
	}
	stmts, err := searchStatements(tenant, qs)
	if err != nil {
		return nil, err
	}
	if err := readStats(ctx, db, stmts); err != nil {
		return nil, err
	}
	out := make([]SearchResult, len(qs))
	if _, inTx := db.(pgx.Tx); inTx {
		if err := runSearches(ctx, db, qs, stmts, out, false); err != nil {
			return nil, err
		}
	} else {
		batches := searchBatches(stmts)
		errs := make([]error, len(batches))
		var wg sync.WaitGroup
		for i, b := range batches[1:] {
			wg.Go(func() { errs[i+1] = runSearches(ctx, db, qs, b, out, true) })
		}
		errs[0] = runSearches(ctx, db, qs, batches[0], out, true)
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

// statement is one search statement with its arguments: the search of one
// or more layers, the queries at layers (their indexes in Search's); the
// arguments of the statistics it takes (searchStatsSQL), and the passages
// they counted; and the dense index walks whose results it takes, if any.
type statement struct {
	sql      string
	args     []any
	layers   []int
	stats    []any
	passages int64
	near     *nearStatement
}

// what names a statement's layers, for its errors.
func (st statement) what(qs []SearchQuery) string {
	var types []string
	for _, i := range st.layers {
		types = append(types, string(qs[i].Type))
	}
	return strings.Join(types, ", ")
}

// nearStatement is the walks of a dense index (denseNearSQL), one per
// layer in order, with their arguments and settings.
type nearStatement struct {
	sqls          []string
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

// searchStatements are the statements that answer qs: one for each
// working memory query, and one for each set of the others that differ
// only in their type, in the order of their first. The statistics are
// read into them by readStats.
func searchStatements(tenant string, qs []SearchQuery) ([]statement, error) {
	var stmts []statement
next:
	for i, q := range qs {
		if q.Type != memory.Working {
			for k, st := range stmts {
				if h := qs[st.layers[0]]; h.Type != memory.Working && sameSearch(h, q) {
					stmts[k].layers = append(stmts[k].layers, i)
					continue next
				}
			}
		}
		stmts = append(stmts, statement{layers: []int{i}})
	}
	for k := range stmts {
		if err := searchStatement(tenant, qs, &stmts[k]); err != nil {
			return nil, err
		}
	}
	return stmts, nil
}

// sameSearch reports whether a and b differ in their type only.
func sameSearch(a, b SearchQuery) bool {
	a.Type, b.Type = "", ""
	return reflect.DeepEqual(a, b)
}

// searchStatement writes st's statement and arguments for its layers,
// queries of qs.
func searchStatement(tenant string, qs []SearchQuery, st *statement) error {
	q := qs[st.layers[0]]
	if q.Type == memory.Working {
		st.sql, st.args = searchWorkingSQL, []any{tenant, q.ThreadID, q.MaxSensitivity.Rank()}
		return nil
	}
	types := make([]string, len(st.layers))
	for k, i := range st.layers {
		types[k] = string(qs[i].Type)
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
	// $2 and $14 to $16, the statistics, are filled in by readStats.
	args := []any{tenant, nil, types, q.MaxSensitivity.Rank(), cond, q.At.UTC(), q.Scope, limit}
	st.stats = []any{tenant, q.Text, nil, nil}
	switch {
	case q.Sparse != nil:
		// The query vector's features ($17), as the vector half selects
		// candidates by them, with their document frequencies ($18).
		features := q.Sparse.Indices()
		st.stats[2], st.stats[3] = q.Model, features
		st.sql, st.args = searchSparseSQL, append(args, q.Model, q.Sparse, share, q.AgentID, q.ThreadID, nil, nil, nil, features, nil)
	case q.Dense != nil && q.DenseScan != nil:
		ds := q.DenseScan
		if err := ds.Index.Validate(); err != nil {
			return err
		}
		if ds.Index.Model != q.Model {
			return fmt.Errorf("search: dense index of model %q, query vector of %q", ds.Index.Model, q.Model)
		}
		if ds.EfSearch < 1 || ds.EfSearch > 1000 || ds.MaxScanTuples < 1 {
			return fmt.Errorf("search: dense scan ef_search %d (1..1000), max_scan_tuples %d (≥ 1)", ds.EfSearch, ds.MaxScanTuples)
		}
		st.near = &nearStatement{
			args: []any{tenant, q.Dense, q.MaxSensitivity.Rank(), 4 * limit},
			// A walk keeps at least as many candidates as it returns,
			// so that an unfiltered one needs no second pass.
			ef: strconv.Itoa(min(max(ds.EfSearch, 4*limit), 1000)), maxTuples: strconv.Itoa(ds.MaxScanTuples),
		}
		for _, i := range st.layers {
			st.near.sqls = append(st.near.sqls, denseNearStatement(ds.Index, qs[i].Type))
		}
		// $10, $17 and $18, the walks' ids, distances and layers, are
		// filled in by runNear.
		st.sql, st.args = searchNearSQL, append(args, q.Model, nil, share, q.AgentID, q.ThreadID, nil, nil, nil, nil, nil)
	case q.Dense != nil:
		st.sql, st.args = searchDenseSQL, append(args, q.Model, q.Dense, share, q.AgentID, q.ThreadID, nil, nil, nil)
	default:
		st.sql, st.args = searchLexicalSQL, append(args, nil, nil, share, q.AgentID, q.ThreadID, nil, nil, nil)
	}
	return nil
}

// readStats reads the task's statistics of each search statement
// (searchStatsSQL) into its arguments, all in one round trip.
func readStats(ctx context.Context, db pg.DBTX, stmts []statement) error {
	b := &pgx.Batch{}
	for _, st := range stmts {
		if st.stats != nil {
			b.Queue(searchStatsSQL, st.stats...)
		}
	}
	if b.Len() == 0 {
		return nil
	}
	br := db.SendBatch(ctx, b)
	defer func() { _ = br.Close() }()
	for k := range stmts {
		st := &stmts[k]
		if st.stats == nil {
			continue
		}
		var avgLen float64
		var lexemes []string
		var dfs, featureDFs []int64
		if err := br.QueryRow().Scan(&st.passages, &avgLen, &lexemes, &dfs, &featureDFs); err != nil {
			return fmt.Errorf("search: read statistics: %w", err)
		}
		st.args[1], st.args[13], st.args[14], st.args[15] = lexemes, dfs, st.passages, avgLen
		if st.stats[3] != nil {
			st.args[17] = featureDFs // a sparse search's
		}
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("search: read statistics: %w", err)
	}
	return nil
}

// searchBatches splits the statements into the batches that run them at
// once, each on a connection of its own: one batch, but a statement of
// several layers in a tenant of parallelSearchPassages passages or more
// becomes searchConns statements of some of its layers, each in a batch
// of its own. The others (a thread's working memory) join the first.
func searchBatches(stmts []statement) [][]statement {
	var out [][]statement
	var rest []statement
	for _, st := range stmts {
		if len(st.layers) < 2 || st.passages < parallelSearchPassages {
			rest = append(rest, st)
			continue
		}
		n := min(len(st.layers), searchConns)
		for j := range n {
			var ks []int
			for k := j; k < len(st.layers); k += n {
				ks = append(ks, k)
			}
			out = append(out, []statement{st.some(ks)})
		}
	}
	if len(out) == 0 {
		return [][]statement{rest}
	}
	out[0] = append(out[0], rest...)
	return out
}

// some is the statement of st's layers ks alone.
func (st statement) some(ks []int) statement {
	one := st
	one.layers = nil
	one.args = slices.Clone(st.args)
	var types []string
	for _, k := range ks {
		one.layers = append(one.layers, st.layers[k])
		types = append(types, st.args[2].([]string)[k])
	}
	one.args[2] = types
	if st.near != nil {
		near := *st.near
		near.sqls = nil
		for _, k := range ks {
			near.sqls = append(near.sqls, st.near.sqls[k])
		}
		one.near = &near
	}
	return one
}

// runNear walks the dense index for each of st's layers (statement.near)
// in one batch and puts what they found into st's arguments. On a pool it
// is a read-only transaction of its own; inside a caller's transaction, a
// savepoint rolled back after, so that its settings end with it.
func runNear(ctx context.Context, db pg.DBTX, st *statement, inTx bool) error {
	n := st.near
	begin, end := "BEGIN READ ONLY", "COMMIT"
	if inTx {
		begin, end = "SAVEPOINT engram_dense_scan", "ROLLBACK TO SAVEPOINT engram_dense_scan"
	}
	b := &pgx.Batch{}
	b.Queue(begin)
	b.Queue(denseScanSettingsSQL, n.ef, n.maxTuples)
	for _, sql := range n.sqls {
		b.Queue(sql, n.args...)
	}
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
	var ids []uuid.UUID
	var dists []float64
	var layers []int64
	for k := range n.sqls {
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("dense index scan: %w", err)
		}
		var id uuid.UUID
		var dist float64
		_, err = pgx.ForEachRow(rows, []any{&id, &dist}, func() error {
			ids, dists, layers = append(ids, id), append(dists, dist), append(layers, int64(k+1))
			return nil
		})
		if err != nil {
			return fmt.Errorf("dense index scan: %w", err)
		}
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("dense index scan: %w", err)
	}
	st.args[9], st.args[16], st.args[17] = ids, dists, layers
	return nil
}

// runSearches runs statements of qs as one batch on db and reads their
// results into out. With genericPlans, the batch is a read-only
// transaction that plans its statements generically: they have one shape
// whatever their parameters, and planning them costs more than running
// them, so a generic plan, made once per connection, serves every call.
func runSearches(ctx context.Context, db pg.DBTX, qs []SearchQuery, stmts []statement, out []SearchResult, genericPlans bool) error {
	for i := range stmts {
		if stmts[i].near != nil {
			if err := runNear(ctx, db, &stmts[i], !genericPlans); err != nil {
				return fmt.Errorf("search %s: %w", stmts[i].what(qs), err)
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
	for _, st := range stmts {
		if err := readSearch(br, st, out); err != nil {
			return fmt.Errorf("search %s: %w", st.what(qs), err)
		}
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("search: %w", err)
	}
	return nil
}

// readSearch reads one search statement's rows into the results of its
// layers. Each row begins with its layer's place in the statement (from
// 1) and the time the statement had taken when the layer produced it, so
// that a layer's time is what it added to the layers' before it.
func readSearch(br pgx.BatchResults, st statement, out []SearchResult) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	took := make([]float64, len(st.layers))
	for rows.Next() {
		var layer, n int64
		var t float64
		var h Hit
		hit := rows.RawValues()[3] != nil
		if hit {
			var id uuid.UUID
			h.Record, err = scanRecord(rows, &layer, &n, &t, &id, &h.BM25, &h.Terms, &h.Similarity)
		} else {
			// Nothing matched: the row carries the withheld count only.
			skip := make([]any, len(rows.FieldDescriptions()))
			skip[0], skip[1], skip[2] = &layer, &n, &t
			err = rows.Scan(skip...)
		}
		if err != nil {
			return err
		}
		if layer < 1 || int(layer) > len(st.layers) {
			return fmt.Errorf("a row of layer %d of %d", layer, len(st.layers))
		}
		res := &out[st.layers[layer-1]]
		if hit {
			res.Hits = append(res.Hits, h)
		}
		res.Withheld = int(n)
		took[layer-1] = max(took[layer-1], t)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var before float64
	for k, t := range took {
		out[st.layers[k]].Elapsed = time.Duration(max(t-before, 0) * float64(time.Second))
		before = max(before, t)
	}
	return nil
}
