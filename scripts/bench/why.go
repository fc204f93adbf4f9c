package main

import "cmp"

// whyMeasured says when and on what the reasons below were profiled.
const whyMeasured = "profiled on 2026-11-26 on the 2-core machine of the table"

// whyMissed is, for each row that can miss its target (by row key), the
// reason its profile showed: what takes the time, and what would have to
// change. They are the findings of profiling, written down; a run prints
// the one of each figure it measured as missed. Keep them true: when a
// change moves a figure, profile it again and rewrite its reason.
var whyMissed = map[string]string{
	"ingest/long-threads": "in goroutine samples of the policy partitions, a batch's time goes to writing new threads' records 25%, timeline entries 22%, settling 8%, audit entries 8%, validating records 8%; engramd itself used 22–36% of one core. " +
		"The rest is PostgreSQL writing the same events three times over (the staged event, its timeline entry, the records it touches, each with triggers and indexes) on the same two cores: `EXPLAIN ANALYZE` of 2,000 record inserts took 0.65–1.45 ms a record, the version-snapshot trigger 17–33% of it, the search-text trigger about 20%, the rest the records table's 14 indexes (three GIN). " +
		"Twenty thousand a second would need fewer rows and indexes written per event, not a faster daemon.",
	"ingest/short-threads": "each new thread writes two records (its episode and working memory) with their audit entries and stamp, where an event of a long thread writes one timeline entry: the partitions' goroutine samples were in writing those (`store.InsertNew`) 60% of the time and in validating them against their schemas 15%; each record insert costs 0.65–1.45 ms in PostgreSQL (triggers and 14 indexes, as for the first row).",
	"ingest/jobs-on": "the embedding backfill's share of PostgreSQL, and single runs' spread. Sampling `pg_stat_activity` every 50 ms, the backfill's two statements (choosing a batch, inserting its vectors) were 10–21% of the active samples. " +
		"Against the first row, the case measured 58% and 107% in two `make bench` runs of one tree, and 94% and 131% in one interleaved triple (`ENGRAM_BENCH_EVENTS=60000 go test -run='^$' -bench='^BenchmarkIngest$/jobs-on' -benchtime=1x ./cmd/engramd/`), where the first row itself measured 2,150 events/s, against 2,861 and 3,201 in those two runs.",
	"ingest/ack": "throughput, not stalls: the daemon acknowledges fewer events than the 10,000 offered, so the queue grows for the whole run and p99 is most of its length. " +
		"Staging is CPU-bound: 120 µs of engramd's CPU an event (preparing a line is 94% of the stream handler's: the JSON Schema validator 44% of that, redaction 16%) and 70 µs of PostgreSQL's; with classification held off from another session the same load was acknowledged 1.5–1.9× faster. " +
		"The streams' commits also wait for a pool connection (20 s in all over 20,000 events with pgx's default of 4 on two cores). With 16, acknowledgement p99 fell to 770 ms (9,461 events/s acknowledged), but retrieval during ingestion got worse: its p99 went from 313 to 840 ms (medians of three interleaved pairs). So the default stays, and `pool_max_conns` in the database URL is the operator's choice. " +
		"What is left is CPU: classification yielding to busy streams, and a cheaper event validation than the generic validator.",
	"retrieve/p50": "a retrieval is four statements, one a layer (episodes, facts, procedures, plans), each a hybrid search: BM25 over the records' and timeline entries' text, and the built-in embedder's sparse vectors ranked exactly among those sharing a rare feature. " +
		"Timed one layer at a time over the same records, each costs about what the plain full-text query costs for all types at once (p50 on a loaded machine: episodes 10.5 ms, facts 6.2, procedures 6.1, plans 4.6; the lexical half a little over half of each), " +
		"and the four, sent at once on their own connections, took as long as one after another (28.3 against 29.5 ms): two cores run two of them at a time, and PostgreSQL's share of the machine is the bound. " +
		"The rest, about a quarter of the figure (the bare SQL beside it), is the daemon's own CPU: in pprof, ranking is two thirds of it (procedures' triggers matched against the task), then reading the found records. " +
		"The target is at the floor of one plain full-text query on this machine; reaching it would take the four layers' candidates from one index scan, which the layers' separate limits and filters do not allow today.",
	"retrieve/p99": "the slowest tasks are those whose rarest word is common (the task texts follow a Zipf-like vocabulary): the lexical half's candidates are then the thousands of passages holding it, each scored with BM25; the plain full-text floor has the same tail for the same reason.",
	"decay/sweep": "the daemon's CPU is a small share (2.4 s of CPU over a 97 s run); PostgreSQL's time splits about evenly between reading the records (0.74 s of a first sweep), expiring the 1% that faded (0.74 s: about 0.7 ms a record in the version-snapshot, vector and salience triggers) and writing 99,000 materialised saliences (1.08 s). " +
		"Reading the next batch while writing the last did not help on two busy cores, and was reverted. What would: cheaper expiry triggers, and salience in a narrow table of its own.",
	"decay/feedback-facts": "the time is PostgreSQL's: only about half the salience updates stay on their page (heap-only), and each of the others writes an entry into all 16 of the records table's indexes (the `UPDATE` 1.4–4.5 s on a loaded machine); then the records' lock (0.4–0.5 s, its sort spilling to disk) and the feedback rows (0.4–0.6 s, half of it the per-row foreign-key check). " +
		"A lower fill factor made 84% of the updates heap-only but grew the table by 27%, which slowed the sweep's scan more, so it was not kept; salience in a narrow table of its own would make these updates cheap.",
	"decay/feedback-procedures": "each procedure's statistics live in its payload, which indexes read, so every revision writes a new entry into all 16 of the records table's indexes, two of them GIN (`records_search`, `records_evidence_refs`): dropping those two in a test transaction cut a 5,000-row update from 3.1 to 0.8 s; the per-row version-snapshot trigger is about a quarter more. " +
		"Recomputing the search text, 3.5 s of it, is gone (a revision that changes no searchable text keeps it: migration 027), and the agents' outcome counts no longer read the records a second time. What is left needs the statistics out of the indexed payload.",
	"consolidate/incremental": "the 1,000 new episodes touch all 100 errors, and a procedure is derived again from every episode of its group (shared templates, conditions, windowed support), which only the raw events hold: the pass reads back the whole window of the latest 10,000 episodes. " +
		"In `EXPLAIN (ANALYZE, BUFFERS)` that read is one statement of about 110,000 index lookups into the staged events and a sort of 100,000 rows spilled to disk, 25–45% of the pass's SQL time; in pprof, reading and learning the episodes again is most of the daemon's CPU (the error signatures' regular expressions 15%). " +
		"Then 200 revisions (100 procedures, 100 plans, each with about 100 evidence references) at about ten round trips each. " +
		"Reaching the target needs each episode's learned features (group key, reduced steps, trigger values, graph) kept once when first read, so that a pass regroups them instead of the events, and amendments batched in the write path as creations are.",
	"retrieve/while-ingesting": "two costs, each measured. The tenant's own records: with nothing ingesting, the same retrievals took p50 55 ms and p99 192 ms on a loaded machine (the floor column measures it in each run): its facts come from a 2,000-word vocabulary, so each task word is held by hundreds of them, and in `EXPLAIN (ANALYZE, BUFFERS)` the facts layer scores about 1,000 lexical candidates and ranks about 600 vectors. " +
		"Then the cores: sampling `pg_stat_activity` every 50 ms during the load, the search statements were on CPU in 76% of samples, reading data in 18%, waiting for a buffer mapping in 6%, and never for a lock; classifying 2,000 events a second takes most of two cores, so each of the four layer statements waits its turn for one.",
	"dense/latency":  "at this size the two cost about the same: a tenant's 20,000 records hold 2,000–8,000 vectors of a type, and in `EXPLAIN (ANALYZE, BUFFERS)` walking the HNSW graph for the nearest 160 and ranking them all exactly took about as long. The row falls either side of its target from run to run (0.94×, 0.95× and 1.04× in three runs). Exact ranking grows with the tenant and a walk does not, which is why tenants switch to the index only at `dense_index.min_records` (10,000 records of a type).",
	"retrieve/scale": "a larger tenant brings more candidates per task word to score; see the per-layer costs of the retrieval p50 row.",
}

// reason is the row's reason, or says there is none yet.
func reason(key string) string { return cmp.Or(whyMissed[key], "not profiled yet.") }
