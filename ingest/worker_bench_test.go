package ingest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/internal/pg"
)

// roundTrips counts the statements and pipelined batches sent on a pool:
// its round trips to PostgreSQL, a measure of the worker's cost that a
// busy machine does not blur.
type roundTrips struct{ n atomic.Int64 }

func (c *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// BenchmarkClassify measures the policy plane (the ingest worker) alone:
// 20,000 staged events over 500 threads classified by both partitions in
// batches of 1,000, reported as events/s. episodic is observations only
// (each thread's episode and working memory, then appends); mixed makes
// one event in 25 a fact, a third of which contradict an earlier one;
// short spreads the observations over 10,000 threads, two events each, so
// that starting threads dominates; facts makes 4,000 events all facts (100
// subjects, 3 objects each: most contradict or repeat one in force), so
// that the fact gates dominate. round-trips/event counts the worker's
// statements and pipelined batches, db-cpu-µs/event the CPU time of the
// database backends serving it.
//
//	go test -run='^$' -bench=Classify -benchtime=2x ./ingest/
func BenchmarkClassify(b *testing.B) {
	for _, c := range []struct {
		name      string
		events    int
		threads   int
		factEvery int
	}{{"episodic", 20_000, 500, 0}, {"mixed", 20_000, 500, 25}, {"short", 20_000, 10_000, 0}, {"facts", 4_000, 500, 1}} {
		b.Run(c.name, func(b *testing.B) { benchClassify(b, c.events, c.threads, c.factEvery) })
	}
}

func benchClassify(b *testing.B, n, threads, factEvery int) {
	for b.Loop() {
		b.StopTimer()
		bb := setupB(b)
		// The worker on a pool of its own that counts its round trips.
		trips := &roundTrips{}
		pool, err := pg.NewPool(bb.ctx, bb.db.URL, func(c *pgxpool.Config) { c.ConnConfig.Tracer = trips })
		require.NoError(b, err)
		b.Cleanup(pool.Close)
		bb.worker = ingest.NewWorker(ingest.WorkerConfig{DB: pool, Partitions: 2, BatchSize: 1000})
		raws := make([]json.RawMessage, 0, 1000)
		for i := range n {
			e := map[string]any{"kind": "observation", "agent_id": "a", "thread_id": fmt.Sprintf("t%d", i%threads), "text": fmt.Sprintf("event %d", i)}
			if factEvery > 0 && i%factEvery == 0 {
				e = map[string]any{"kind": "fact", "agent_id": "a", "thread_id": fmt.Sprintf("t%d", i%threads),
					"fact": map[string]any{"subject": fmt.Sprintf("s%d", i%100), "predicate": "p", "object": i % 3}}
			}
			r, _ := json.Marshal(e)
			if raws = append(raws, r); len(raws) == cap(raws) {
				if _, err := bb.ingest.Ingest(bb.ctx, "acme", raws); err != nil {
					b.Fatal(err)
				}
				raws = raws[:0]
			}
		}
		b.StartTimer()
		for {
			k0, err := bb.worker.RunOnce(bb.ctx, 0)
			if err != nil {
				b.Fatal(err)
			}
			k1, err := bb.worker.RunOnce(bb.ctx, 1)
			if err != nil {
				b.Fatal(err)
			}
			if k0+k1 == 0 {
				break
			}
		}
		b.ReportMetric(float64(trips.n.Load())/float64(n), "round-trips/event")
		b.ReportMetric(backendCPU(b, pool).Seconds()*1e6/float64(n), "db-cpu-µs/event")
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "events/s")
}

// backendCPU is the CPU time the PostgreSQL backends of pool's connections
// used so far (user and system, from /proc: the database runs on this
// machine in the benchmark's setting); zero where /proc cannot tell.
func backendCPU(b *testing.B, pool *pgxpool.Pool) time.Duration {
	var total time.Duration
	for _, c := range pool.AcquireAllIdle(context.Background()) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.Conn().PgConn().PID()))
		c.Release()
		if err != nil {
			b.Logf("backend cpu: %v", err)
			return 0
		}
		// The fields after the command's closing parenthesis; utime and
		// stime are the 14th and 15th of the line, in clock ticks (100 a
		// second on Linux).
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		for _, v := range f[11:13] {
			ticks, _ := strconv.ParseInt(v, 10, 64)
			total += time.Duration(ticks) * 10 * time.Millisecond
		}
	}
	return total
}
