package retrieve_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/embedding"
	"github.com/engram-dev/engram/internal/openaitest"
	"github.com/engram-dev/engram/jobs/jobstest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

// denseBundle is a schema whose records are embedded by an
// OpenAI-compatible model served by a local server speaking the real wire
// format, with vectors of a random projection of each text's words
// (openaitest.BagOfWords).
type denseBundle struct {
	*bundle
	embedder *embedding.OpenAI
}

// setupDense starts the embeddings server and a retriever over its model
// (name, dims), whose searches walk the HNSW index for tenants of at least
// minRecords records of a type.
func setupDense(t *testing.T, name string, dims, minRecords int) *denseBundle {
	t.Helper()
	b := setup(t)
	return &denseBundle{bundle: b, embedder: b.useDense(t, name, dims, minRecords)}
}

// useDense makes the bundle's retriever and backfill use a dense model.
func (b *bundle) useDense(t *testing.T, name string, dims, minRecords int) *embedding.OpenAI {
	t.Helper()
	srv := openaitest.NewEmbeddingServer(t, openaitest.BagOfWords(dims))
	emb, err := embedding.NewOpenAI(embedding.OpenAIConfig{BaseURL: srv.URL, Model: name, Dims: dims})
	require.NoError(t, err)
	cfg := retrieve.DefaultConfig()
	cfg.DenseIndex.MinRecords = minRecords
	settings, err := retrieve.NewSettings(cfg)
	require.NoError(t, err)
	b.retriever = retrieve.New(b.db.Pool, settings, retrieve.WithEmbedder(emb))
	b.backfill = embedding.NewBackfiller(b.db.Pool, emb, 100, nil)
	return emb
}

// denseWords is a text of n words from a vocabulary of 300, skewed as
// natural text is.
func denseWords(rng *rand.Rand, n int) string {
	words := make([]string, n)
	for i := range words {
		x := rng.Float64()
		words[i] = fmt.Sprintf("w%d", int(300*x*x))
	}
	return strings.Join(words, " ")
}

// seedFacts writes n facts of random texts for tenant through the write
// path.
func (b *bundle) seedFacts(t *testing.T, tenant string, n int, rng *rand.Rand) {
	t.Helper()
	recs := make([]memory.Record, n)
	for i := range recs {
		recs[i] = fact(fmt.Sprintf("%s-subject-%d", tenant, i), "relates_to", denseWords(rng, 8), nil)
	}
	err := b.w.InTx(b.ctx, func(ctx context.Context, tx *revise.Tx) error {
		_, err := tx.CreateMany(ctx, tenant, recs, b.ch)
		return err
	})
	require.NoError(t, err)
}

// semanticQuery is the semantic layer's search Retrieve issues for text in
// tenant.
func (b *bundle) semanticQuery(t *testing.T, tenant, text string) store.SearchQuery {
	t.Helper()
	for _, q := range b.retriever.Searches(b.ctx, tenant, retrieve.Request{Task: retrieve.Task{Text: text}}) {
		if q.Type == memory.Semantic {
			require.NotNil(t, q.Dense, "the task has a dense vector")
			return q
		}
	}
	t.Fatal("no semantic search")
	return store.SearchQuery{}
}

// denseIndexNames are the names of the index of the model on each
// partition.
func (b *bundle) denseIndexNames(t *testing.T, ix store.DenseIndex) []string {
	t.Helper()
	parts, err := store.DenseIndexParts(b.ctx, b.db.Pool, ix)
	require.NoError(t, err)
	var names []string
	for _, p := range parts {
		require.True(t, p.Valid, "index %s is built and valid", p.Index)
		names = append(names, p.Index)
	}
	return names
}

// usesIndex reports whether a plan reads one of the named indexes.
func usesIndex(plan string, names []string) bool {
	for _, n := range names {
		if strings.Contains(plan, "Index Scan using "+n+" ") {
			return true
		}
	}
	return false
}

// vectorTop10 is the ids of the ten nearest records a vector-only search
// (no text) finds.
func vectorTop10(t *testing.T, b *bundle, tenant string, q store.SearchQuery) []uuid.UUID {
	t.Helper()
	q.Text, q.Limit = "", 10
	res, err := store.Search(b.ctx, b.db.Pool, tenant, []store.SearchQuery{q})
	require.NoError(t, err)
	return ids(res[0].Hits)
}

func ids(hits []store.Hit) []uuid.UUID {
	out := make([]uuid.UUID, len(hits))
	for i, h := range hits {
		out[i] = h.Record.ID
	}
	return out
}

func noVectorTrouble(t *testing.T, res retrieve.Result) {
	t.Helper()
	require.False(t, res.LexicalOnly, "notes: %v", res.Notes)
	for _, n := range res.Notes {
		require.NotContains(t, n, "unavailable", "the vector search failed and retrieval fell back")
	}
}

// A tenant above dense_index.min_records searches its dense vectors on the
// HNSW index (the plan PostgreSQL runs reads it), and finds what exact
// ranking finds; a small tenant of the same database ranks exactly.
func TestDenseSearchWalksHNSWForLargeTenants(t *testing.T) {
	t.Parallel()
	b := setupDense(t, "nomic-embed-text", 64, 200)
	rng := rand.New(rand.NewPCG(13, 1))
	b.seedFacts(t, "acme", 400, rng)
	b.seedFacts(t, "globex", 30, rng)
	b.index(t)
	require.NoError(t, embedding.EnsureIndex(b.ctx, b.db.Pool, b.embedder, nil))
	ix, ok := embedding.DenseIndexOf(b.embedder)
	require.True(t, ok)
	require.False(t, ix.Half())
	names := b.denseIndexNames(t, ix)

	large := b.semanticQuery(t, "acme", "w1 w7 w30")
	require.NotNil(t, large.DenseScan, "400 facts, min_records 200: the index")
	plans, err := store.ExplainSearch(b.ctx, b.db.Pool, "acme", large)
	require.NoError(t, err)
	require.Len(t, plans, 2, "the walk, then the search")
	require.True(t, usesIndex(plans[0], names), "the walk reads the HNSW index:\n%s", plans[0])
	require.Contains(t, plans[0], "vector(64)")

	small := b.semanticQuery(t, "globex", "w1 w7 w30")
	require.Nil(t, small.DenseScan, "30 facts: exact")
	plans, err = store.ExplainSearch(b.ctx, b.db.Pool, "globex", small)
	require.NoError(t, err)
	require.Len(t, plans, 1)
	require.False(t, usesIndex(plans[0], names), "exact ranking reads no HNSW index:\n%s", plans[0])

	// The index's top ten against exact ranking's, on tasks of a fixed
	// seed; and the answers Retrieve gives.
	exact := &bundle{ctx: b.ctx, db: b.db}
	exact.useDense(t, "nomic-embed-text", 64, 1_000_000)
	var found, want float64
	for range 20 {
		text := denseWords(rng, 4)
		q := b.semanticQuery(t, "acme", text)
		require.NotNil(t, q.DenseScan)
		e := exact.semanticQuery(t, "acme", text)
		require.Nil(t, e.DenseScan)
		truth := map[uuid.UUID]bool{}
		for _, id := range vectorTop10(t, b.bundle, "acme", e) {
			truth[id] = true
		}
		require.Len(t, truth, 10)
		for _, id := range vectorTop10(t, b.bundle, "acme", q) {
			if truth[id] {
				found++
			}
		}
		want += 10

		req := retrieve.Request{Task: retrieve.Task{Text: text}}
		got, err := b.retriever.Retrieve(b.ctx, "acme", req)
		require.NoError(t, err)
		noVectorTrouble(t, got)
		ref, err := exact.retriever.Retrieve(b.ctx, "acme", req)
		require.NoError(t, err)
		require.Equal(t, itemIDs(ref.Layers[0].Items), itemIDs(got.Layers[0].Items), "task %q", text)
	}
	require.GreaterOrEqual(t, found/want, 0.95, "recall@10 of the index against exact ranking")

	// Inside a caller's transaction the walk runs in a savepoint, and its
	// settings end with it.
	tx, err := b.db.Pool.Begin(b.ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(b.ctx) }()
	large.Text, large.Limit = "", 10
	inTx, err := store.Search(b.ctx, tx, "acme", []store.SearchQuery{large})
	require.NoError(t, err)
	require.Equal(t, vectorTop10(t, b.bundle, "acme", large), ids(inTx[0].Hits))
	var sort, ef string
	require.NoError(t, tx.QueryRow(b.ctx, `SELECT current_setting('enable_sort'), current_setting('hnsw.ef_search')`).Scan(&sort, &ef))
	require.Equal(t, "on", sort)
	require.Equal(t, "40", ef, "pgvector's default")
}

func itemIDs(items []retrieve.Item) []uuid.UUID {
	out := make([]uuid.UUID, len(items))
	for i, it := range items {
		out[i] = it.Record.ID
	}
	return out
}

// Above 2,000 dimensions the index is over halfvec, which HNSW indexes up
// to 4,000, and the search walks it.
func TestDenseIndexAboveTwoThousandDimsIsHalfvec(t *testing.T) {
	t.Parallel()
	b := setupDense(t, "text-embedding-3-large", 3072, 20)
	b.seedFacts(t, "acme", 40, rand.New(rand.NewPCG(7, 7)))
	b.index(t)
	require.NoError(t, embedding.EnsureIndex(b.ctx, b.db.Pool, b.embedder, nil))
	ix, ok := embedding.DenseIndexOf(b.embedder)
	require.True(t, ok)
	require.True(t, ix.Half())
	names := b.denseIndexNames(t, ix)
	require.Len(t, names, 64, "one per searched type on each partition of record_vectors")
	var def string
	err := b.db.Pool.QueryRow(b.ctx, `SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname = $1`, names[0]).Scan(&def)
	require.NoError(t, err)
	require.Contains(t, def, "USING hnsw (((dense)::halfvec(3072)) halfvec_cosine_ops)")
	require.Contains(t, def, "WHERE ((model = 'openai:text-embedding-3-large:3072'::text) AND (type = ")

	q := b.semanticQuery(t, "acme", "w1 w2 w3")
	require.NotNil(t, q.DenseScan)
	plans, err := store.ExplainSearch(b.ctx, b.db.Pool, "acme", q)
	require.NoError(t, err)
	require.True(t, usesIndex(plans[0], names), "the walk reads the halfvec index:\n%s", plans[0])
	res := b.retrieve(t, retrieve.Request{Task: retrieve.Task{Text: "w1 w2 w3"}})
	noVectorTrouble(t, res)
	require.NotEmpty(t, res.Layers[0].Items)
	require.NotNil(t, res.Layers[0].Items[0].Why.Vector, "found by vector similarity too")

	// Building again finds it made.
	require.NoError(t, embedding.EnsureIndex(b.ctx, b.db.Pool, b.embedder, nil))
	require.Equal(t, names, b.denseIndexNames(t, ix))
}

// A model change never breaks search: before its vectors exist the answer
// is lexical without error; the new model gets its own index and the old
// model's indexes go; after the backfill the new vectors are searched on
// the new index.
func TestDenseModelChangeKeepsSearchWorking(t *testing.T) {
	t.Parallel()
	b := setupDense(t, "text-embedding-3-small", 32, 20)
	b.seedFacts(t, "acme", 60, rand.New(rand.NewPCG(9, 9)))
	b.index(t)
	require.NoError(t, embedding.EnsureIndex(b.ctx, b.db.Pool, b.embedder, nil))
	oldIx, _ := embedding.DenseIndexOf(b.embedder)
	oldNames := b.denseIndexNames(t, oldIx)
	task := retrieve.Request{Task: retrieve.Task{Text: "w1 w2 w3"}}
	noVectorTrouble(t, b.retrieve(t, task))

	newEmb := b.useDense(t, "nomic-embed-text", 48, 20)
	// The new model's vectors do not exist yet, nor its index.
	res := b.retrieve(t, task)
	noVectorTrouble(t, res)
	for _, it := range res.Layers[0].Items {
		require.Nil(t, it.Why.Vector, "no vector of the new model yet")
	}

	require.NoError(t, embedding.EnsureIndex(b.ctx, b.db.Pool, newEmb, nil))
	newIx, _ := embedding.DenseIndexOf(newEmb)
	newNames := b.denseIndexNames(t, newIx)
	var left int
	err := b.db.Pool.QueryRow(b.ctx, `SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = ANY ($1)`, oldNames).Scan(&left)
	require.NoError(t, err)
	require.Zero(t, left, "the old model's indexes are dropped")

	require.NoError(t, b.backfill.Backfill(b.ctx, &jobstest.Run{}))
	res = b.retrieve(t, task)
	noVectorTrouble(t, res)
	require.NotEmpty(t, res.Layers[0].Items)
	require.NotNil(t, res.Layers[0].Items[0].Why.Vector, "the new model's vectors are searched")
	q := b.semanticQuery(t, "acme", "w1 w2 w3")
	require.NotNil(t, q.DenseScan)
	plans, err := store.ExplainSearch(b.ctx, b.db.Pool, "acme", q)
	require.NoError(t, err)
	require.True(t, usesIndex(plans[0], newNames), "the walk reads the new model's index:\n%s", plans[0])
}

// The configuration's dense_index fields are checked and named.
func TestDenseIndexConfigIsValidated(t *testing.T) {
	t.Parallel()
	for field, set := range map[string]func(*retrieve.Config){
		"dense_index.min_records":     func(c *retrieve.Config) { c.DenseIndex.MinRecords = 0 },
		"dense_index.ef_search":       func(c *retrieve.Config) { c.DenseIndex.EfSearch = 1001 },
		"dense_index.max_scan_tuples": func(c *retrieve.Config) { c.DenseIndex.MaxScanTuples = 0 },
	} {
		c := retrieve.DefaultConfig()
		set(&c)
		var ce *retrieve.ConfigError
		require.ErrorAs(t, c.Validate(), &ce)
		require.Equal(t, field, ce.Field)
	}
}
