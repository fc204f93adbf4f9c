-- Episodic compression (substrate RFC §5, issue 11 item 5): a closed episode
-- old enough and already used as evidence is rewritten as its next version,
-- its timeline cut down to its errors, its outcome, the events live records
-- cite and the steps its derived records stand on, plus a summary; the raw
-- staged events beyond that are released (deleted from candidates). The
-- write path does it in one transaction that says so
-- (SET LOCAL engram.compress = 'on'), the way a purge says engram.purge:
-- only then may an episode's timeline shrink, and only once, to a
-- subsequence of what it was, with every other key unchanged.

-- +goose Up

-- +goose StatementBegin
-- engram_evidence_refs are the refs a record points to: its provenance
-- sources and a fact's evidence. Compression keeps every staged event a
-- live record names here, and finds the episodes live records cite.
CREATE FUNCTION engram_evidence_refs(provenance jsonb, payload jsonb) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT s ->> 'ref') FILTER (WHERE s ->> 'ref' IS NOT NULL), '{}')
    FROM jsonb_array_elements(
        CASE jsonb_typeof(provenance -> 'sources') WHEN 'array' THEN provenance -> 'sources' ELSE '[]' END
        || CASE jsonb_typeof(payload -> 'evidence') WHEN 'array' THEN payload -> 'evidence' ELSE '[]' END) AS s
$$;
-- +goose StatementEnd

-- Live records by the refs they point to (btree_gin, migration 005): "does
-- a live record cite evt://…" is an index probe, not a scan of the tenant.
CREATE INDEX records_evidence_refs ON records USING gin (tenant_id, engram_evidence_refs(provenance, payload))
    WITH (fastupdate = off) WHERE status IN ('active', 'contested');

-- The thread of an episode (is it closed?), and closed episodes in closing
-- order, as compression and the consolidation watermark walk them.
CREATE INDEX threads_by_episode ON threads (tenant_id, episode_id);
CREATE INDEX threads_by_closing ON threads (closed_at, tenant_id, episode_id) WHERE status = 'closed';

-- +goose StatementBegin
-- engram_subsequence reports whether part is whole with elements left out,
-- in order (a null array is empty).
CREATE FUNCTION engram_subsequence(part jsonb, whole jsonb) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    n integer := CASE jsonb_typeof(part) WHEN 'array' THEN jsonb_array_length(part) ELSE 0 END;
    j integer := 0;
    e jsonb;
BEGIN
    IF part IS NOT NULL AND jsonb_typeof(part) <> 'array' THEN
        RETURN false;
    END IF;
    IF n = 0 THEN
        RETURN true;
    END IF;
    IF jsonb_typeof(whole) IS DISTINCT FROM 'array' THEN
        RETURN false;
    END IF;
    FOR e IN SELECT x FROM jsonb_array_elements(whole) AS x LOOP
        IF e = part -> j THEN
            j := j + 1;
            IF j = n THEN
                RETURN true;
            END IF;
        END IF;
    END LOOP;
    RETURN false;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- As migration 001, with one exception: in a compressing transaction an
-- uncompressed episode may become compressed — its timeline and tool graph
-- subsequences of what they were, a summary and compressed_at added, every
-- other key unchanged.
CREATE OR REPLACE FUNCTION engram_record_revision() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    k text;
    n integer;
    own constant text[] := ARRAY['timeline', 'tool_graph', 'summary', 'compressed_at'];
BEGIN
    IF NEW.tenant_id <> OLD.tenant_id OR NEW.id <> OLD.id OR NEW.type <> OLD.type
       OR NEW.created_at <> OLD.created_at THEN
        RAISE EXCEPTION 'record %: identity is immutable', OLD.id USING ERRCODE = 'restrict_violation';
    END IF;
    IF NEW.version <> OLD.version AND NEW.version <> OLD.version + 1 THEN
        RAISE EXCEPTION 'record %: version must advance by one (% to %)', OLD.id, OLD.version, NEW.version
            USING ERRCODE = 'restrict_violation';
    END IF;
    IF NEW.version = OLD.version AND (
           NEW.payload IS DISTINCT FROM OLD.payload OR NEW.status IS DISTINCT FROM OLD.status
        OR NEW.sensitivity IS DISTINCT FROM OLD.sensitivity OR NEW.confidence IS DISTINCT FROM OLD.confidence
        OR NEW.scope IS DISTINCT FROM OLD.scope OR NEW.tags IS DISTINCT FROM OLD.tags
        OR NEW.provenance IS DISTINCT FROM OLD.provenance) THEN
        RAISE EXCEPTION 'record %: a revision must advance the version', OLD.id USING ERRCODE = 'restrict_violation';
    END IF;
    IF OLD.type = 'episodic' AND NEW.payload IS DISTINCT FROM OLD.payload
       AND current_setting('engram.compress', true) = 'on'
       AND NOT (OLD.payload ? 'compressed_at') AND NEW.payload ? 'compressed_at' THEN
        IF (NEW.payload - own) IS DISTINCT FROM (OLD.payload - own)
           OR NOT engram_subsequence(NEW.payload -> 'timeline', OLD.payload -> 'timeline')
           OR NOT engram_subsequence(NEW.payload -> 'tool_graph', OLD.payload -> 'tool_graph') THEN
            RAISE EXCEPTION 'episodic record %: compression only leaves timeline entries out', OLD.id
                USING ERRCODE = 'restrict_violation';
        END IF;
        RETURN NEW;
    END IF;
    IF OLD.type = 'episodic' AND NEW.payload IS DISTINCT FROM OLD.payload THEN
        FOR k IN SELECT jsonb_object_keys(OLD.payload) LOOP
            IF k IN ('timeline', 'tool_graph', 'artifacts') AND jsonb_typeof(OLD.payload -> k) = 'array' THEN
                n := jsonb_array_length(OLD.payload -> k);
                IF jsonb_typeof(NEW.payload -> k) IS DISTINCT FROM 'array'
                   OR jsonb_array_length(NEW.payload -> k) < n
                   OR (n > 0 AND jsonb_path_query_array(NEW.payload -> k, '$[0 to $n]', jsonb_build_object('n', n - 1))
                                 <> OLD.payload -> k) THEN
                    RAISE EXCEPTION 'episodic record %: % is append-only', OLD.id, k USING ERRCODE = 'restrict_violation';
                END IF;
            ELSIF NEW.payload -> k IS DISTINCT FROM OLD.payload -> k THEN
                RAISE EXCEPTION 'episodic record %: % is immutable', OLD.id, k USING ERRCODE = 'restrict_violation';
            END IF;
        END LOOP;
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- As migration 004, and a compressing transaction may delete the entries
-- of the events it releases.
CREATE OR REPLACE FUNCTION engram_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND TG_TABLE_NAME IN ('record_versions', 'episode_entries')
       AND current_setting('engram.purge', true) = 'on' THEN
        RETURN OLD;
    END IF;
    IF TG_OP = 'DELETE' AND TG_TABLE_NAME = 'episode_entries'
       AND current_setting('engram.compress', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- As migration 005, and a compressed episode is found by its summary.
CREATE OR REPLACE FUNCTION engram_search_text(type text, payload jsonb, tags text[]) RETURNS text
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
        WHEN 'episodic' THEN concat_ws(' ', payload ->> 'summary', engram_path_text(payload, '$.timeline[*].summary'),
            payload ->> 'outcome', engram_path_text(payload, '$.tool_graph[*].tool'))
        END,
        array_to_string(tags, ' '))
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION engram_search_text(type text, payload jsonb, tags text[]) RETURNS text
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
CREATE OR REPLACE FUNCTION engram_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND TG_TABLE_NAME IN ('record_versions', 'episode_entries')
       AND current_setting('engram.purge', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION engram_record_revision() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    k text;
    n integer;
BEGIN
    IF NEW.tenant_id <> OLD.tenant_id OR NEW.id <> OLD.id OR NEW.type <> OLD.type
       OR NEW.created_at <> OLD.created_at THEN
        RAISE EXCEPTION 'record %: identity is immutable', OLD.id USING ERRCODE = 'restrict_violation';
    END IF;
    IF NEW.version <> OLD.version AND NEW.version <> OLD.version + 1 THEN
        RAISE EXCEPTION 'record %: version must advance by one (% to %)', OLD.id, OLD.version, NEW.version
            USING ERRCODE = 'restrict_violation';
    END IF;
    IF NEW.version = OLD.version AND (
           NEW.payload IS DISTINCT FROM OLD.payload OR NEW.status IS DISTINCT FROM OLD.status
        OR NEW.sensitivity IS DISTINCT FROM OLD.sensitivity OR NEW.confidence IS DISTINCT FROM OLD.confidence
        OR NEW.scope IS DISTINCT FROM OLD.scope OR NEW.tags IS DISTINCT FROM OLD.tags
        OR NEW.provenance IS DISTINCT FROM OLD.provenance) THEN
        RAISE EXCEPTION 'record %: a revision must advance the version', OLD.id USING ERRCODE = 'restrict_violation';
    END IF;
    IF OLD.type = 'episodic' AND NEW.payload IS DISTINCT FROM OLD.payload THEN
        FOR k IN SELECT jsonb_object_keys(OLD.payload) LOOP
            IF k IN ('timeline', 'tool_graph', 'artifacts') AND jsonb_typeof(OLD.payload -> k) = 'array' THEN
                n := jsonb_array_length(OLD.payload -> k);
                IF jsonb_typeof(NEW.payload -> k) IS DISTINCT FROM 'array'
                   OR jsonb_array_length(NEW.payload -> k) < n
                   OR (n > 0 AND jsonb_path_query_array(NEW.payload -> k, '$[0 to $n]', jsonb_build_object('n', n - 1))
                                 <> OLD.payload -> k) THEN
                    RAISE EXCEPTION 'episodic record %: % is append-only', OLD.id, k USING ERRCODE = 'restrict_violation';
                END IF;
            ELSIF NEW.payload -> k IS DISTINCT FROM OLD.payload -> k THEN
                RAISE EXCEPTION 'episodic record %: % is immutable', OLD.id, k USING ERRCODE = 'restrict_violation';
            END IF;
        END LOOP;
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

DROP INDEX records_evidence_refs, threads_by_episode, threads_by_closing;
DROP FUNCTION engram_subsequence, engram_evidence_refs;
