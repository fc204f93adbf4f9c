package retrieve_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/embedding"
	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/migrations"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/store"
)

// benchTenants share the benchmark's records.
const benchTenants = 100

// benchWords is a text of $n words from a vocabulary of 5,000 with a
// Zipf-like skew (word k about as often as k^-⅔), as natural text has: a
// few words everywhere, most rare. g keeps the subquery correlated, so
// that each row gets its own text.
const benchWords = `(SELECT string_agg('w' || floor(5000 * power(random(), 3))::int, ' ') FROM generate_series(1, %d + 0 * g))`

// benchSeedSQL inserts records $1 to $2 across the benchmark's tenants
// (each run of 20 consecutive records, one of every type in proportion,
// goes to one tenant), in one statement: 40% episodic, 30% semantic, 15%
// competence, 10% plans, 5% working memory, with texts from the skewed
// vocabulary, procedures under an os condition, 5% of records high.
var benchSeedSQL = `
INSERT INTO records (tenant_id, id, type, status, version, sensitivity, confidence, salience, scope, tags,
	decay_curve, decay_half_life_seconds, last_reinforced_at, provenance, payload, created_at, updated_at, decay_inherited)
SELECT 'bench-' || lpad((g / 20 % 100)::text, 2, '0'), ('01900000-0000-7000-8000-' || lpad(to_hex(g), 12, '0'))::uuid,
	t.type, 'active', 1, CASE WHEN g % 20 = 3 THEN 'high' ELSE 'low' END, 0.3 + (g % 7) / 10.0, 0.4 + (g % 6) / 10.0, '', '{}',
	'exponential', 2592000, now() - (g % 4320) * interval '1 minute',
	'{"sources": [{"kind": "event", "ref": "evt://seed"}]}',
	CASE t.type
		WHEN 'episodic' THEN jsonb_build_object('kind', 'episodic', 'outcome', 'success', 'timeline', jsonb_build_array(
			jsonb_build_object('t', now(), 'event_kind', 'error', 'ref', 'evt://' || g, 'summary', ` + fmt.Sprintf(benchWords, 8) + `),
			jsonb_build_object('t', now(), 'event_kind', 'tool_call', 'ref', 'evt://' || g, 'summary', ` + fmt.Sprintf(benchWords, 8) + `)))
		WHEN 'semantic' THEN jsonb_build_object('kind', 'semantic', 'subject', 'subject-' || g, 'predicate', 'relates_to',
			'object', ` + fmt.Sprintf(benchWords, 6) + `, 'validity', jsonb_build_object('mode', 'global'))
		WHEN 'competence' THEN jsonb_build_object('kind', 'competence', 'skill_name', 'skill-' || g,
			'triggers', jsonb_build_array(jsonb_build_object('signal', ` + fmt.Sprintf(benchWords, 8) + `,
				'conditions', jsonb_build_object('os', (ARRAY['linux', 'darwin', 'windows'])[1 + g % 3]))),
			'recipe', jsonb_build_array(jsonb_build_object('step', ` + fmt.Sprintf(benchWords, 5) + `)),
			'performance', jsonb_build_object('successes', g % 13, 'failures', g % 5))
		WHEN 'plan_graph' THEN jsonb_build_object('kind', 'plan_graph', 'plan_id', 'plan-' || g, 'version', '1',
			'intent', 'intent_' || (g % 50), 'nodes', jsonb_build_array(jsonb_build_object('id', 'a', 'op', ` + fmt.Sprintf(benchWords, 3) + `)), 'edges', '[]'::jsonb)
		ELSE jsonb_build_object('kind', 'working', 'thread_id', 'thread-' || g, 'state', 'executing',
			'context_summary', ` + fmt.Sprintf(benchWords, 10) + `)
	END,
	now() - interval '10 days', now() - interval '10 days', true
FROM generate_series($1::int, $2::int) AS g,
LATERAL (SELECT CASE WHEN g % 20 < 8 THEN 'episodic' WHEN g % 20 < 14 THEN 'semantic' WHEN g % 20 < 17 THEN 'competence'
	WHEN g % 20 < 19 THEN 'plan_graph' ELSE 'working' END AS type) AS t`

// benchSchema is where the benchmark keeps its seeded records between
// runs when ENGRAM_BENCH_KEEP=1: seeding a million records with their
// vectors takes minutes.
const benchSchema = "bench_retrieve"

// benchDB returns a pool on a schema seeded with n records: the kept one
// if it holds them, else a new one.
func benchDB(b *testing.B, n int) *pgxpool.Pool {
	b.Helper()
	ctx := context.Background()
	if os.Getenv("ENGRAM_BENCH_KEEP") != "1" {
		db := pgtest.NewSchema(b)
		seedRecords(b, db.Pool, n)
		indexBench(b, db.Pool)
		return db.Pool
	}
	admin, err := pgx.Connect(ctx, pgtest.URL())
	require.NoError(b, err)
	defer admin.Close(ctx)
	var seeded int
	var indexed bool
	err = admin.QueryRow(ctx, `SELECT count(*), to_regclass('`+benchSchema+`.record_vectors_sparse') IS NOT NULL FROM `+benchSchema+`.records`).Scan(&seeded, &indexed)
	if err != nil || seeded != n {
		_, err = admin.Exec(ctx, `DROP SCHEMA IF EXISTS `+benchSchema+` CASCADE; CREATE SCHEMA `+benchSchema)
		require.NoError(b, err)
		cfg, err := pgx.ParseConfig(pgtest.URL())
		require.NoError(b, err)
		cfg.RuntimeParams["search_path"] = benchSchema + ",public"
		sqlDB := stdlib.OpenDB(*cfg)
		_, err = migrations.Up(ctx, sqlDB, nil)
		require.NoError(b, closeDB(err, sqlDB))
		indexed = false
	}
	pool, err := pg.NewPool(ctx, pgtest.WithSearchPath(pgtest.URL(), benchSchema), nil)
	require.NoError(b, err)
	b.Cleanup(pool.Close)
	if seeded != n {
		seedRecords(b, pool, n)
	}
	if !indexed {
		// The vector index is made last: without it, indexing stopped
		// part-way, and resumes here.
		indexBench(b, pool)
	}
	return pool
}

// closeDB closes db and returns err, or the close's error.
func closeDB(err error, db *sql.DB) error {
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}

// seedRecords seeds n records across the benchmark's tenants.
func seedRecords(b *testing.B, pool *pgxpool.Pool, n int) {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	for i := range benchTenants {
		_, err := pool.Exec(ctx, "INSERT INTO tenants (id) VALUES ($1) ON CONFLICT DO NOTHING", fmt.Sprintf("bench-%02d", i))
		require.NoError(b, err)
	}
	for from := 1; from <= n; from += 50_000 {
		_, err := pool.Exec(ctx, benchSeedSQL, from, min(from+50_000-1, n))
		require.NoError(b, err)
	}
	b.Logf("seeded %d records in %s", n, time.Since(start).Round(time.Second))
}

// indexBench embeds the records with the built-in embedder (the real
// backfill, resuming where it stopped), builds the vector index and the
// BM25 statistics.
func indexBench(b *testing.B, pool *pgxpool.Pool) {
	b.Helper()
	ctx := context.Background()
	// The HNSW index is built once after the backfill rather than grown a
	// vector at a time: the same index, an order of magnitude sooner.
	_, err := pool.Exec(ctx, "DROP INDEX IF EXISTS record_vectors_sparse")
	require.NoError(b, err)
	t := time.Now()
	p := &progress{}
	require.NoError(b, embedding.NewBackfiller(pool, embedding.NewLexical(), 2000, nil).Backfill(ctx, p))
	b.Logf("embedded %d records in %s", p.counts["embedded"], time.Since(t).Round(time.Second))
	t = time.Now()
	_, err = pool.Exec(ctx, `SET maintenance_work_mem = '4GB'; SET max_parallel_maintenance_workers = 2;
		CREATE INDEX record_vectors_sparse ON record_vectors USING hnsw (sparse sparsevec_cosine_ops) WHERE sparse IS NOT NULL`)
	require.NoError(b, err)
	b.Logf("built the HNSW index in %s", time.Since(t).Round(time.Second))
	t = time.Now()
	settings, err := retrieve.NewSettings(retrieve.DefaultConfig())
	require.NoError(b, err)
	require.NoError(b, retrieve.New(pool, settings).RefreshStats(ctx, &progress{}))
	for _, table := range []string{"records", "record_vectors", "lexeme_stats"} {
		_, err = pool.Exec(ctx, "VACUUM ANALYZE "+table)
		require.NoError(b, err)
	}
	b.Logf("BM25 statistics and ANALYZE in %s", time.Since(t).Round(time.Second))
}

// benchRecords is ENGRAM_BENCH_RECORDS, a million by default.
func benchRecords(b *testing.B) int {
	if v := os.Getenv("ENGRAM_BENCH_RECORDS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err)
		return n
	}
	return 1_000_000
}

// benchTask is a task as an agent would send it: a few words of text, often
// an error signal, sometimes an os and an intent.
func benchTask(rng *rand.Rand) (string, retrieve.Request) {
	word := func() string { return fmt.Sprintf("w%d", int(5000*pow3(rng.Float64()))) }
	var text string
	for i := range 6 {
		if i > 0 {
			text += " "
		}
		text += word()
	}
	t := retrieve.Task{Text: text}
	if rng.IntN(2) == 0 {
		t.Signals = []string{word() + " " + word() + " " + word() + " " + word()}
	}
	if rng.IntN(3) == 0 {
		t.Conditions = map[string]any{"os": []string{"linux", "darwin", "windows"}[rng.IntN(3)]}
	}
	if rng.IntN(4) == 0 {
		t.Intent = fmt.Sprintf("intent_%d", rng.IntN(50))
	}
	return fmt.Sprintf("bench-%02d", rng.IntN(benchTenants)), retrieve.Request{Task: t, Trust: retrieve.Trust{Clearance: memory.Medium}}
}

func pow3(x float64) float64 { return x * x * x }

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// BenchmarkRetrieve measures retrieval over ENGRAM_BENCH_RECORDS records (a
// million by default) of all five types across 100 tenants, embedded by the
// built-in embedder: each operation is one layered, hybrid, trust-gated
// retrieval of a random tenant, logged. It reports p50 and p99 latency,
// and "sql-p50-ms", the same searches and log insert issued bare (the
// store's batch, no embedding, ranking or gating): the retrieval's cost
// over the SQL it issues.
//
//	ENGRAM_BENCH_KEEP=1 go test -run='^$' -bench=Retrieve -benchtime=500x -timeout=60m ./retrieve/
func BenchmarkRetrieve(b *testing.B) {
	pool := benchDB(b, benchRecords(b))
	settings, err := retrieve.NewSettings(retrieve.DefaultConfig())
	require.NoError(b, err)
	lex := embedding.NewLexical()
	r := retrieve.New(pool, settings, retrieve.WithEmbedder(lex))
	ctx := context.Background()

	rng := rand.New(rand.NewPCG(1, 2))
	// Warm the caches as a running daemon's would be.
	for range 200 {
		tenant, req := benchTask(rng)
		_, err := r.Retrieve(ctx, tenant, req)
		require.NoError(b, err)
	}
	var took []time.Duration
	var items, lexicalOnly int
	b.ResetTimer()
	for b.Loop() {
		tenant, req := benchTask(rng)
		t := time.Now()
		res, err := r.Retrieve(ctx, tenant, req)
		took = append(took, time.Since(t))
		if err != nil {
			b.Fatal(err)
		}
		items += res.Budget.Items
		if res.LexicalOnly {
			lexicalOnly++
		}
	}
	b.StopTimer()

	// The bare SQL of as many retrievals: the store's search batch as
	// Retrieve builds it, and the log insert.
	rng = rand.New(rand.NewPCG(1, 2))
	for range 200 {
		benchTask(rng)
	}
	cfg := retrieve.DefaultConfig()
	var bare []time.Duration
	for range len(took) {
		tenant, req := benchTask(rng)
		qs := retrieve.SearchQueries(cfg, req, memory.Medium, time.Now())
		vs, err := lex.Embed(ctx, []string{retrieve.QueryText(req.Task)})
		require.NoError(b, err)
		for i := range qs {
			if qs[i].Type != memory.Working {
				qs[i].Model, qs[i].Sparse = lex.Model(), vs[0].Sparse
			}
		}
		t := time.Now()
		res, err := store.Search(ctx, pool, tenant, qs)
		require.NoError(b, err)
		var ids []uuid.UUID
		for _, l := range res {
			for _, h := range l.Hits {
				ids = append(ids, h.Record.ID)
			}
		}
		require.NoError(b, store.LogRetrieval(ctx, pool, tenant, store.Retrieval{ID: uuid.New(), At: time.Now(), RecordIDs: ids[:min(len(ids), 14)]}))
		bare = append(bare, time.Since(t))
	}
	p50, p99, sql50 := percentile(took, 0.5), percentile(took, 0.99), percentile(bare, 0.5)
	b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(sql50.Microseconds())/1000, "sql-p50-ms")
	b.ReportMetric(float64(p50)/float64(sql50), "x-sql")
	b.ReportMetric(float64(items)/float64(len(took)), "items/op")
	b.ReportMetric(float64(lexicalOnly), "lexical-only")
}

// BenchmarkRecall measures recall@10 of the hybrid ranking, per layer,
// against exact search: the same retrieval with index scans off, so that
// the vector half is a brute-force scan of every vector of the tenant and
// type instead of an approximate HNSW walk, and with every query term
// selecting candidates (common_term_share 1), so that the lexical half
// scores every record that holds any of them.
//
//	ENGRAM_BENCH_KEEP=1 go test -run='^$' -bench=Recall -benchtime=100x -timeout=60m ./retrieve/
func BenchmarkRecall(b *testing.B) {
	pool := benchDB(b, benchRecords(b))
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.WithSearchPath(pgtest.URL(), benchSchema))
	require.NoError(b, err)
	if os.Getenv("ENGRAM_BENCH_KEEP") != "1" {
		cfg = pool.Config()
	}
	cfg.ConnConfig.RuntimeParams["enable_indexscan"] = "off"
	exactPool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(b, err)
	defer exactPool.Close()

	rc := retrieve.DefaultConfig()
	rc.Items = 50
	for _, l := range retrieve.Layers {
		rc.Layers[l] = 10
	}
	settings, err := retrieve.NewSettings(rc)
	require.NoError(b, err)
	// Exact: every term selects candidates, and every vector is compared.
	rc.CommonTermShare = 1
	exactSettings, err := retrieve.NewSettings(rc)
	require.NoError(b, err)
	lex := embedding.NewLexical()
	approx := retrieve.New(pool, settings, retrieve.WithEmbedder(lex))
	exact := retrieve.New(exactPool, exactSettings, retrieve.WithEmbedder(lex))
	rng := rand.New(rand.NewPCG(3, 4))
	tokens := retrieve.MaxTokens
	var found, want float64
	for b.Loop() {
		tenant, req := benchTask(rng)
		req.Budget.Tokens = &tokens
		a, err := approx.Retrieve(ctx, tenant, req)
		require.NoError(b, err)
		e, err := exact.Retrieve(ctx, tenant, req)
		require.NoError(b, err)
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
	}
	b.ReportMetric(found/want, "recall@10")
}
