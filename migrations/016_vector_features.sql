-- The built-in embedder's vectors are a weighted match of hashed features
-- (word unigrams, bigrams, character trigrams): a record shares no feature
-- with a task's has a similarity of zero with it. So the vector half of a
-- search selects its candidates on an inverted index of the features, as
-- the lexical half does on lexemes, and ranks exactly (`<=>`) only those:
-- the time of a lexical search, where an exact ranking of a tenant's every
-- vector grows with the tenant, and an HNSW walk over sparse vectors goes
-- far for a good top-k (substrate RFC §15.3: the index is advisory; issue
-- 13).

-- +goose Up
-- +goose StatementBegin
-- engram_sparse_features is the 0-based indices of a sparse vector's
-- non-zero elements, as the embedder numbers its features (pgvector's text
-- form numbers them from 1). A vector of none has none (NULL).
CREATE FUNCTION engram_sparse_features(v sparsevec) RETURNS int4[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT array_agg(split_part(e, ':', 1)::int4 - 1)
    FROM unnest(string_to_array(btrim(split_part(v::text, '/', 1), '{}'), ',')) AS e
$$;
-- +goose StatementEnd

-- Derived from the vector, so that no writer can forget them. search_key
-- is one GIN key for tenant, model and type: its posting list is exactly
-- the vectors a layer's search may compare (separate keys would each be
-- intersected whole, as records_search's comment says).
ALTER TABLE record_vectors
    ADD COLUMN features int4[] GENERATED ALWAYS AS (engram_sparse_features(sparse)) STORED,
    ADD COLUMN search_key text GENERATED ALWAYS AS (tenant_id || '/' || model || '/' || type) STORED;

-- No pending list, for the reason records_search has none (migration 005).
CREATE INDEX record_vectors_features ON record_vectors USING gin (search_key, features) WITH (fastupdate = off)
    WHERE sparse IS NOT NULL;

-- The HNSW graph over the sparse vectors is no longer read, and every
-- vector written paid for a graph insertion.
DROP INDEX record_vectors_sparse;

-- +goose StatementBegin
-- engram_record_conditions is the conditions (§7) a record applies under,
-- as one JSON object, so that a search checks them with two
-- concatenations rather than a walk of the payload per candidate (measured:
-- 20 µs a procedure, more than the rest of its search): a fact's validity
-- conditions; a procedure's triggers' when they all name the same ones (it
-- applies wherever one trigger's hold), none when it has no trigger or one
-- without conditions; NULL when its triggers name different ones, which
-- the search checks on the payload as before. Other types apply everywhere.
CREATE FUNCTION engram_record_conditions(type text, payload jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE type
        WHEN 'semantic' THEN CASE jsonb_typeof(payload #> '{validity,conditions}')
            WHEN 'object' THEN payload #> '{validity,conditions}' ELSE '{}' END
        WHEN 'competence' THEN (
            SELECT CASE WHEN count(*) = 0 OR bool_or(c = '{}') THEN '{}'
                WHEN count(DISTINCT c) = 1 THEN (array_agg(c))[1] END
            FROM (
                SELECT CASE jsonb_typeof(t -> 'conditions') WHEN 'object' THEN t -> 'conditions' ELSE '{}' END AS c
                FROM jsonb_array_elements(CASE jsonb_typeof(payload -> 'triggers') WHEN 'array' THEN payload -> 'triggers' ELSE '[]' END) AS t
            ) AS triggers)
        ELSE '{}' END
$$;
-- +goose StatementEnd

-- A record's conditions hold in a task's context when no key names a
-- different value in each: when conditions || context equals
-- context || conditions (engram_conditions_hold, without its walk).
ALTER TABLE records ADD COLUMN conditions jsonb GENERATED ALWAYS AS (engram_record_conditions(type, payload)) STORED;

-- +goose Down
ALTER TABLE records DROP COLUMN conditions;
DROP FUNCTION engram_record_conditions;
DROP INDEX record_vectors_features;
CREATE INDEX record_vectors_sparse ON record_vectors USING hnsw (sparse sparsevec_cosine_ops)
    WHERE sparse IS NOT NULL;
ALTER TABLE record_vectors DROP COLUMN search_key, DROP COLUMN features;
DROP FUNCTION engram_sparse_features;
