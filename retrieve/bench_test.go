package retrieve_test

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
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
	"github.com/engram-dev/engram/jobs/jobstest"
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

// benchSeedSQL inserts records $1 to $2 across $3 tenants (each run of 20
// consecutive records, one of every type in proportion, goes to one
// tenant), in one statement: 40% episodic, 30% semantic, 15% competence,
// 10% plans, 5% working memory, with texts from the skewed vocabulary,
// procedures under an os condition, 5% of records high.
var benchSeedSQL = `
INSERT INTO records (tenant_id, id, type, status, version, sensitivity, confidence, salience, scope, tags,
	decay_curve, decay_half_life_seconds, last_reinforced_at, provenance, payload, created_at, updated_at, decay_inherited)
SELECT 'bench-' || lpad((g / 20 % $3)::text, 2, '0'), ('01900000-0000-7000-8000-' || lpad(to_hex(g), 12, '0'))::uuid,
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

// benchFTSSQL is the plain-PostgreSQL floor: what a user who rolled their
// own full-text search over the same records would run, on a tsvector
// column and a GIN index the seeding adds to the benchmark's schema only
// (ftsFloor): any of the task's words (OR, as retrieval matches), ranked
// by ts_rank_cd, the top 50 of every type at once, within tenant, live
// records and clearance.
const benchFTSSQL = `
SELECT id
FROM records, (SELECT replace(plainto_tsquery('english', $2)::text, ' & ', ' | ')::tsquery AS q) AS query
WHERE tenant_id = $1 AND fts @@ q AND status IN ('active', 'contested') AND sensitivity_rank <= $3
ORDER BY ts_rank_cd(fts, q) DESC
LIMIT 50`

// benchSet is a seeded set of records the benchmarks share: its schema,
// how many records and across how many tenants.
type benchSet struct {
	schema  string
	records int
	tenants int
	// embedder embeds the records; nil is the built-in embedder.
	embedder embedding.Embedder
}

// benchDB returns a pool on a schema seeded with the set's records: the
// kept one if it holds them (migrated to the branch's latest), else a new
// one. ENGRAM_BENCH_KEEP=1 keeps it for the next run: seeding a million
// records with their vectors takes minutes.
func benchDB(b *testing.B, set benchSet) *pgxpool.Pool {
	b.Helper()
	ctx := context.Background()
	if os.Getenv("ENGRAM_BENCH_KEEP") != "1" {
		db := pgtest.NewSchema(b)
		seedRecords(b, db.Pool, set)
		ftsFloor(b, db.Pool)
		indexBench(b, db.Pool, set)
		return db.Pool
	}
	admin, err := pgx.Connect(ctx, pgtest.URL())
	require.NoError(b, err)
	defer admin.Close(ctx)
	var seeded int
	var indexed bool
	err = admin.QueryRow(ctx, `SELECT count(*), EXISTS (SELECT FROM `+set.schema+`.corpus_stats) FROM `+set.schema+`.records`).Scan(&seeded, &indexed)
	if err != nil || seeded != set.records {
		_, err = admin.Exec(ctx, `DROP SCHEMA IF EXISTS `+set.schema+` CASCADE; CREATE SCHEMA `+set.schema)
		require.NoError(b, err)
		indexed = false
	}
	// Migrated each time: a branch's new migration applies to the kept
	// records (goose skips what is applied).
	cfg, err := pgx.ParseConfig(pgtest.URL())
	require.NoError(b, err)
	cfg.RuntimeParams["search_path"] = set.schema + ",public"
	sqlDB := stdlib.OpenDB(*cfg)
	applied, err := migrations.Up(ctx, sqlDB, nil)
	require.NoError(b, closeDB(err, sqlDB))
	pool, err := pg.NewPool(ctx, pgtest.WithSearchPath(pgtest.URL(), set.schema), nil)
	require.NoError(b, err)
	b.Cleanup(pool.Close)
	if len(applied) > 0 && indexed {
		// A migration may have rewritten the kept tables.
		for _, table := range []string{"records", "record_vectors"} {
			_, err = pool.Exec(ctx, "VACUUM ANALYZE "+table)
			require.NoError(b, err)
		}
		say("migrated the kept records (%d migrations)", len(applied))
	}
	if seeded != set.records {
		seedRecords(b, pool, set)
	}
	ftsFloor(b, pool)
	if !indexed {
		// The statistics are made last: without them, indexing stopped
		// part-way, and resumes here.
		indexBench(b, pool, set)
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

// seedRecords seeds the set's records across its tenants, saying how far
// it got on stderr.
func seedRecords(b *testing.B, pool *pgxpool.Pool, set benchSet) {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	for i := range set.tenants {
		_, err := pool.Exec(ctx, "INSERT INTO tenants (id) VALUES ($1) ON CONFLICT DO NOTHING", fmt.Sprintf("bench-%02d", i))
		require.NoError(b, err)
	}
	const batch = 50_000
	for from := 1; from <= set.records; from += batch {
		to := min(from+batch-1, set.records)
		_, err := pool.Exec(ctx, benchSeedSQL, from, to, set.tenants)
		require.NoError(b, err)
		say("seeded %d/%d records (%s)", to, set.records, time.Since(start).Round(time.Second))
	}
}

// say writes a line of progress to stderr: seeding takes minutes at large
// sizes.
func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "retrieve: "+format+"\n", args...)
}

// benchProgress is a job run's progress that says how many records it
// embedded on stderr.
type benchProgress struct {
	jobstest.Run
	of    int
	start time.Time
	last  int64
}

func (p *benchProgress) Add(name string, n int64) {
	p.Run.Add(name, n)
	if done := p.Count("embedded"); name == "embedded" && done-p.last >= 20_000 {
		p.last = done
		say("embedded %d/%d records (%s)", done, p.of, time.Since(p.start).Round(time.Second))
	}
}

// ftsFloor adds the plain full-text floor's column and index to the
// benchmark's schema (benchFTSSQL), unless it has them.
func ftsFloor(b *testing.B, pool *pgxpool.Pool) {
	b.Helper()
	t := time.Now()
	_, err := pool.Exec(context.Background(), `
		ALTER TABLE records ADD COLUMN IF NOT EXISTS fts tsvector
			GENERATED ALWAYS AS (to_tsvector('english', engram_search_text(type, payload, tags))) STORED;
		CREATE INDEX IF NOT EXISTS records_fts ON records USING gin (tenant_id, fts)`)
	require.NoError(b, err)
	say("the full-text floor's column and index (%s)", time.Since(t).Round(time.Second))
}

// indexBench embeds the records with the built-in embedder (the real
// backfill, resuming where it stopped) and builds the BM25 statistics.
func indexBench(b *testing.B, pool *pgxpool.Pool, set benchSet) {
	b.Helper()
	ctx := context.Background()
	t := time.Now()
	p := &benchProgress{of: set.records, start: t}
	emb := set.embedder
	if emb == nil {
		emb = embedding.NewLexical()
	}
	require.NoError(b, embedding.NewBackfiller(pool, emb, 2000, nil).Backfill(ctx, p))
	say("embedded %d records (%s)", p.Count("embedded"), time.Since(t).Round(time.Second))
	t = time.Now()
	settings, err := retrieve.NewSettings(retrieve.DefaultConfig())
	require.NoError(b, err)
	require.NoError(b, retrieve.New(pool, settings).RefreshStats(ctx, &jobstest.Run{}))
	for _, table := range []string{"records", "record_vectors", "lexeme_stats", "embedding_df"} {
		_, err = pool.Exec(ctx, "VACUUM ANALYZE "+table)
		require.NoError(b, err)
	}
	say("BM25 statistics and ANALYZE (%s)", time.Since(t).Round(time.Second))
}

// benchEnvInt is an integer environment variable, or def.
func benchEnvInt(b *testing.B, name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err)
		return n
	}
	return def
}

// benchShared is the set BenchmarkRetrieve and BenchmarkRecall/exact
// share: ENGRAM_BENCH_RECORDS records (100,000 by default; the documented
// full run sets a million) across 100 tenants.
func benchShared(b *testing.B) benchSet {
	return benchSet{schema: "bench_retrieve", records: benchEnvInt(b, "ENGRAM_BENCH_RECORDS", 100_000), tenants: benchTenants}
}

// benchOneTenant is a set of n records all held by one tenant, bench-00.
func benchOneTenant(n int) benchSet {
	return benchSet{schema: fmt.Sprintf("bench_retrieve_one_%d", n), records: n, tenants: 1}
}

// benchScale is ENGRAM_BENCH_SCALE, the sizes of BenchmarkRetrieveScale.
func benchScale(b *testing.B) []int {
	v := cmp.Or(os.Getenv("ENGRAM_BENCH_SCALE"), "1000,10000,100000")
	var out []int
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		require.NoError(b, err, "ENGRAM_BENCH_SCALE")
		out = append(out, n)
	}
	return out
}

// benchTask is a task as an agent would send it: a few words of text, often
// an error signal, sometimes an os and an intent, for one of the tenants.
func benchTask(rng *rand.Rand, tenants int) (string, retrieve.Request) {
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
	return fmt.Sprintf("bench-%02d", rng.IntN(tenants)), retrieve.Request{Task: t, Trust: retrieve.Trust{Clearance: memory.Medium}}
}

func pow3(x float64) float64 { return x * x * x }

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func reportMs(b *testing.B, d time.Duration, unit string) {
	b.ReportMetric(float64(d.Microseconds())/1000, unit)
}

// timeRetrievals times a retrieval of a random task per iteration of b,
// after 200 to warm the caches as a running daemon's would be, and reports
// p50 and p99 latency.
func timeRetrievals(b *testing.B, r *retrieve.Retriever, rng *rand.Rand, tenants int) (took []time.Duration, items, lexicalOnly int) {
	ctx := context.Background()
	for range 200 {
		tenant, req := benchTask(rng, tenants)
		_, err := r.Retrieve(ctx, tenant, req)
		require.NoError(b, err)
	}
	b.ResetTimer()
	for b.Loop() {
		tenant, req := benchTask(rng, tenants)
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
	reportMs(b, percentile(took, 0.5), "p50-ms")
	reportMs(b, percentile(took, 0.99), "p99-ms")
	return took, items, lexicalOnly
}

// BenchmarkRetrieve measures retrieval over ENGRAM_BENCH_RECORDS records
// (100,000 by default; the documented full run sets a million) of all five
// types across 100 tenants, embedded by the built-in embedder: each
// operation is one layered, hybrid, trust-gated retrieval of a random
// tenant, logged. It reports p50 and p99 latency; "sql-p50-ms" and
// "sql-p99-ms", the same searches and log insert issued bare (the store's
// batch, no embedding, ranking or gating): the retrieval's cost over the
// SQL it issues; and "fts-p50-ms" and "fts-p99-ms", the plain-PostgreSQL
// floor: one full-text query of the same task texts over the same records
// (tsvector, GIN, ts_rank_cd; the top 50 of every type at once:
// benchFTSSQL).
//
//	ENGRAM_BENCH_KEEP=1 go test -run='^$' -bench='Retrieve$' -benchtime=500x -timeout=60m ./retrieve/
func BenchmarkRetrieve(b *testing.B) {
	pool := benchDB(b, benchShared(b))
	settings, err := retrieve.NewSettings(retrieve.DefaultConfig())
	require.NoError(b, err)
	lex := embedding.NewLexical()
	r := retrieve.New(pool, settings, retrieve.WithEmbedder(lex))
	ctx := context.Background()

	took, items, lexicalOnly := timeRetrievals(b, r, rand.New(rand.NewPCG(1, 2)), benchTenants)

	// The bare SQL of as many retrievals (the store's search batch as
	// Retrieve builds it, and the log insert), and the plain full-text
	// query of each, interleaved so that both meet the same conditions.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		benchTask(rng, benchTenants)
	}
	cfg := retrieve.DefaultConfig()
	var bare, fts []time.Duration
	for range len(took) {
		tenant, req := benchTask(rng, benchTenants)
		text := retrieve.QueryText(req.Task)
		qs := retrieve.SearchQueries(cfg, req, memory.Medium, time.Now())
		vs, err := lex.Embed(ctx, []string{text})
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

		t = time.Now()
		rows, err := pool.Query(ctx, benchFTSSQL, tenant, text, memory.Medium.Rank())
		require.NoError(b, err)
		_, err = pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		require.NoError(b, err)
		fts = append(fts, time.Since(t))
	}
	p50, sql50 := percentile(took, 0.5), percentile(bare, 0.5)
	reportMs(b, sql50, "sql-p50-ms")
	reportMs(b, percentile(bare, 0.99), "sql-p99-ms")
	reportMs(b, percentile(fts, 0.5), "fts-p50-ms")
	reportMs(b, percentile(fts, 0.99), "fts-p99-ms")
	b.ReportMetric(float64(p50)/float64(sql50), "x-sql")
	b.ReportMetric(float64(items)/float64(len(took)), "items/op")
	b.ReportMetric(float64(lexicalOnly), "lexical-only")
}

// BenchmarkRetrieveScale measures retrieval as one tenant grows: for each
// size of ENGRAM_BENCH_SCALE (records, comma-separated; 1,000, 10,000 and
// 100,000 by default), a tenant holding that many records, alone in its
// schema, and p50 and p99 latency of random tasks.
//
//	ENGRAM_BENCH_KEEP=1 go test -run='^$' -bench=RetrieveScale -benchtime=300x -timeout=60m ./retrieve/
func BenchmarkRetrieveScale(b *testing.B) {
	for _, n := range benchScale(b) {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			pool := benchDB(b, benchOneTenant(n))
			settings, err := retrieve.NewSettings(retrieve.DefaultConfig())
			require.NoError(b, err)
			r := retrieve.New(pool, settings, retrieve.WithEmbedder(embedding.NewLexical()))
			timeRetrievals(b, r, rand.New(rand.NewPCG(5, 6)), 1)
		})
	}
}

// BenchmarkRecall measures recall@10 of the hybrid ranking, per layer,
// against exact search: the same retrieval with index scans off and every
// query term and vector feature selecting candidates (common_term_share
// 1), so that the lexical half scores every record that holds any of the
// task's terms and the vector half compares every vector that shares a
// feature with the task's (the others are at distance 1, never a hit).
// "small-tenants" runs over BenchmarkRetrieve's records, tenants of a few
// thousand; "large-tenant" over one tenant holding ENGRAM_BENCH_SCALE_MAX
// records (else ENGRAM_BENCH_RECORDS): the vector half's selection on the
// features' index at its largest.
//
//	ENGRAM_BENCH_KEEP=1 go test -run='^$' -bench=Recall -benchtime=100x -timeout=60m ./retrieve/
func BenchmarkRecall(b *testing.B) {
	b.Run("small-tenants", func(b *testing.B) {
		set := benchShared(b)
		benchRecall(b, set, benchDB(b, set))
	})
	b.Run("large-tenant", func(b *testing.B) {
		set := benchOneTenant(benchEnvInt(b, "ENGRAM_BENCH_SCALE_MAX", benchShared(b).records))
		benchRecall(b, set, benchDB(b, set))
	})
}

func benchRecall(b *testing.B, set benchSet, pool *pgxpool.Pool) {
	ctx := context.Background()
	cfg := pool.Config()
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
	// Exact: every term and feature selects candidates.
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
		tenant, req := benchTask(rng, set.tenants)
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
