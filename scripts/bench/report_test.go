package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/engram-dev/engram/cmd/engramd
BenchmarkIngest/long-threads-2   	       1	58983235928 ns/op	      1160 ack-p50-ms	      2084 ack-p99-ms	      9070 acked/s	      4000 events/s	     61619 floor-rows/s	        32.38 rss-MB
BenchmarkIngest/short-threads-2  	       1	98042571351 ns/op	      2118 ack-p50-ms	      3824 ack-p99-ms	      5008 acked/s	      4000 events/s	    162779 floor-rows/s	        34.02 rss-MB
BenchmarkIngest/offered-10k-2    	       1	55069136012 ns/op	        12.5 ack-p50-ms	      40.5 ack-p99-ms	      9629 acked/s	       363.3 events/s	    143756 floor-rows/s	       227.79 rss-MB
BenchmarkRetrieveWhileIngesting-2   	       1	18199600000 ns/op	      1995 acked/s	       164.8 p50-ms	       393.5 p99-ms	       106 retrievals	        40.0 idle-p50-ms	        78.7 idle-p99-ms
PASS
pkg: github.com/engram-dev/engram/retrieve
BenchmarkRetrieve-2   	     300	  40000000 ns/op	        30.0 p50-ms	        90.0 p99-ms	        20.0 sql-p50-ms	        10.0 fts-p50-ms
BenchmarkRetrieveScale/records=1000-2   	     300	  1000000 ns/op	        2.0 p50-ms	        4.0 p99-ms
BenchmarkRetrieveScale/records=10000-2  	     300	  1000000 ns/op	        3.0 p50-ms	        6.0 p99-ms
BenchmarkRetrieveScale/records=100000-2 	     300	  1000000 ns/op	        9.0 p50-ms	        12.0 p99-ms
BenchmarkDenseRecall-2   	     100	  90000000 ns/op	        0.97 recall@10	        0.96 vector-recall@10	        12.0 p50-ms	        30.0 p99-ms	        24.0 exact-p50-ms	        48.0 exact-p99-ms
`

func TestReportTable(t *testing.T) {
	rs := Results{}
	require.NoError(t, rs.Read(strings.NewReader(sample)))
	require.InDelta(t, 4000, rs["Ingest/long-threads"]["events/s"], 0, "names lose the Benchmark prefix and the -2")
	require.InDelta(t, 58.98, rs["Ingest/long-threads"]["sec/op"], 0.01)

	r := Report{Sizes: presets["quick"], Preset: "quick", Results: rs}
	lines := strings.Split(r.Table(), "\n")
	find := func(prefix string) string {
		t.Helper()
		for _, l := range lines {
			if strings.HasPrefix(l, "| "+prefix) {
				return l
			}
		}
		t.Fatalf("no row %q in\n%s", prefix, r.Table())
		return ""
	}
	require.Contains(t, find("ingestion, classified end to end"), "| 4,000 events/s | ≥ 20,000 events/s; ≥ 0.1× the floor | **missed** by 5.0× |")
	require.Contains(t, find("ingestion, classified end to end"), "| 0.065× |")
	require.Contains(t, find("the same, a thread per two events"), "| met (100% of it) |")
	require.Contains(t, find("the same as the first with the default jobs"), "| not measured in this run |")
	require.Contains(t, find("acknowledgement p99"), "| 40.5 ms | < 50 ms | met |")
	require.Contains(t, find("daemon resident memory"), "| 228 MB | < 200 MB | **missed** by 1.1× |")
	require.Contains(t, find("retrieval p50"), "| 30.0 ms | ≤ 5 ms | **missed** by 6.0× | the bare SQL engram issues: 20.0 ms; plain PostgreSQL full text")
	require.Contains(t, find("retrieval p50"), "| 1.50×; 3.00× |")
	require.Contains(t, find("retrieval p99, the same"), "| 90.0 ms | ≤ 25 ms | **missed** by 3.6× | — | — |")
	require.Contains(t, find("retrieval, one tenant of 10,000"), "| met (p50 ×1.50 per 10×) |")
	require.Contains(t, find("retrieval, one tenant of 100,000"), "| **missed** by 1.5× (p50 ×3.00 per 10×) |")
	require.Contains(t, find("retrieval p99 over HTTP"), "| 394 ms (the load acknowledged at 1,995 events/s) | ≤ 2× the idle p99 and ≤ 50 ms | **missed** by 7.9× | the same retrievals with nothing ingesting: 78.7 ms | 5.00× |")
	require.Contains(t, find("recall@10 against exact search, one tenant"), "| not measured in this run |")
	require.Contains(t, find("recall@10 of dense vectors on the HNSW index against exact ranking, one tenant of 20,000 records, a dense model of 384 dimensions"),
		"| 0.970 (the vector half alone: 0.960) | ≥ 0.95 | met | — | — |")
	require.Contains(t, find("retrieval p50 / p99 with dense vectors on the HNSW index"),
		"| 12.0 ms / 30.0 ms | ≤ the exact search | met | exact ranking of the tenant's vectors: 24.0 ms / 48.0 ms | 0.50× |")
	require.Contains(t, find("consolidation: a first pass over 10,000 closed episodes, 100 errors"), "| not measured in this run | < 60 s (set for 100,000 episodes) |")
	require.Contains(t, find("consolidation: the same first pass on the same database never analysed"), "| not measured in this run |")
}

// The never-analysed pass is held to twice the analysed one, which is its
// floor.
func TestReportNeverAnalysed(t *testing.T) {
	row := func(full, never float64) string {
		r := Report{Sizes: presets["quick"], Results: Results{"Consolidate/full": {"sec/op": full}, "Consolidate/never-analyzed": {"sec/op": never}}}
		for _, l := range strings.Split(r.Table(), "\n") {
			if strings.HasPrefix(l, "| consolidation: the same first pass on the same database never analysed") {
				return l
			}
		}
		t.Fatalf("no never-analysed row in\n%s", r.Table())
		return ""
	}
	require.Contains(t, row(10, 13), "| 13.0 s | ≤ 2× the pass on the analysed database | met | the same pass, analysed: 10.0 s | 1.30× |")
	require.Contains(t, row(10, 600), "| 600.0 s | ≤ 2× the pass on the analysed database | **missed** by 30.0× | the same pass, analysed: 10.0 s | 60.00× |")
	only := Report{Sizes: presets["quick"], Results: Results{"Consolidate/never-analyzed": {"sec/op": 5}}}
	require.Contains(t, only.Table(), "| 5.0 s | ≤ 2× the pass on the analysed database | — | — | — |", "no analysed pass, no status")
}

// A report rendered again from its raw output (--from) is the report the
// run wrote.
func TestReportFromRaw(t *testing.T) {
	r := Report{Sizes: presets["quick"], Preset: "quick", Results: Results{}, Took: 95 * time.Minute, Autovacuum: "on",
		Machine: "2 cores (linux/amd64), 2026-12-07", Commit: "a5e7857+changes"}
	raw := r.RawHeader([]byte(sample))
	require.NoError(t, r.ReadRaw(bytes.NewReader(raw)))

	again := Report{Sizes: presets["quick"], Preset: "quick"}
	require.NoError(t, again.ReadRaw(bytes.NewReader(raw)))
	require.Equal(t, r.Markdown("docs/bench/report.txt"), again.Markdown("docs/bench/report.txt"))
	require.Contains(t, again.Block(), "at commit a5e7857+changes on 2 cores (linux/amd64), 2026-12-07, PostgreSQL's autovacuum on, in 1h35m0s:")
	require.Contains(t, again.Markdown("docs/bench/report.txt"), "[report.txt](report.txt)")

	// Two runs' outputs one after another read as one run of both.
	later := Report{Took: 5 * time.Minute, Autovacuum: "on", Machine: "2 cores (linux/amd64), 2026-12-08", Commit: "b00c0de"}
	both := append(append([]byte{}, raw...), later.RawHeader([]byte("BenchmarkSweep/first-2 1 1000 ns/op 120000 records/s\n"))...)
	var merged Report
	require.NoError(t, merged.ReadRaw(bytes.NewReader(both)))
	require.Equal(t, 100*time.Minute, merged.Took)
	require.Equal(t, "a5e7857+changes; b00c0de", merged.Commit)
	require.Equal(t, "on", merged.Autovacuum)
	require.InDelta(t, 120000, merged.Results["Sweep/first"]["records/s"], 0)
	require.InDelta(t, 4000, merged.Results["Ingest/long-threads"]["events/s"], 0)
}

func TestReportWhy(t *testing.T) {
	rs := Results{}
	require.NoError(t, rs.Read(strings.NewReader(sample)))
	r := Report{Sizes: presets["quick"], Preset: "quick", Results: rs}
	why := r.Why()
	// Each missed figure of the run, in the table's order, with its
	// reason; no met figure and no figure the run did not measure.
	require.Contains(t, why, "- **ingestion, classified end to end, 2,000 threads, jobs off**: "+reason("ingest/long-threads")+"\n")
	require.Contains(t, why, "- **daemon resident memory, the most over the ingestion runs**: ")
	require.Contains(t, why, "- **retrieval p50, records of all types across 100 tenants**: "+reason("retrieve/p50")+"\n")
	require.Less(t, strings.Index(why, "ingestion, classified"), strings.Index(why, "retrieval p50"))
	require.NotContains(t, why, "acknowledgement p99", "met in the sample")
	require.NotContains(t, why, "consolidation", "not measured in the sample")
	require.Contains(t, r.Block(), why)

	met := Report{Sizes: presets["quick"], Preset: "quick", Results: Results{"Ingest/offered-10k": {"ack-p99-ms": 12}}}
	require.Empty(t, met.Why(), "nothing missed, nothing to explain")
}

// TestEveryReasonHasItsRow: each reason names a row the table prints (a
// renamed row would leave its reason behind, and print none).
func TestEveryReasonHasItsRow(t *testing.T) {
	keys := map[string]bool{}
	for _, x := range (Report{Sizes: presets["quick"], Results: Results{"RetrieveScale/records=1000": {"p50-ms": 1}}}).rows() {
		keys[x.key] = true
	}
	for k := range whyMissed {
		require.True(t, keys[k], "whyMissed[%q] names no row", k)
	}
}
