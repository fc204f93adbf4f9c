package decay_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/revise"
)

// seedSQL inserts records $2 to $3 for tenant $1 in one statement, as an import
// would: 40% episodic, 30% semantic, 15% competence, 10% plans, 5% working
// memory, each with its type's default profile, salience 0.3 to 1, ids in
// creation order (as UUIDv7 ids are). 1% were last reinforced 400 days ago
// and have faded below the prune threshold; the rest within three days.
const seedSQL = `
INSERT INTO records (tenant_id, id, type, status, version, sensitivity, confidence, salience, scope, tags,
	decay_curve, decay_half_life_seconds, last_reinforced_at, provenance, payload, created_at, updated_at, decay_inherited)
SELECT $1, ('01900000-0000-7000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, t.type, 'active', 1, 'low', 0.5,
	0.3 + (g % 8) / 10.0, '', '{}', 'exponential',
	CASE t.type WHEN 'episodic' THEN 604800 WHEN 'working' THEN 172800 WHEN 'semantic' THEN 7776000
		WHEN 'competence' THEN 2592000 ELSE 5184000 END,
	CASE WHEN g % 100 = 0 THEN now() - interval '400 days' ELSE now() - (g % 4320) * interval '1 minute' END,
	'{"sources": [{"kind": "event", "ref": "evt://seed"}]}',
	CASE t.type
		WHEN 'episodic' THEN jsonb_build_object('kind', 'episodic', 'outcome', 'success', 'timeline',
			jsonb_build_array(jsonb_build_object('t', now(), 'event_kind', 'tool_call', 'ref', 'evt://' || g, 'summary', 'ran the build')))
		WHEN 'semantic' THEN jsonb_build_object('kind', 'semantic', 'subject', 'subject-' || g, 'predicate', 'prefers',
			'object', 'value-' || g, 'validity', jsonb_build_object('mode', 'global'))
		WHEN 'competence' THEN jsonb_build_object('kind', 'competence', 'skill_name', 'skill-' || g,
			'triggers', jsonb_build_array(jsonb_build_object('signal', 'error ' || g)), 'recipe', jsonb_build_array(jsonb_build_object('step', 'fix it')))
		WHEN 'plan_graph' THEN jsonb_build_object('kind', 'plan_graph', 'plan_id', 'plan-' || g, 'version', '1',
			'nodes', jsonb_build_array(jsonb_build_object('id', 'a', 'op', 'build')), 'edges', '[]'::jsonb)
		ELSE jsonb_build_object('kind', 'working', 'thread_id', 'thread-' || g, 'state', 'planning')
	END,
	now() - interval '500 days', now() - interval '500 days', true
FROM generate_series($2::int, $3::int) AS g,
LATERAL (SELECT CASE WHEN g % 20 < 8 THEN 'episodic' WHEN g % 20 < 14 THEN 'semantic' WHEN g % 20 < 17 THEN 'competence'
	WHEN g % 20 < 19 THEN 'plan_graph' ELSE 'working' END AS type) AS t`

// benchRecords is how many records the sweep benchmark seeds:
// ENGRAM_BENCH_RECORDS, by default a million.
func benchRecords(b *testing.B) int {
	if v := os.Getenv("ENGRAM_BENCH_RECORDS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err)
		return n
	}
	return 1_000_000
}

func seed(b *testing.B, db *pgtest.Schema, tenant string, n int) {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	_, err := db.Pool.Exec(ctx, "INSERT INTO tenants (id) VALUES ($1) ON CONFLICT DO NOTHING", tenant)
	require.NoError(b, err)
	// In chunks, so that no one transaction holds a million snapshots.
	for from := 1; from <= n; from += 100_000 {
		_, err := db.Pool.Exec(ctx, seedSQL, tenant, from, min(from+100_000-1, n))
		require.NoError(b, err)
	}
	_, err = db.Pool.Exec(ctx, "VACUUM ANALYZE records")
	require.NoError(b, err)
	b.Logf("seeded %d records in %s", n, time.Since(start).Round(time.Millisecond))
}

// heapPeak samples the heap in use until stop, and returns its peak.
func heapPeak() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak.Load()
	}
}

// BenchmarkSweep measures a full decay sweep over ENGRAM_BENCH_RECORDS
// records (a million by default), seeded with one set-based INSERT …
// SELECT generate_series: first the sweep that materialises every record's
// salience and expires the 1% that faded, then a steady-state sweep over the
// same records, then the sweep after every profile changed, which stamps
// the new profile on every record. Run it once per sub-benchmark:
//
//	go test -run='^$' -bench=Sweep -benchtime=1x -timeout=30m ./decay/
func BenchmarkSweep(b *testing.B) {
	n := benchRecords(b)
	db := pgtest.NewSchema(b)
	seed(b, db, "acme", n)
	settings, err := decay.NewSettings(decay.DefaultConfig())
	require.NoError(b, err)
	dec := decay.New(db.Pool, revise.New(db.Pool, revise.Config{Defaults: settings.Defaults}), settings, decay.WithBatchTimeout(time.Minute))

	// The cursor carries from one sweep to the next, as job_cursors does.
	var cursor []byte
	for _, name := range []string{"first", "again", "restamp"} {
		if name == "restamp" {
			// The operator doubles every half-life: each record that
			// inherits its type's profile takes the new one.
			cfg := decay.DefaultConfig()
			for t, p := range cfg.Profiles {
				p.HalfLife *= 2
				cfg.Profiles[t] = p
			}
			require.NoError(b, settings.Set(cfg))
		}
		b.Run(name, func(b *testing.B) {
			var counts map[string]int64
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			stop := heapPeak()
			for b.Loop() {
				p := &progress{cursor: cursor}
				if err := dec.Sweep(context.Background(), p); err != nil {
					b.Fatal(err)
				}
				counts, cursor = p.counts, p.cursor
			}
			peak := stop()
			b.Logf("counts %v", counts)
			b.ReportMetric(float64(counts["scanned"])*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(counts["expired_salience"]+counts["expired_max_age"]+counts["expired_expires_at"]), "expired")
			b.ReportMetric(float64(counts["materialised"]), "materialised")
			b.ReportMetric(float64(counts["stamped"]), "stamped")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(before.HeapInuse)/(1<<20), "heap-before-MiB")
		})
	}
}

// BenchmarkFeedback measures one feedback call for 10,000 records among
// ENGRAM_BENCH_RECORDS (a million by default): facts, whose salience moves
// without a revision, and procedures, whose statistics are a revision each.
//
//	go test -run='^$' -bench=Feedback -benchtime=20x ./decay/
func BenchmarkFeedback(b *testing.B) {
	const n = 10_000
	db := pgtest.NewSchema(b)
	seed(b, db, "acme", max(8*n, benchRecords(b)))
	settings, err := decay.NewSettings(decay.DefaultConfig())
	require.NoError(b, err)
	dec := decay.New(db.Pool, revise.New(db.Pool, revise.Config{Defaults: settings.Defaults}), settings)
	ctx := context.Background()
	ids := func(typ string) []uuid.UUID {
		rows, err := db.Pool.Query(ctx, "SELECT id FROM records WHERE type = $1 AND status = 'active' ORDER BY id LIMIT $2", typ, n)
		require.NoError(b, err)
		out, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		require.NoError(b, err)
		return out
	}
	for _, tc := range []struct {
		name, typ string
		outcome   decay.Outcome
	}{
		{"facts", "semantic", decay.UsedSuccess},
		{"procedures", "competence", decay.UsedFailure},
	} {
		recs := ids(tc.typ)
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				res, err := dec.Feedback(ctx, "acme", decay.FeedbackRequest{RecordIDs: recs, Outcome: tc.outcome}, revise.Change{Actor: "bench"})
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Applied) != len(recs) {
					b.Fatalf("applied %d of %d", len(res.Applied), len(recs))
				}
			}
			b.ReportMetric(float64(len(recs)), "records/op")
		})
	}
}
