package consolidate_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/consolidate"
	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/migrations"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

// benchDBs are the benchmark's databases for n episodes over triggers: the
// seed, made once (through the ingest path, which takes minutes for
// 100,000 episodes) and kept, and a copy of it made for each pass, so that
// every pass starts from the same state. Their names carry the sizes, so
// that runs of two sizes at once never drop each other's databases.
type benchDBs struct{ seed, run string }

func benchNames(n, triggers int) benchDBs {
	return benchDBs{
		seed: fmt.Sprintf("engram_bench_consolidate_seed_%d_%d", n, triggers),
		run:  fmt.Sprintf("engram_bench_consolidate_run_%d_%d", n, triggers),
	}
}

// benchWords name the triggers: 25 × 20 word pairs, as error messages
// differ by the names in them, not by numbers (which a signature strips).
var benchWords = [2][]string{
	{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima", "mike",
		"november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey", "xray", "yankee"},
	{"amber", "basalt", "cobalt", "dune", "ember", "flint", "garnet", "harbor", "iris", "jade", "krypton", "lotus", "marble",
		"nickel", "onyx", "pearl", "quartz", "ruby", "slate", "topaz"},
}

// benchCopySQL copies every closed episode of tenant acme $1 times: copy
// k has new ids (md5 of the old and k), its thread id suffixed with ~k,
// its timeline pointing at copies of the events, and closed k spans of
// the whole seed earlier; one copy in ten failed.
var benchCopySQL = []string{`
INSERT INTO candidates (tenant_id, id, agent_id, thread_id, kind, event_time, event, dedup_key, sensitivity, redactions,
	status, attempts, next_attempt_at, decision, received_at, processed_at)
SELECT c.tenant_id, md5(c.id::text || ':' || k)::uuid, c.agent_id, c.thread_id || '~' || k, c.kind, c.event_time, c.event,
	sha256(c.dedup_key || k::text::bytea), c.sensitivity, c.redactions, c.status, c.attempts, c.next_attempt_at, c.decision,
	c.received_at, c.processed_at
FROM candidates c, generate_series(1, $1::int) k
WHERE c.tenant_id = 'acme'`, `
INSERT INTO records (tenant_id, id, type, status, version, sensitivity, confidence, salience, scope, tags, decay_curve,
	decay_half_life_seconds, decay_floor, decay_max_age_seconds, decay_reinforcement_gain, decay_points, last_reinforced_at,
	pinned, deletion_policy, expires_at, provenance, payload, created_at, updated_at, deleted_at, decay_inherited, expired_at,
	tsv, visibility, agent_id, thread_id)
SELECT r.tenant_id, md5(r.id::text || ':' || k)::uuid, r.type, r.status, r.version, r.sensitivity, r.confidence, r.salience,
	r.scope, r.tags, r.decay_curve, r.decay_half_life_seconds, r.decay_floor, r.decay_max_age_seconds,
	r.decay_reinforcement_gain, r.decay_points, r.last_reinforced_at, r.pinned, r.deletion_policy, r.expires_at, r.provenance,
	jsonb_set(jsonb_set(r.payload, '{timeline}', (
		SELECT coalesce(jsonb_agg(CASE WHEN e ->> 'ref' LIKE 'evt://%'
			THEN jsonb_set(e, '{ref}', to_jsonb('evt://' || md5(substr(e ->> 'ref', 7) || ':' || k)::uuid::text)) ELSE e END
			ORDER BY o), '[]')
		FROM jsonb_array_elements(r.payload -> 'timeline') WITH ORDINALITY AS x(e, o))),
		'{outcome}', to_jsonb(CASE WHEN k % 10 = 9 THEN 'failure' ELSE r.payload ->> 'outcome' END)),
	r.created_at, r.updated_at, r.deleted_at, r.decay_inherited, r.expired_at, r.tsv, r.visibility, r.agent_id,
	r.thread_id || '~' || k
FROM records r JOIN threads t ON t.tenant_id = r.tenant_id AND t.episode_id = r.id AND t.status = 'closed',
	generate_series(1, $1::int) k
WHERE r.tenant_id = 'acme'`, `
INSERT INTO episode_entries (tenant_id, record_id, part, entry, appended_at, tsv)
SELECT x.tenant_id, md5(x.record_id::text || ':' || k)::uuid, x.part,
	CASE WHEN x.entry ->> 'ref' LIKE 'evt://%'
		THEN jsonb_set(x.entry, '{ref}', to_jsonb('evt://' || md5(substr(x.entry ->> 'ref', 7) || ':' || k)::uuid::text))
		ELSE x.entry END,
	x.appended_at, x.tsv
FROM episode_entries x JOIN threads t ON t.tenant_id = x.tenant_id AND t.episode_id = x.record_id AND t.status = 'closed',
	generate_series(1, $1::int) k
WHERE x.tenant_id = 'acme'
ORDER BY k, x.seq`, `
WITH span AS (SELECT max(closed_at) - min(opened_at) + interval '1 second' AS d FROM threads WHERE tenant_id = 'acme')
INSERT INTO threads (tenant_id, thread_id, generation, agent_id, episode_id, status, opened_at, closed_at)
SELECT t.tenant_id, t.thread_id || '~' || k, t.generation, t.agent_id, md5(t.episode_id::text || ':' || k)::uuid, t.status,
	t.opened_at - k * span.d, t.closed_at - k * span.d
FROM threads t, span, generate_series(1, $1::int) k
WHERE t.tenant_id = 'acme' AND t.status = 'closed'`}

// benchEpisode is episode i of the seed: trigger i mod triggers, a path
// and line numbers of its own, one episode of a trigger in ten a failure
// that tried something else.
func benchEpisode(i, triggers int) []map[string]any {
	k := i % triggers
	name := benchWords[0][k%25] + " " + benchWords[1][k/25%20]
	mod := benchWords[0][k%25] + "-" + benchWords[1][k/25%20]
	osName := []string{"linux", "macos"}[k%2]
	thread := fmt.Sprintf("bench-%d", i)
	errMsg := fmt.Sprintf("cannot resolve module %s in /home/dev/proj%d/src/main.go:%d:%d", name, i%997, 10+i%90, 1+i%40)
	fix := []map[string]any{
		step("edit", map[string]any{"path": fmt.Sprintf("/home/dev/proj%d/go.mod", i%997), "require": mod}, "ok: 1 line added"),
		step("go", []any{"mod", "tidy"}, "ok"),
		buildOK,
	}
	status := "success"
	if i/triggers%10 == 9 {
		fix = []map[string]any{step("go", []any{"clean", "-cache"}, "ok"), step("make", []any{"build"}, map[string]any{"error": "still failing: " + errMsg})}
		status = "failure"
	}
	evs := episode(thread, map[string]any{"os": osName}, errMsg, fix, status)
	evs[0]["text"] = "fix the " + name + " build"
	return evs
}

// benchURL is the test database URL with another database name.
func benchURL(b *testing.B, db string) string {
	u, err := url.Parse(pgtest.URL())
	require.NoError(b, err)
	u.Path = "/" + db
	return u.String()
}

// benchSeed makes sure the seed database holds n closed episodes over
// the given number of triggers, made through the real ingest path.
func benchSeed(b *testing.B, dbs benchDBs, n, triggers int) {
	b.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pgtest.URL())
	require.NoError(b, err)
	defer admin.Close(ctx)
	want := fmt.Sprintf("%d/%d", n, triggers)
	var have string
	if err := admin.QueryRow(ctx, `SELECT coalesce(shobj_description(oid, 'pg_database'), '') FROM pg_database WHERE datname = $1`, dbs.seed).Scan(&have); err == nil && have == want {
		return
	}
	b.Logf("seeding %d episodes over %d triggers through the ingest path (once; kept in database %s)", n, triggers, dbs.seed)
	_, err = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+dbs.seed+" WITH (FORCE)")
	require.NoError(b, err)
	_, err = admin.Exec(ctx, "CREATE DATABASE "+dbs.seed)
	require.NoError(b, err)

	seedURL := benchURL(b, dbs.seed)
	cfg, err := pgx.ParseConfig(seedURL)
	require.NoError(b, err)
	sqlDB := stdlib.OpenDB(*cfg)
	_, err = sqlDB.ExecContext(ctx, "CREATE EXTENSION IF NOT EXISTS vector; CREATE EXTENSION IF NOT EXISTS btree_gin")
	if err == nil {
		_, err = migrations.Up(ctx, sqlDB, nil)
	}
	require.NoError(b, closeAll(err, sqlDB))

	pool, err := pg.NewPool(ctx, seedURL, nil)
	require.NoError(b, err)
	defer pool.Close()
	require.NoError(b, store.EnsureTenant(ctx, pool, "acme"))
	w := ingest.NewWorker(ingest.WorkerConfig{DB: pool})
	in := ingest.New(ingest.Config{DB: pool, Policy: w.Policy, MaxBacklog: 1 << 30})
	// Two episodes of each trigger go through the ingest path; the rest are
	// copies of them made in SQL, each a new episode with events of its
	// own, closed later, one copy in ten a failure.
	base := min(n, 2*triggers)
	require.Zero(b, n%base, "ENGRAM_BENCH_EPISODES must be a multiple of twice the triggers")
	start := time.Now()
	var raws []json.RawMessage
	for i := range base {
		for _, ev := range benchEpisode(i, triggers) {
			raw, err := json.Marshal(ev)
			require.NoError(b, err)
			raws = append(raws, raw)
		}
		if len(raws) >= 2000 || i == base-1 {
			_, err := in.Ingest(ctx, "acme", raws)
			require.NoError(b, err)
			raws = raws[:0]
			benchDrain(b, w)
		}
	}
	b.Logf("ingested %d episodes in %s", base, time.Since(start).Round(time.Second))
	if copies := n / base; copies > 1 {
		for _, q := range benchCopySQL {
			_, err := pool.Exec(ctx, q, copies-1)
			require.NoError(b, err)
		}
		b.Logf("copied them to %d episodes in %s", n, time.Since(start).Round(time.Second))
	}
	_, err = pool.Exec(ctx, "VACUUM ANALYZE")
	require.NoError(b, err)
	pool.Close()
	_, err = admin.Exec(ctx, fmt.Sprintf("COMMENT ON DATABASE %s IS '%s'", dbs.seed, want))
	require.NoError(b, err)
}

func benchDrain(b *testing.B, w *ingest.Worker) {
	b.Helper()
	for {
		total := 0
		for p := range ingest.DefaultPartitions {
			k, err := w.RunOnce(context.Background(), p)
			require.NoError(b, err)
			total += k
		}
		if total == 0 {
			return
		}
	}
}

func closeAll(err error, db *sql.DB) error {
	if cerr := db.Close(); err == nil {
		return cerr
	}
	return err
}

// benchCopy is a fresh copy of the seed database.
func benchCopy(b *testing.B, dbs benchDBs) *pgxpool.Pool {
	b.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pgtest.URL())
	require.NoError(b, err)
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+dbs.run+" WITH (FORCE)")
	require.NoError(b, err)
	_, err = admin.Exec(ctx, "CREATE DATABASE "+dbs.run+" TEMPLATE "+dbs.seed)
	require.NoError(b, err)
	// The seed is kept across versions of engram: the copy is migrated to
	// this one.
	cfg, err := pgx.ParseConfig(benchURL(b, dbs.run))
	require.NoError(b, err)
	sqlDB := stdlib.OpenDB(*cfg)
	_, err = migrations.Up(ctx, sqlDB, nil)
	require.NoError(b, closeAll(err, sqlDB))
	pool, err := pg.NewPool(ctx, benchURL(b, dbs.run), nil)
	require.NoError(b, err)
	b.Cleanup(pool.Close)
	return pool
}

// benchForget makes the copy a database whose tables were never analysed,
// as one is right after a bulk load or a restore on a server with
// autovacuum off (issue 33, item 3): the tables' column statistics are
// deleted and their row counts unknown (reltuples -1, as PostgreSQL keeps
// them for a table never vacuumed or analysed), and autovacuum is off for
// each of them, so that only engram can analyse them during the pass.
func benchForget(b *testing.B, pool *pgxpool.Pool) {
	b.Helper()
	ctx := context.Background()
	rows, err := pool.Query(ctx, `SELECT quote_ident(relname) FROM pg_class
		WHERE relnamespace = 'public'::regnamespace AND relkind = 'r' ORDER BY relname`)
	require.NoError(b, err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(b, err)
	for _, t := range tables {
		_, err := pool.Exec(ctx, "ALTER TABLE "+t+" SET (autovacuum_enabled = false, toast.autovacuum_enabled = false)")
		require.NoError(b, err)
	}
	_, err = pool.Exec(ctx, `DELETE FROM pg_statistic WHERE starelid IN (
		SELECT oid FROM pg_class WHERE relnamespace = 'public'::regnamespace)`)
	require.NoError(b, err)
	_, err = pool.Exec(ctx, `UPDATE pg_class SET reltuples = -1, relpages = 0, relallvisible = 0
		WHERE relnamespace = 'public'::regnamespace AND relkind = 'r'`)
	require.NoError(b, err)
	var analysed int
	require.NoError(b, pool.QueryRow(ctx, `SELECT count(*) FROM pg_stats WHERE schemaname = 'public'`).Scan(&analysed))
	require.Zero(b, analysed, "the copy keeps column statistics")
	// Every connection of the pool plans afresh.
	pool.Reset()
}

func benchEnv(b *testing.B, name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkConsolidate measures consolidation passes over
// ENGRAM_BENCH_EPISODES closed episodes (default 100,000) across
// ENGRAM_BENCH_TRIGGERS triggers (default 500), made once through the
// ingest path and kept in a database of their own (issue 11's targets:
// a full pass under 60 s, an incremental pass over 1,000 new episodes
// under 2 s, on the project's 2-core machine).
//
//	go test -run='^$' -bench=Consolidate -benchtime=1x -timeout=60m ./consolidate/
//
// full is a first pass over every episode; incremental is the pass after
// 1,000 more episodes arrive (ingested untimed) on top of a full pass.
func BenchmarkConsolidate(b *testing.B) {
	n := benchEnv(b, "ENGRAM_BENCH_EPISODES", 100_000)
	triggers := benchEnv(b, "ENGRAM_BENCH_TRIGGERS", 500)
	dbs := benchNames(n, triggers)
	benchSeed(b, dbs, n, triggers)
	ctx := context.Background()

	// pass runs one pass and reports how long each of its stages took.
	pass := func(b *testing.B, pool *pgxpool.Pool, run *memRun, report bool) {
		b.Helper()
		reg := prometheus.NewRegistry()
		cons := consolidate.New(consolidate.Config{DB: pool, Writer: revise.New(pool, revise.Config{}), Registry: reg})
		require.NoError(b, cons.Consolidate(ctx, run))
		if !report {
			return
		}
		mfs, err := reg.Gather()
		require.NoError(b, err)
		for _, mf := range mfs {
			if mf.GetName() != "engram_consolidation_stage_seconds" {
				continue
			}
			for _, m := range mf.GetMetric() {
				b.ReportMetric(m.GetHistogram().GetSampleSum(), m.GetLabel()[0].GetValue()+"_s")
			}
		}
	}
	learned := func(b *testing.B, pool *pgxpool.Pool) (procedures, plans int) {
		b.Helper()
		require.NoError(b, pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE type = 'competence'), count(*) FILTER (WHERE type = 'plan_graph')
			FROM records WHERE status = 'active' AND type IN ('competence', 'plan_graph')`).Scan(&procedures, &plans))
		return procedures, plans
	}

	// firstPass times a full first pass on a copy of the seed, prepared by
	// prepare (nil: as seeded).
	firstPass := func(prepare func(*testing.B, *pgxpool.Pool)) func(*testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				pool := benchCopy(b, dbs)
				if prepare != nil {
					prepare(b, pool)
				}
				run := &memRun{}
				b.StartTimer()
				pass(b, pool, run, true)
				b.StopTimer()
				procs, plans := learned(b, pool)
				if procs < triggers {
					b.Fatalf("a full pass learned %d procedures from %d triggers", procs, triggers)
				}
				b.ReportMetric(float64(procs), "procedures")
				b.ReportMetric(float64(plans), "plans")
				b.ReportMetric(float64(run.counts["episodes"]), "episodes")
				b.ReportMetric(float64(run.counts["tables_analyzed"]), "tables-analyzed")
				pool.Close()
				b.StartTimer()
			}
		}
	}
	b.Run("full", firstPass(nil))
	// never-analyzed is the first pass of full on a copy whose tables were
	// never analysed (benchForget): issue 33 wants it within twice full's
	// time.
	b.Run("never-analyzed", firstPass(benchForget))

	b.Run("incremental", func(b *testing.B) {
		const more = 1000
		for b.Loop() {
			b.StopTimer()
			pool := benchCopy(b, dbs)
			run := &memRun{}
			pass(b, pool, run, false)
			w := ingest.NewWorker(ingest.WorkerConfig{DB: pool})
			in := ingest.New(ingest.Config{DB: pool, Policy: w.Policy, MaxBacklog: 1 << 30})
			var raws []json.RawMessage
			for i := n; i < n+more; i++ {
				for _, ev := range benchEpisode(i, triggers) {
					raw, err := json.Marshal(ev)
					require.NoError(b, err)
					raws = append(raws, raw)
				}
			}
			for len(raws) > 0 {
				k := min(len(raws), 2000)
				_, err := in.Ingest(ctx, "acme", raws[:k])
				require.NoError(b, err)
				raws = raws[k:]
			}
			benchDrain(b, w)
			run.counts = nil
			b.StartTimer()
			pass(b, pool, run, true)
			b.StopTimer()
			if run.counts["episodes"] != more {
				b.Fatalf("the incremental pass read %d episodes, want %d", run.counts["episodes"], more)
			}
			b.ReportMetric(float64(run.counts["competence_revised"]), "procedures_revised")
			pool.Close()
			b.StartTimer()
		}
	})
}
