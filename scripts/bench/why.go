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
	"retrieve/p50": "a retrieval is four statements, one a layer (episodes, facts, procedures, plans), each a hybrid search: BM25 over the records' and timeline entries' text, and the built-in embedder's sparse vectors ranked exactly among those sharing a rare feature. " +
		"Timed one layer at a time over the same records, each costs about what the plain full-text query costs for all types at once (p50 on a loaded machine: episodes 7.1 ms, facts 4.0, procedures 4.0, plans 4.6; the lexical half a little over half of each), " +
		"and the four, sent at once on their own connections, took as long as one after another (21.1 against 20.8 ms): two cores run two of them at a time, and PostgreSQL's share of the machine is the bound. " +
		"The rest, about a quarter of the figure (the bare SQL beside it), is the daemon's own CPU: in pprof, ranking is two thirds of it (procedures' triggers matched against the task), then reading the found records. " +
		"The target is at the floor of one plain full-text query on this machine; reaching it would take the four layers' candidates from one index scan, which the layers' separate limits and filters do not allow today.",
	"retrieve/p99": "the slowest tasks are those whose rarest word is common (the task texts follow a Zipf-like vocabulary): the lexical half's candidates are then the thousands of passages holding it, each scored with BM25; the plain full-text floor has the same tail for the same reason.",
	"consolidate/incremental": "the 1,000 new episodes touch all 100 errors, and a procedure is derived again from every episode of its group (shared templates, conditions, windowed support), which only the raw events hold: the pass reads back the whole window of the latest 10,000 episodes. " +
		"In `EXPLAIN (ANALYZE, BUFFERS)` that read is one statement of about 110,000 index lookups into the staged events and a sort of 100,000 rows spilled to disk, 25–45% of the pass's SQL time; in pprof, reading and learning the episodes again is most of the daemon's CPU (the error signatures' regular expressions 15%). " +
		"Then 200 revisions (100 procedures, 100 plans, each with about 100 evidence references) at about ten round trips each. " +
		"Reaching the target needs each episode's learned features (group key, reduced steps, trigger values, graph) kept once when first read, so that a pass regroups them instead of the events, and amendments batched in the write path as creations are.",
	"retrieve/scale": "a larger tenant brings more candidates per task word to score; see the per-layer costs of the retrieval p50 row.",
}

// reason is the row's reason, or says there is none yet.
func reason(key string) string { return cmp.Or(whyMissed[key], "not profiled yet.") }
