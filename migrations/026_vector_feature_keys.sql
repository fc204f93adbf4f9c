-- The vector half of a search selects the vectors that share a feature
-- with the task's on a GIN index (migration 016). There, a feature's
-- posting list held every vector of the partition with that feature, every
-- tenant, model and type, and each search decoded the lists of its 40–60
-- features whole to intersect them with its tenant's key: the most
-- expensive node of a small tenant's search (issue 13), and one that grows
-- with the partition rather than with the tenant. A feature key carries
-- the search key (tenant, model and type) with the feature, so that each
-- posting list is exactly the vectors a layer's search may compare.

-- +goose Up
-- +goose StatementBegin
-- engram_feature_keys is a vector's features as keys of its search key: the
-- search key's 32-bit hash in the high half, the feature (below 2^31) in
-- the low one. Two search keys may share a hash, so a search checks its
-- key again.
CREATE FUNCTION engram_feature_keys(search_key text, features int4[]) RETURNS int8[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT array_agg((hashtext(search_key)::int8 << 32) | f::int8) FROM unnest(features) AS f
$$;
-- +goose StatementEnd

-- A generated column cannot read another, so both parts are derived from
-- the vector's own columns, as search_key and features are.
ALTER TABLE record_vectors ADD COLUMN feature_keys int8[] GENERATED ALWAYS AS (
    engram_feature_keys(tenant_id || '/' || model || '/' || type, engram_sparse_features(sparse))) STORED;

-- No pending list, for the reason records_search has none (migration 005).
CREATE INDEX record_vectors_feature_keys ON record_vectors USING gin (feature_keys) WITH (fastupdate = off)
    WHERE sparse IS NOT NULL;

DROP INDEX record_vectors_features;

-- +goose Down
CREATE INDEX record_vectors_features ON record_vectors USING gin (search_key, features) WITH (fastupdate = off)
    WHERE sparse IS NOT NULL;
DROP INDEX record_vectors_feature_keys;
ALTER TABLE record_vectors DROP COLUMN feature_keys;
DROP FUNCTION engram_feature_keys;
