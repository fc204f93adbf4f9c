package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/internal/loadgen"
	"github.com/engram-dev/engram/internal/pgtest"
)

// jobsQuiet turns off the periodic jobs that would share the cores with
// classification: what "ingestion alone" measures.
const jobsQuiet = "jobs: {embedding_backfill: \"off\", retrieval_stats: \"off\", consolidate: \"off\"}\n"

// jobsBusy is the default schedules, but with the embedding backfill every
// 5 s instead of every minute, so that it surely runs during a run of
// seconds: the worst case of the defaults.
const jobsBusy = "jobs: {embedding_backfill: \"@every 5s\"}\n"

// ingestCase is one way of loading engramd.
type ingestCase struct {
	name string
	jobs string
	// threads is the threads the events spread over; 0 is a thread per
	// two events (chat runtimes).
	threads int
	rate    float64
}

var ingestCases = []ingestCase{
	{name: "long-threads", jobs: jobsQuiet, threads: 2000},
	{name: "short-threads", jobs: jobsQuiet},
	{name: "jobs-on", jobs: jobsBusy, threads: 2000},
	{name: "offered-10k", jobs: jobsQuiet, threads: 2000, rate: 10_000},
}

// BenchmarkIngest measures ingestion end to end: a real engramd on a fresh
// schema, loaded over its NDJSON streaming API by the same load generator
// as `engram bench ingest` (4 streams, 50 agents), until every event is
// classified. ENGRAM_BENCH_EVENTS sets the events of a run (60,000 by
// default). Each case reports:
//
//   - events/s: classified end to end (from the first event sent until
//     nothing is pending);
//   - acked/s, ack-p50-ms, ack-p99-ms: acknowledgement rate and latency;
//   - rss-MB: the daemon's resident memory at the end;
//   - floor-rows/s: the same events staged by one raw COPY into one table
//     with a primary key, in the same database right after: the floor.
//
// The cases: long-threads (2,000 threads) and short-threads (a thread per
// two events) with the periodic jobs off; jobs-on, the default schedules
// with the embedding backfill every 5 s; offered-10k, 10,000 events a
// second offered, for the acknowledgement latency.
//
//	go test -run='^$' -bench=Ingest -benchtime=1x -timeout=30m ./cmd/engramd/
func BenchmarkIngest(b *testing.B) {
	bin := buildEngramd(b)
	events := benchEnv(b, "ENGRAM_BENCH_EVENTS", 60_000)
	for _, c := range ingestCases {
		b.Run(c.name, func(b *testing.B) {
			var res loadgen.Result
			var floor float64
			for range b.N {
				b.StopTimer()
				cfg, db := startForBench(b, bin, c, events)
				b.StartTimer()
				var err error
				res, err = loadgen.Run(context.Background(), cfg, progressLine(c.name, events))
				require.NoError(b, err)
				b.StopTimer()
				fmt.Fprintln(os.Stderr)
				require.Zero(b, res.Refused, "events refused")
				floor = copyFloor(b, db, cfg)
			}
			b.ReportMetric(res.ClassifiedRate(), "events/s")
			b.ReportMetric(res.AckRate(), "acked/s")
			b.ReportMetric(ms(res.Latency(0.50)), "ack-p50-ms")
			b.ReportMetric(ms(res.Latency(0.99)), "ack-p99-ms")
			b.ReportMetric(res.ResidentBytes/(1<<20), "rss-MB")
			b.ReportMetric(floor, "floor-rows/s")
		})
	}
}

// startForBench starts an engramd for case c on a fresh schema and returns
// the load's configuration.
func startForBench(b *testing.B, bin string, c ingestCase, events int) (loadgen.Config, *pgtest.Schema) {
	db := pgtest.NewSchema(b)
	d := startWithYAML(b, bin, db, c.jobs, warnings{os.Stderr})
	threads := c.threads
	if threads == 0 {
		threads = max(1, events/2)
	}
	return loadgen.Config{URL: "http://" + d.addr, Key: testKey, Events: events, Streams: 4, Threads: threads, Agents: 50, Rate: c.rate,
		Run: strconv.FormatInt(time.Now().UnixNano(), 36)}, db
}

// copyFloor stages the run's events again by one raw COPY into a table of
// their own (a primary key, the event as jsonb, one commit) and returns
// the rows a second.
func copyFloor(b *testing.B, db *pgtest.Schema, cfg loadgen.Config) float64 {
	ctx := context.Background()
	_, err := db.Pool.Exec(ctx, `CREATE TABLE copy_floor (tenant_id text NOT NULL, id uuid NOT NULL, agent_id text NOT NULL,
		thread_id text NOT NULL, event jsonb NOT NULL, received_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (tenant_id, id))`)
	require.NoError(b, err)
	var rows [][]any
	for ev := range cfg.Lines() {
		rows = append(rows, []any{"acme", uuid.Must(uuid.NewV7()), ev.Agent, ev.Thread, string(ev.Line)})
	}
	start := time.Now()
	n, err := db.Pool.CopyFrom(ctx, pgx.Identifier{"copy_floor"}, []string{"tenant_id", "id", "agent_id", "thread_id", "event"}, pgx.CopyFromRows(rows))
	took := time.Since(start)
	require.NoError(b, err)
	return float64(n) / took.Seconds()
}

// progressLine draws a run's progress on one line of stderr.
func progressLine(name string, events int) loadgen.Progress {
	return func(acked int, classifying bool, classified int) {
		if classifying {
			fmt.Fprintf(os.Stderr, "\ringest/%s: acknowledged %d, classified %d     ", name, acked, max(0, classified))
			return
		}
		fmt.Fprintf(os.Stderr, "\ringest/%s: acknowledged %d/%d     ", name, acked, events)
	}
}

// warnings passes on the daemon's log lines above INFO.
type warnings struct{ w io.Writer }

func (w warnings) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("level=INFO")) || bytes.Contains(p, []byte("level=DEBUG")) {
		return len(p), nil
	}
	return w.w.Write(p)
}

func benchEnv(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(b, err, name)
	require.Positive(b, n, name)
	return n
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// The load generator behind the benchmark and `engram bench ingest`: every
// event it sends is acknowledged and classified, in a short run.
func TestLoadgenAgainstEngramd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a daemon")
	}
	t.Parallel()
	bin := buildEngramd(t)
	db := pgtest.NewSchema(t)
	d := startWithYAML(t, bin, db, jobsQuiet, os.Stderr)
	cfg := loadgen.Config{URL: "http://" + d.addr, Key: testKey, Events: 600, Streams: 3, Threads: 40, Agents: 5}
	res, err := loadgen.Run(t.Context(), cfg, nil)
	require.NoError(t, err)
	require.Equal(t, 600, res.Acked)
	require.Zero(t, res.Refused)
	require.Len(t, res.Latencies, 600)
	require.Positive(t, res.ResidentBytes)
	require.Equal(t, 600, loadgen.Classified(t.Context(), cfg), "the daemon's count of classified events")

	var done, pending, threads int
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT count(*) FILTER (WHERE status = 'done'), count(*) FILTER (WHERE status = 'pending'),
		count(DISTINCT thread_id) FROM candidates WHERE tenant_id = 'acme'`).Scan(&done, &pending, &threads))
	require.Equal(t, 600, done, "every event classified")
	require.Zero(t, pending)
	require.LessOrEqual(t, threads, 40)

	var lines int
	for range cfg.Lines() {
		lines++
	}
	require.Equal(t, 600, lines, "the floor stages the same events")
}

// BenchmarkRetrieveWhileIngesting measures retrieval over HTTP for a tenant
// holding ENGRAM_BENCH_FACTS facts (24,000 by default), while the same
// tenant's agents stream traces at ENGRAM_BENCH_RATE events a second (2,000
// by default) for ENGRAM_BENCH_SECONDS (20): each operation is one POST
// /v1/retrieve of a few words, one after another from one client, with the
// daemon's default jobs running. The facts are ingested as fact events,
// embedded and counted for BM25 by their jobs, run through the jobs API
// before the clock starts. It reports p50-ms and p99-ms, and the rate the
// load was acknowledged at (acked/s) to show it was kept up; and, as the
// floor, idle-p50-ms and idle-p99-ms: the same retrievals of the same
// tenant before the load starts (for half as many seconds), which tell the
// cost of the tenant's records from the cost of sharing the cores with
// ingestion.
//
//	go test -run='^$' -bench=RetrieveWhileIngesting -benchtime=1x -timeout=30m ./cmd/engramd/
func BenchmarkRetrieveWhileIngesting(b *testing.B) {
	bin := buildEngramd(b)
	facts := benchEnv(b, "ENGRAM_BENCH_FACTS", 24_000)
	rate := benchEnv(b, "ENGRAM_BENCH_RATE", 2000)
	seconds := benchEnv(b, "ENGRAM_BENCH_SECONDS", 20)
	ctx := context.Background()

	db := pgtest.NewSchema(b)
	d := startWithYAML(b, bin, db, "jobs: {}\n", warnings{os.Stderr}) // the default jobs
	base := "http://" + d.addr

	// The tenant's facts, through ingestion like any other.
	seed := loadgen.Config{URL: base, Key: testKey, Events: facts, Streams: 4, Threads: max(1, facts/20), Agents: 20,
		Run: "facts", Event: factEvent}
	_, err := loadgen.Run(ctx, seed, progressLine("facts", facts))
	require.NoError(b, err)
	fmt.Fprintln(os.Stderr)
	for _, job := range []string{"embedding_backfill", "retrieval_stats"} {
		runJob(b, db, base, job)
	}

	// The floor: the same tenant's retrievals with nothing ingesting, as
	// many as the load's seconds allow, one after another.
	rng := rand.New(rand.NewPCG(7, 7))
	var idle []time.Duration
	for end := time.Now().Add(time.Duration(seconds) * time.Second / 2); time.Now().Before(end) || len(idle) < 20; {
		t := time.Now()
		retrieveOnce(b, base, factWords(rng, 4))
		idle = append(idle, time.Since(t))
	}

	var took []time.Duration
	for range b.N {
		load := loadgen.Config{URL: base, Key: testKey, Events: rate * seconds, Streams: 4, Threads: 2000, Agents: 50,
			Rate: float64(rate), Run: strconv.FormatInt(time.Now().UnixNano(), 36)}
		// sending ends when every event is acknowledged: the measure is
		// of retrieval while events arrive, not while a backlog drains.
		sending, sent := context.WithCancel(ctx)
		loaded := make(chan loadgen.Result, 1)
		go func() {
			defer sent()
			res, err := loadgen.Run(ctx, load, func(_ int, classifying bool, _ int) {
				if classifying {
					sent()
				}
			})
			if err != nil {
				b.Error(err)
			}
			loaded <- res
		}()
		time.Sleep(2 * time.Second) // the load under way
		b.ResetTimer()
		for sending.Err() == nil {
			t := time.Now()
			retrieveOnce(b, base, factWords(rng, 4))
			took = append(took, time.Since(t))
			if len(took)%100 == 0 {
				fmt.Fprintf(os.Stderr, "\rretrieve-while-ingesting: %d retrievals     ", len(took))
			}
		}
		b.StopTimer()
		fmt.Fprintln(os.Stderr)
		res := <-loaded
		b.ReportMetric(res.AckRate(), "acked/s")
	}
	pct := func(ds []time.Duration, p float64) float64 {
		slices.Sort(ds)
		return ms(ds[min(len(ds)-1, int(p*float64(len(ds))))])
	}
	b.ReportMetric(pct(took, 0.50), "p50-ms")
	b.ReportMetric(pct(took, 0.99), "p99-ms")
	b.ReportMetric(float64(len(took)), "retrievals")
	b.ReportMetric(pct(idle, 0.50), "idle-p50-ms")
	b.ReportMetric(pct(idle, 0.99), "idle-p99-ms")
}

// factWords are n words from a vocabulary of 2,000, skewed as natural
// text is: a few words everywhere, most rare.
func factWords(rng *rand.Rand, n int) string {
	w := make([]string, n)
	for i := range w {
		x := rng.Float64()
		w[i] = fmt.Sprintf("w%d", int(2000*x*x*x))
	}
	return strings.Join(w, " ")
}

// factEvent is a fact about one of the tenant's services.
func factEvent(rng *rand.Rand, i int, thread, agent string) []byte {
	preds := []string{"runs_on", "owned_by", "depends_on", "deployed_with", "documented_in"}
	line, _ := json.Marshal(map[string]any{"kind": "fact", "agent_id": agent, "thread_id": thread,
		"fact": map[string]any{"subject": fmt.Sprintf("svc-%d %s", i, factWords(rng, 2)), "predicate": preds[i%len(preds)], "object": factWords(rng, 5)}})
	return line
}

// runJob runs a job through the jobs API and waits until it succeeded.
func runJob(b *testing.B, db *pgtest.Schema, base, job string) {
	var started api.JobStarted
	for deadline := time.Now().Add(10 * time.Minute); ; {
		req, err := http.NewRequest("POST", base+"/v1/jobs/"+job+":run", nil)
		require.NoError(b, err)
		req.Header.Set("Authorization", "Bearer "+opsKey)
		res, err := http.DefaultClient.Do(req)
		require.NoError(b, err)
		// With the default jobs on, the job's own schedule may have
		// started it: 409 until that run ends, then run it again.
		if res.StatusCode == http.StatusConflict && time.Now().Before(deadline) {
			res.Body.Close()
			time.Sleep(500 * time.Millisecond)
			continue
		}
		require.Less(b, res.StatusCode, 300, res.Status)
		require.NoError(b, json.NewDecoder(res.Body).Decode(&started))
		res.Body.Close()
		break
	}
	for {
		var status string
		require.NoError(b, db.Pool.QueryRow(context.Background(), `SELECT status FROM job_runs WHERE id = $1`, started.Run.ID).Scan(&status))
		if status == "succeeded" {
			return
		}
		require.Equal(b, "running", status, "job %s", job)
		time.Sleep(200 * time.Millisecond)
	}
}

// retrieveOnce is one POST /v1/retrieve.
func retrieveOnce(b *testing.B, base, text string) {
	body, _ := json.Marshal(api.RetrieveRequest{Task: api.Task{Text: text}})
	req, err := http.NewRequest("POST", base+"/v1/retrieve", bytes.NewReader(body))
	require.NoError(b, err)
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(b, err)
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b.Fatalf("retrieve: %s", res.Status)
	}
}
