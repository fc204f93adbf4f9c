package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
)

// The dimensions pgvector's HNSW indexes (pgvector 0.8): a vector up to
// 2,000, a halfvec up to 4,000. Dense vectors of more dimensions have no
// index and are always ranked exactly.
const (
	MaxVectorIndexDims  = 2000
	MaxHalfvecIndexDims = 4000
	// maxIndexModelBytes bounds a model name written into SQL.
	maxIndexModelBytes = 256
)

// DenseIndex is the approximate index of one dense embedding model's
// vectors: HNSW graphs over the expression dense::vector(Dims) with cosine
// distance (dense::halfvec(Dims) above [MaxVectorIndexDims]), partial on the
// model and on the record type, one for each searched type
// ([DenseIndexTypes]) on each partition of record_vectors. The dense column
// has no dimension of its own (models differ, and a model change leaves the
// old vectors until the backfill drops them), so both the index and the
// search name the dimension (issue 13). One graph per type, because a
// layer searches one type: in a graph of every type, a walk for the 10% of
// vectors that are plans discards nine in ten of what it visits: its
// iterative scans lose recall, and take longer than ranking the plans'
// vectors exactly.
type DenseIndex struct {
	// Model is the name vectors are stored under, e.g.
	// "openai:text-embedding-3-small:1536".
	Model string
	Dims  int
}

// Validate checks that the index can be written into SQL: a model name of
// at most 256 bytes of UTF-8 without NUL, and a dimension HNSW can index.
func (ix DenseIndex) Validate() error {
	switch {
	case ix.Model == "" || len(ix.Model) > maxIndexModelBytes:
		return fmt.Errorf("dense index: model name of %d bytes, want 1..%d", len(ix.Model), maxIndexModelBytes)
	case !utf8.ValidString(ix.Model) || strings.ContainsRune(ix.Model, 0):
		return errors.New("dense index: model name is not valid UTF-8 text")
	case ix.Dims < 1 || ix.Dims > MaxHalfvecIndexDims:
		return fmt.Errorf("dense index: %d dimensions, want 1..%d", ix.Dims, MaxHalfvecIndexDims)
	}
	return nil
}

// Half reports whether the index is over halfvec: above
// [MaxVectorIndexDims] dimensions, which HNSW cannot index as vector.
func (ix DenseIndex) Half() bool { return ix.Dims > MaxVectorIndexDims }

// castType is the type the index and the search cast dense to, e.g.
// "vector(1536)"; Dims is an integer, checked by Validate.
func (ix DenseIndex) castType() string {
	t := "vector"
	if ix.Half() {
		t = "halfvec"
	}
	return t + "(" + strconv.Itoa(ix.Dims) + ")"
}

// quoteLiteral is s as an SQL string literal, as PostgreSQL's quote_literal
// writes it: quotes doubled, and, when s holds a backslash, the E” form
// with backslashes doubled, so that it reads the same whatever
// standard_conforming_strings is. s must be valid text without NUL
// ([DenseIndex.Validate]).
func quoteLiteral(s string) string {
	q := "'" + strings.ReplaceAll(s, "'", "''") + "'"
	if strings.Contains(s, `\`) {
		q = "E" + strings.ReplaceAll(q, `\`, `\\`)
	}
	return q
}

// DenseIndexTypes are the record types a search compares vectors of, each
// of which has its own graph: working memory is found by its thread.
var DenseIndexTypes = []string{"episodic", "semantic", "competence", "plan_graph"}

// DenseIndexPart is the index of one record type on one partition of
// record_vectors.
type DenseIndexPart struct {
	// Table and Index are the partition's and its index's names, in the
	// partition's schema; Type the record type it holds.
	Table, Index, Type string
	// Exists and Valid: a build cut off (CREATE INDEX CONCURRENTLY
	// interrupted) leaves an index that exists but is not valid, which
	// the planner never uses and IF NOT EXISTS would keep.
	Exists, Valid bool
	// Create, Comment and Drop are the statements that build it
	// (CONCURRENTLY), label it, and drop an invalid one, written by
	// PostgreSQL's format() (%I, %L): no identifier or model name is
	// spliced into SQL in Go. CreateEmpty builds it without CONCURRENTLY,
	// for a partition that holds no vector of its model and type: a
	// concurrent build waits, three times, for every older transaction in
	// the database to end, while this one holds the partition's writes
	// for the moment an empty graph takes.
	Create, CreateEmpty, Comment, Drop string
}

// denseIndexPartsSQL is the state of the index ($1 model, $2 dims, $3
// halfvec) of each type ($4) on each partition of record_vectors, with the
// statements that make it. An index is named after its partition, a hash
// of the model and dimension, so that each model has its own, and its
// type; its comment says what it is, which is how the indexes of other
// models are found.
const denseIndexPartsSQL = `
WITH a AS (
	SELECT $1::text AS model, $2::int AS dims, CASE WHEN $3::bool THEN 'halfvec' ELSE 'vector' END AS typ
), parts AS (
	SELECT n.nspname AS nsp, c.relname AS tab, c.relnamespace, t.type,
		left(c.relname, 32) || '_dense_' || left(md5(a.model || '/' || a.dims), 12) || '_' || left(t.type, 4) AS idx
	FROM a, unnest($4::text[]) AS t(type), pg_inherits h
	JOIN pg_class c ON c.oid = h.inhrelid
	JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE h.inhparent = 'record_vectors'::regclass
)
SELECT p.tab, p.idx, p.type, i.indexrelid IS NOT NULL, coalesce(i.indisvalid, false),
	format('CREATE INDEX CONCURRENTLY IF NOT EXISTS %I ON %I.%I USING hnsw ((dense::%s(%s)) %s) WHERE model = %L AND type = %L',
		p.idx, p.nsp, p.tab, a.typ, a.dims, a.typ || '_cosine_ops', a.model, p.type),
	format('CREATE INDEX IF NOT EXISTS %I ON %I.%I USING hnsw ((dense::%s(%s)) %s) WHERE model = %L AND type = %L',
		p.idx, p.nsp, p.tab, a.typ, a.dims, a.typ || '_cosine_ops', a.model, p.type),
	format('COMMENT ON INDEX %I.%I IS %L', p.nsp, p.idx,
		'engram dense vector index: ' || a.model || ', ' || a.typ || '(' || a.dims || '), cosine, ' || p.type),
	format('DROP INDEX CONCURRENTLY IF EXISTS %I.%I', p.nsp, p.idx)
FROM a, parts p
LEFT JOIN pg_class ic ON ic.relnamespace = p.relnamespace AND ic.relname = p.idx
LEFT JOIN pg_index i ON i.indexrelid = ic.oid
ORDER BY p.tab, p.type`

// DenseIndexParts returns the state of ix on every partition of
// record_vectors, with the statements that build it.
func DenseIndexParts(ctx context.Context, db pg.DBTX, ix DenseIndex) ([]DenseIndexPart, error) {
	if err := ix.Validate(); err != nil {
		return nil, err
	}
	rows, err := db.Query(ctx, denseIndexPartsSQL, ix.Model, ix.Dims, ix.Half(), DenseIndexTypes)
	if err != nil {
		return nil, fmt.Errorf("read dense index state: %w", err)
	}
	parts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (DenseIndexPart, error) {
		var p DenseIndexPart
		err := row.Scan(&p.Table, &p.Index, &p.Type, &p.Exists, &p.Valid, &p.Create, &p.CreateEmpty, &p.Comment, &p.Drop)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("read dense index state: %w", err)
	}
	return parts, nil
}

// denseVectorPartsSQL lists the partitions and types that hold vectors of
// a model. It reads every vector of the model: it runs only when an index
// is to be built.
const denseVectorPartsSQL = `
SELECT c.relname, v.type FROM record_vectors v JOIN pg_class c ON c.oid = v.tableoid
WHERE v.model = $1 GROUP BY 1, 2`

// DenseVectorParts returns the (partition, type) pairs holding vectors of
// model, as "partition/type".
func DenseVectorParts(ctx context.Context, db pg.DBTX, model string) (map[string]bool, error) {
	rows, err := db.Query(ctx, denseVectorPartsSQL, model)
	if err != nil {
		return nil, fmt.Errorf("find the model's vectors: %w", err)
	}
	out := map[string]bool{}
	var part, typ string
	_, err = pgx.ForEachRow(rows, []any{&part, &typ}, func() error {
		out[part+"/"+typ] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find the model's vectors: %w", err)
	}
	return out, nil
}

// otherDenseIndexesSQL lists the engram dense indexes on record_vectors'
// partitions other than those named $1: another model's, left by a model
// change.
const otherDenseIndexesSQL = `
SELECT ic.relname, format('DROP INDEX CONCURRENTLY IF EXISTS %I.%I', n.nspname, ic.relname)
FROM pg_inherits h
JOIN pg_index i ON i.indrelid = h.inhrelid
JOIN pg_class ic ON ic.oid = i.indexrelid
JOIN pg_namespace n ON n.oid = ic.relnamespace
WHERE h.inhparent = 'record_vectors'::regclass
	AND obj_description(ic.oid, 'pg_class') LIKE 'engram dense vector index: %'
	AND ic.relname <> ALL ($1::text[])
ORDER BY ic.relname`

// OtherDenseIndexes returns the names of the dense indexes on
// record_vectors that are not among keep, with the statements that drop
// them.
func OtherDenseIndexes(ctx context.Context, db pg.DBTX, keep []string) (names, drops []string, err error) {
	rows, err := db.Query(ctx, otherDenseIndexesSQL, keep)
	if err != nil {
		return nil, nil, fmt.Errorf("list other dense indexes: %w", err)
	}
	var name, drop string
	_, err = pgx.ForEachRow(rows, []any{&name, &drop}, func() error {
		names, drops = append(names, name), append(drops, drop)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("list other dense indexes: %w", err)
	}
	return names, drops, nil
}

// IndexBuild is how far a CREATE INDEX has got
// (pg_stat_progress_create_index).
type IndexBuild struct {
	Phase                   string
	TuplesDone, TuplesTotal int64
	BlocksDone, BlocksTotal int64
}

const indexBuildSQL = `
SELECT phase, tuples_done, tuples_total, blocks_done, blocks_total
FROM pg_stat_progress_create_index WHERE pid = $1`

// IndexBuildProgress returns how far the index build of the backend pid
// has got, and false when it builds none.
func IndexBuildProgress(ctx context.Context, db pg.DBTX, pid uint32) (IndexBuild, bool, error) {
	var b IndexBuild
	err := db.QueryRow(ctx, indexBuildSQL, int64(pid)).Scan(&b.Phase, &b.TuplesDone, &b.TuplesTotal, &b.BlocksDone, &b.BlocksTotal)
	if errors.Is(err, pgx.ErrNoRows) {
		return b, false, nil
	}
	if err != nil {
		return b, false, fmt.Errorf("read index build progress: %w", err)
	}
	return b, true, nil
}

// TypeDocs returns a tenant's live records by type as the statistics job
// last counted them (migration 023); none before its first count.
func TypeDocs(ctx context.Context, db pg.DBTX, tenant string) (map[string]int64, error) {
	out := map[string]int64{}
	err := db.QueryRow(ctx, `SELECT type_docs FROM corpus_stats WHERE tenant_id = $1`, tenant).Scan(&out)
	if errors.Is(err, pgx.ErrNoRows) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read tenant size: %w", err)
	}
	return out, nil
}
