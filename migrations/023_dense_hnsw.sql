-- Dense vectors (an OpenAI-compatible model) are searched on an HNSW index
-- for large tenants and ranked exactly for small ones (issue 13). The index
-- itself is not made here: its expression needs the configured model's
-- dimension (dense::vector(N), halfvec(N) above 2,000), which a migration
-- cannot know, so engramd makes it, CONCURRENTLY, for the model it is
-- configured with (store.EnsureDenseIndex). What the search needs from the
-- schema is each tenant's size per record type, to choose between the two
-- paths in Go: a generic plan cannot tell a tenant of a million vectors from
-- one of fifty, and a type rare in a large tenant (500 plans among 100,000
-- records) is cheaper ranked exactly than filtered out of an HNSW walk.

-- +goose Up
-- type_docs is the tenant's live records by type, as {"episodic": n, …},
-- counted with docs by the statistics job.
ALTER TABLE corpus_stats ADD COLUMN type_docs jsonb NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE corpus_stats DROP COLUMN type_docs;
