-- Retrieval (substrate RFC §15.8): what lexical search reads (a tsvector of
-- each record's searchable text, kept by trigger, and the per-tenant term
-- statistics BM25 needs), the advisory vector index (§15.3) and the
-- retrieval log that feedback refers to.

-- +goose Up
-- btree_gin lets one GIN index hold a record's tenant and type next to its
-- lexemes, so that those filters run inside the index scan: a small tenant
-- in a large database still gets its full top-k.
CREATE EXTENSION IF NOT EXISTS btree_gin WITH SCHEMA public;

-- +goose StatementBegin
-- engram_path_text joins the strings a JSON path finds (lax: a missing key
-- or a non-array finds nothing).
CREATE FUNCTION engram_path_text(doc jsonb, path jsonpath) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT string_agg(x #>> '{}', ' ') FROM jsonb_path_query(doc, path) AS x
$$;

-- engram_search_text is the text of a record that lexical search and the
-- embedders see: what a task would be matched on, by type. An episode's
-- appended timeline entries are added by the trigger below.
CREATE FUNCTION engram_search_text(type text, payload jsonb, tags text[]) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT concat_ws(' ',
        CASE type
        WHEN 'semantic' THEN concat_ws(' ', payload ->> 'subject', payload ->> 'predicate',
            CASE jsonb_typeof(payload -> 'object') WHEN 'string' THEN payload ->> 'object' ELSE engram_path_text(payload, 'strict $.object.**') END)
        WHEN 'competence' THEN concat_ws(' ', payload ->> 'skill_name',
            engram_path_text(payload, '$.triggers[*].signal'),
            engram_path_text(payload, '$.recipe[*].step'), engram_path_text(payload, '$.recipe[*].tool'),
            engram_path_text(payload, '$.failure_modes[*]'), engram_path_text(payload, '$.fallbacks[*]'),
            engram_path_text(payload, '$.required_tools[*]'))
        WHEN 'plan_graph' THEN concat_ws(' ', payload ->> 'intent', payload ->> 'plan_id',
            engram_path_text(payload, '$.nodes[*].op'))
        WHEN 'working' THEN concat_ws(' ', payload ->> 'context_summary',
            engram_path_text(payload, '$.next_actions[*]'), engram_path_text(payload, '$.open_questions[*]'))
        WHEN 'episodic' THEN concat_ws(' ', engram_path_text(payload, '$.timeline[*].summary'),
            payload ->> 'outcome', engram_path_text(payload, '$.tool_graph[*].tool'))
        END,
        array_to_string(tags, ' '))
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- engram_conditions_hold reports whether a record's conditions (§7) do not
-- contradict a task's context: no key both name with different values. A
-- key the task does not name is unknown, not violated.
CREATE FUNCTION engram_conditions_hold(conds jsonb, ctx jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT NOT EXISTS (
        SELECT 1 FROM jsonb_each(CASE jsonb_typeof(conds) WHEN 'object' THEN conds ELSE '{}' END) AS c
        WHERE ctx ? c.key AND ctx -> c.key <> c.value)
$$;

-- engram_fact_applies reports whether a fact's validity (§15A.8) holds in a
-- task's context at a time: its conditions hold and the time is in its box.
CREATE FUNCTION engram_fact_applies(payload jsonb, ctx jsonb, at timestamptz) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT engram_conditions_hold(payload #> '{validity,conditions}', ctx)
        AND coalesce((payload #>> '{validity,start}')::timestamptz <= at, true)
        AND coalesce((payload #>> '{validity,end}')::timestamptz >= at, true)
$$;

-- engram_procedure_applies reports whether a procedure (§15A.9) has a
-- trigger whose conditions hold in a task's context; one without triggers
-- applies everywhere.
CREATE FUNCTION engram_procedure_applies(payload jsonb, ctx jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(jsonb_array_length(payload -> 'triggers'), 0) = 0 OR EXISTS (
        SELECT 1 FROM jsonb_array_elements(payload -> 'triggers') AS t
        WHERE engram_conditions_hold(t -> 'conditions', ctx))
$$;
-- +goose StatementEnd

ALTER TABLE records ADD COLUMN tsv tsvector;

-- +goose StatementBegin
-- The tsvector follows the payload, so no write path can forget it. An
-- episode's entries live in episode_entries (migration 004); their
-- summaries join its text whenever its payload is revised, which closing it
-- with an outcome does. The text is capped: an episode of thousands of
-- events is matched on its first 64 KiB.
CREATE FUNCTION engram_record_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    txt text := engram_search_text(NEW.type, NEW.payload, NEW.tags);
BEGIN
    IF NEW.type = 'episodic' AND TG_OP = 'UPDATE' THEN
        txt := concat_ws(' ', txt, (
            SELECT string_agg(concat_ws(' ', entry ->> 'summary', entry ->> 'tool'), ' ' ORDER BY seq)
            FROM episode_entries WHERE tenant_id = NEW.tenant_id AND record_id = NEW.id));
    END IF;
    NEW.tsv := to_tsvector('english', left(txt, 65536));
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER records_tsv BEFORE INSERT OR UPDATE OF payload, tags ON records
    FOR EACH ROW EXECUTE FUNCTION engram_record_tsv();

UPDATE records SET tags = tags;
ALTER TABLE records ALTER COLUMN tsv SET NOT NULL;

-- One key for tenant and type: its posting list is exactly the records a
-- layer's search may return, where separate tenant and type keys would
-- each be intersected whole (a type's list spans every tenant).
-- Sensitivity is checked on the rows found. fastupdate off: with it, new
-- entries wait in a pending list (up to 4 MB) that every search reads from
-- end to end; retrieval latency matters more than the cost of a record
-- write, and records are written far less often than events.
ALTER TABLE records ADD COLUMN search_key text GENERATED ALWAYS AS (tenant_id || '/' || type) STORED;
CREATE INDEX records_search ON records USING gin (search_key, tsv) WITH (fastupdate = off)
    WHERE status IN ('active', 'contested');

-- BM25's inverse document frequencies (§15.8): per tenant, how many live
-- records hold each lexeme, and how many there are with their mean length.
-- Derived, refreshed by the retrieval_stats job; a tenant without them is
-- ranked with every term weighted alike.
CREATE TABLE lexeme_stats (
    tenant_id text   NOT NULL,
    lexeme    text   NOT NULL,
    df        bigint NOT NULL CHECK (df > 0),
    PRIMARY KEY (tenant_id, lexeme)
);
CREATE TABLE corpus_stats (
    tenant_id   text             PRIMARY KEY,
    docs        bigint           NOT NULL CHECK (docs >= 0),
    avg_len     double precision NOT NULL CHECK (avg_len > 0),
    computed_at timestamptz      NOT NULL
);

-- The advisory vector index (§15.3): one vector per live record and model,
-- written asynchronously by the embedding backfill job. Type and
-- sensitivity are copied from the record so that filters run inside the
-- index scan; losing every row loses nothing but vector similarity.
-- Partitioned by tenant: one HNSW graph per partition, so that a search,
-- pruned to its tenant's partition, walks a graph in which a useful share
-- of the vectors pass its filters (in one graph over every tenant, a small
-- tenant's search visits thousands of others' vectors for each of its own).
CREATE TABLE record_vectors (
    tenant_id        text        NOT NULL,
    record_id        uuid        NOT NULL,
    model            text        NOT NULL,
    type             text        NOT NULL,
    sensitivity_rank smallint    NOT NULL,
    record_version   integer     NOT NULL,
    sparse           sparsevec(1048576),
    dense            vector,
    embedded_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, record_id, model),
    FOREIGN KEY (tenant_id, record_id) REFERENCES records (tenant_id, id) ON DELETE CASCADE,
    CHECK ((sparse IS NULL) <> (dense IS NULL))
) PARTITION BY HASH (tenant_id);

-- +goose StatementBegin
DO $$
BEGIN
    FOR i IN 0..15 LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF record_vectors FOR VALUES WITH (MODULUS 16, REMAINDER %s)',
            'record_vectors_' || i, i);
    END LOOP;
END;
$$;
-- +goose StatementEnd

CREATE INDEX record_vectors_by_tenant ON record_vectors (tenant_id, model, type);
-- The built-in embedder's vectors. Dense vectors (an OpenAI-compatible
-- model) have no index yet: they are compared exactly, a tenant's and
-- type's at a time.
CREATE INDEX record_vectors_sparse ON record_vectors USING hnsw (sparse sparsevec_cosine_ops)
    WHERE sparse IS NOT NULL;

-- How many of a tenant's embedded records hold each feature of the lexical
-- embedder: its IDF weights documents. Written by the backfill, the only
-- writer, and rebuilt by reindex.
CREATE TABLE embedding_df (
    tenant_id text    NOT NULL,
    model     text    NOT NULL,
    feature   integer NOT NULL,
    df        bigint  NOT NULL CHECK (df > 0),
    PRIMARY KEY (tenant_id, model, feature)
);

-- +goose StatementBegin
-- A record that leaves the active set leaves the vector index; one whose
-- sensitivity changes takes it along.
CREATE FUNCTION engram_record_vectors_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status NOT IN ('active', 'contested') THEN
        DELETE FROM record_vectors WHERE tenant_id = OLD.tenant_id AND record_id = OLD.id;
    ELSIF NEW.sensitivity_rank <> OLD.sensitivity_rank THEN
        UPDATE record_vectors SET sensitivity_rank = NEW.sensitivity_rank
        WHERE tenant_id = OLD.tenant_id AND record_id = OLD.id;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER records_vectors_follow AFTER UPDATE OF status, sensitivity ON records
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.sensitivity IS DISTINCT FROM NEW.sensitivity)
    EXECUTE FUNCTION engram_record_vectors_follow();

-- The retrieval log (§14, §15.6): what each answer returned, so feedback on
-- a retrieval id reinforces exactly those records and usefulness can be
-- measured. Ids, counts and the caller: never the task's text.
CREATE TABLE retrievals (
    tenant_id  text        NOT NULL REFERENCES tenants (id),
    id         uuid        NOT NULL,
    at         timestamptz NOT NULL,
    agent_id   text        NOT NULL DEFAULT '',
    thread_id  text        NOT NULL DEFAULT '',
    record_ids uuid[]      NOT NULL,
    withheld   integer     NOT NULL DEFAULT 0,
    lexical_only boolean   NOT NULL DEFAULT false,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX retrievals_by_time ON retrievals (at);

-- +goose Down
DROP TABLE retrievals;
DROP TRIGGER records_vectors_follow ON records;
DROP FUNCTION engram_record_vectors_follow;
DROP TABLE embedding_df, record_vectors, corpus_stats, lexeme_stats;
DROP INDEX records_search;
DROP TRIGGER records_tsv ON records;
DROP FUNCTION engram_record_tsv;
ALTER TABLE records DROP COLUMN search_key, DROP COLUMN tsv;
DROP FUNCTION engram_procedure_applies, engram_fact_applies, engram_conditions_hold, engram_search_text, engram_path_text;
