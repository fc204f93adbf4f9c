-- Timeline entries are the ingestion plane's main write: every classified
-- event appends one, and with fastupdate off each entry's lexemes went
-- straight into the GIN index, a posting-list update per lexeme (issue 13:
-- timeline appends were 0.30–0.43 partition-seconds of every 5,000 events
-- classified). With a pending list of at most 256 kB, entries are merged
-- into the index in bulk, and a search reads at most that much unsorted —
-- not the 4 MB default that migration 007 avoided. Measured interleaved,
-- BenchmarkIngest/long-threads: 5,645 and 4,919 events/s before, 6,107 and
-- 6,090 after; retrieval while ingesting 2,000 events/s, p50/p99 64/163 ms
-- before, 60/130 ms after.

-- +goose Up
ALTER INDEX episode_entries_search SET (fastupdate = on, gin_pending_list_limit = 256);

-- +goose Down
ALTER INDEX episode_entries_search SET (fastupdate = off);
ALTER INDEX episode_entries_search RESET (gin_pending_list_limit);
