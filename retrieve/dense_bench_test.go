package retrieve_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/embedding"
	"github.com/engram-dev/engram/internal/openaitest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/store"
)

// BenchmarkDenseRecall measures dense vector search on the HNSW index
// against exact ranking, over one tenant of ENGRAM_BENCH_DENSE_RECORDS
// records (20,000 by default) of all five types, as BenchmarkRetrieve
// seeds them, embedded through the real backfill by an OpenAI-compatible
// model of ENGRAM_BENCH_DENSE_DIMS dimensions (384 by default; above 2,000
// the index is over halfvec) served by a local server speaking the real
// wire format, whose vectors are a random projection of each text's words
// (openaitest.BagOfWords). Each operation is a random task retrieved
// twice, through the index (dense_index.min_records 1: every layer walks
// it, at the default ef_search) and exactly (no layer does), then each
// layer's vector half alone (no text), both ways. It reports:
// "recall@10", each layer's top ten of the retrieval through the index
// against the exact one's; "vector-recall@10", the same of the vector
// half alone (the ten nearest records); "p50-ms" and "p99-ms", the
// retrieval through the index, and "exact-p50-ms" and "exact-p99-ms", the
// exact one, the floor; "vector-p50-ms" and "exact-vector-p50-ms", the
// vector halves alone; and "index-build-s", the time to build the index
// when this run built it.
//
//	ENGRAM_BENCH_KEEP=1 go test -run='^$' -bench=DenseRecall -benchtime=300x -timeout=60m ./retrieve/
func BenchmarkDenseRecall(b *testing.B) {
	ctx := context.Background()
	n := benchEnvInt(b, "ENGRAM_BENCH_DENSE_RECORDS", 20_000)
	dims := benchEnvInt(b, "ENGRAM_BENCH_DENSE_DIMS", 384)
	srv := openaitest.NewEmbeddingServer(b, openaitest.BagOfWords(dims))
	emb, err := embedding.NewOpenAI(embedding.OpenAIConfig{BaseURL: srv.URL, Model: "bench-embed", Dims: dims, BatchSize: 250})
	require.NoError(b, err)
	set := benchSet{schema: fmt.Sprintf("bench_retrieve_dense_%d_%d", n, dims), records: n, tenants: 1, embedder: emb}
	pool := benchDB(b, set)

	// The build's graph fits in memory (about 1.2 × dims × 4 bytes a
	// vector, with a margin), as docs/retrieval.md advises for a large
	// build: 1 GB up to about 200,000 vectors of 384 dimensions, 2.5 GB
	// for a million.
	cfg := pool.Config()
	cfg.ConnConfig.RuntimeParams["maintenance_work_mem"] = fmt.Sprintf("%dMB", max(1024, n*dims*4*13/10>>20+256))
	buildPool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(b, err)
	defer buildPool.Close()
	ix, ok := embedding.DenseIndexOf(emb)
	require.True(b, ok, "%d dimensions have no index", dims)
	parts, err := store.DenseIndexParts(ctx, pool, ix)
	require.NoError(b, err)
	built := false
	for _, p := range parts {
		built = built || !p.Valid
	}
	start := time.Now()
	require.NoError(b, embedding.EnsureIndex(ctx, buildPool, emb, nil))
	if built {
		took := time.Since(start)
		say("built the HNSW index of %d vectors of %d dimensions (%s)", n, dims, took.Round(time.Second))
		b.ReportMetric(took.Seconds(), "index-build-s")
	}

	approxCfg := retrieve.DefaultConfig()
	approxCfg.DenseIndex.MinRecords = 1
	approxCfg.Items = 50
	for _, l := range retrieve.Layers {
		approxCfg.Layers[l] = 10
	}
	exactCfg := approxCfg
	exactCfg.DenseIndex.MinRecords = math.MaxInt
	approx := newBenchRetriever(b, pool, approxCfg, emb)
	exact := newBenchRetriever(b, pool, exactCfg, emb)

	rng := rand.New(rand.NewPCG(11, 12))
	tokens := retrieve.MaxTokens
	for range 50 { // warm both paths' caches
		tenant, req := benchTask(rng, 1)
		req.Budget.Tokens = &tokens
		_, err := approx.Retrieve(ctx, tenant, req)
		require.NoError(b, err)
		_, err = exact.Retrieve(ctx, tenant, req)
		require.NoError(b, err)
	}
	var took, exactTook, vecTook, exactVecTook []time.Duration
	var found, want, vfound, vwant float64
	b.ResetTimer()
	for b.Loop() {
		tenant, req := benchTask(rng, 1)
		req.Budget.Tokens = &tokens
		t := time.Now()
		a, err := approx.Retrieve(ctx, tenant, req)
		took = append(took, time.Since(t))
		require.NoError(b, err)
		t = time.Now()
		e, err := exact.Retrieve(ctx, tenant, req)
		exactTook = append(exactTook, time.Since(t))
		require.NoError(b, err)
		require.False(b, a.LexicalOnly || e.LexicalOnly, "notes: %v %v", a.Notes, e.Notes)
		f, w := overlap(a, e)
		found, want = found+f, want+w

		// The vector halves alone: the ten nearest of each layer.
		aq, eq := vectorOnly(approx.Searches(ctx, tenant, req)), vectorOnly(exact.Searches(ctx, tenant, req))
		t = time.Now()
		ar, err := store.Search(ctx, pool, tenant, aq)
		vecTook = append(vecTook, time.Since(t))
		require.NoError(b, err)
		t = time.Now()
		er, err := store.Search(ctx, pool, tenant, eq)
		exactVecTook = append(exactVecTook, time.Since(t))
		require.NoError(b, err)
		for i := range er {
			truth := map[uuid.UUID]bool{}
			for _, h := range er[i].Hits {
				truth[h.Record.ID] = true
			}
			for _, h := range ar[i].Hits {
				if truth[h.Record.ID] {
					vfound++
				}
			}
			vwant += float64(len(truth))
		}
	}
	b.StopTimer()
	b.ReportMetric(found/want, "recall@10")
	b.ReportMetric(vfound/vwant, "vector-recall@10")
	reportMs(b, percentile(took, 0.5), "p50-ms")
	reportMs(b, percentile(took, 0.99), "p99-ms")
	reportMs(b, percentile(exactTook, 0.5), "exact-p50-ms")
	reportMs(b, percentile(exactTook, 0.99), "exact-p99-ms")
	reportMs(b, percentile(vecTook, 0.5), "vector-p50-ms")
	reportMs(b, percentile(exactVecTook, 0.5), "exact-vector-p50-ms")
	b.ReportMetric(float64(n), "records")
	b.ReportMetric(float64(dims), "dims")
}

func newBenchRetriever(b *testing.B, pool *pgxpool.Pool, cfg retrieve.Config, emb embedding.Embedder) *retrieve.Retriever {
	settings, err := retrieve.NewSettings(cfg)
	require.NoError(b, err)
	return retrieve.New(pool, settings, retrieve.WithEmbedder(emb))
}

// overlap counts, over the layers, the items of a found in e, and e's
// items.
func overlap(a, e retrieve.Result) (found, want float64) {
	for i, l := range e.Layers {
		truth := map[uuid.UUID]bool{}
		for _, it := range l.Items {
			truth[it.Record.ID] = true
		}
		for _, it := range a.Layers[i].Items {
			if truth[it.Record.ID] {
				found++
			}
		}
		want += float64(len(truth))
	}
	return found, want
}

// vectorOnly is the searches of the layers with a vector, without text,
// for their ten nearest records.
func vectorOnly(qs []store.SearchQuery) []store.SearchQuery {
	var out []store.SearchQuery
	for _, q := range qs {
		if q.Type != memory.Working && q.Dense != nil {
			q.Text, q.Limit = "", 10
			out = append(out, q)
		}
	}
	return out
}
