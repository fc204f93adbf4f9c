-- Encryption at rest (substrate RFC §15.9: "Implementations MUST support
-- encryption at rest"; "Sensitive payloads MAY be encrypted separately from
-- metadata"). Each tenant has data keys (AES-256), stored here only wrapped
-- by a master key the daemon holds (its configuration or a file), never in
-- the clear. The newest version of a tenant's data key seals new values;
-- older, retired versions only open what may still be sealed under them.
-- master_key_id names the master key that wraps a row by a digest of it,
-- so a daemon started with the wrong master key can say which is missing.
--
-- A sealed value (a record's payload, an episode entry, a staged event) is
-- a JSON object with a member "sealed": {"key": <data key version>,
-- "data": <base64 nonce || AES-256-GCM ciphertext>} (package seal).

-- +goose Up
CREATE TABLE tenant_data_keys (
    tenant_id     text        NOT NULL CHECK (tenant_id <> ''),
    version       integer     NOT NULL CHECK (version >= 1),
    master_key_id text        NOT NULL CHECK (master_key_id <> ''),
    wrapped       bytea       NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    rewrapped_at  timestamptz,
    retired_at    timestamptz,
    PRIMARY KEY (tenant_id, version)
);

-- +goose StatementBegin
-- As migration 013, with two exceptions for sealed payloads.
--  * An episode's payload only grows (§5, §15A.2), which this trigger checks
--    on its JSON. A sealed payload is ciphertext the trigger cannot read: the
--    write path holds the rule on the plaintext before sealing, and the
--    trigger checks identity and versions only.
--  * Re-sealing under a new data key (`engram keys rotate-data`) changes the
--    ciphertext of a payload and nothing else, without a new version: a
--    transaction that says so (SET LOCAL engram.reseal = 'on') may.
CREATE OR REPLACE FUNCTION engram_record_revision() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    k text;
    n integer;
    own constant text[] := ARRAY['timeline', 'tool_graph', 'summary', 'compressed_at'];
    sealed boolean := OLD.payload ? 'sealed' OR NEW.payload ? 'sealed';
    resealed boolean := false;
BEGIN
    IF NEW.tenant_id <> OLD.tenant_id OR NEW.id <> OLD.id OR NEW.type <> OLD.type
       OR NEW.created_at <> OLD.created_at THEN
        RAISE EXCEPTION 'record %: identity is immutable', OLD.id USING ERRCODE = 'restrict_violation';
    END IF;
    IF NEW.version <> OLD.version AND NEW.version <> OLD.version + 1 THEN
        RAISE EXCEPTION 'record %: version must advance by one (% to %)', OLD.id, OLD.version, NEW.version
            USING ERRCODE = 'restrict_violation';
    END IF;
    IF NEW.version = OLD.version AND current_setting('engram.reseal', true) = 'on'
       AND OLD.payload ? 'sealed' AND NEW.payload ? 'sealed'
       AND (NEW.payload - 'sealed') = (OLD.payload - 'sealed') THEN
        resealed := true;
    END IF;
    IF NEW.version = OLD.version AND (
           (NEW.payload IS DISTINCT FROM OLD.payload AND NOT resealed) OR NEW.status IS DISTINCT FROM OLD.status
        OR NEW.sensitivity IS DISTINCT FROM OLD.sensitivity OR NEW.confidence IS DISTINCT FROM OLD.confidence
        OR NEW.scope IS DISTINCT FROM OLD.scope OR NEW.tags IS DISTINCT FROM OLD.tags
        OR NEW.provenance IS DISTINCT FROM OLD.provenance) THEN
        RAISE EXCEPTION 'record %: a revision must advance the version', OLD.id USING ERRCODE = 'restrict_violation';
    END IF;
    IF sealed THEN
        RETURN NEW;
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
-- As migration 013, and a re-sealing transaction (engram.reseal = 'on') may
-- replace the ciphertext of a sealed version snapshot or episode entry with
-- the same value sealed under a new data key: nothing else of the row.
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
    -- Erasure on demand (migration 020, write-path RFC §12.10.2).
    IF TG_OP = 'DELETE' AND TG_TABLE_NAME IN ('record_versions', 'episode_entries', 'audit_log')
       AND current_setting('engram.erase', true) = 'on' THEN
        RETURN OLD;
    END IF;
    -- Nested: a condition naming a column of one table is not planned
    -- for the other's rows.
    IF TG_OP = 'UPDATE' AND current_setting('engram.reseal', true) = 'on' THEN
        IF TG_TABLE_NAME = 'record_versions' THEN
            IF OLD.snapshot -> 'payload' ? 'sealed' AND NEW.snapshot -> 'payload' ? 'sealed'
               AND (NEW.snapshot -> 'payload') - 'sealed' = (OLD.snapshot -> 'payload') - 'sealed'
               AND NEW.snapshot - 'payload' = OLD.snapshot - 'payload'
               AND (NEW.tenant_id, NEW.record_id, NEW.version, NEW.recorded_at)
                   = (OLD.tenant_id, OLD.record_id, OLD.version, OLD.recorded_at) THEN
                RETURN NEW;
            END IF;
        ELSIF TG_TABLE_NAME = 'episode_entries' THEN
            IF OLD.entry ? 'sealed' AND NEW.entry ? 'sealed'
               AND (NEW.entry - 'sealed') = (OLD.entry - 'sealed')
               AND (NEW.tenant_id, NEW.record_id, NEW.seq, NEW.part, NEW.appended_at)
                   = (OLD.tenant_id, OLD.record_id, OLD.seq, OLD.part, OLD.appended_at) THEN
                RETURN NEW;
            END IF;
        END IF;
    END IF;
    RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- As migration 013, and a sealed payload's searchable text is what it keeps
-- in the clear: a fact's subject and predicate, an episode's outcome, and
-- every record's tags. Its sealed words are not searchable: a search index
-- of them would hold them in the clear (see the README, "Encryption at
-- rest").
CREATE OR REPLACE FUNCTION engram_search_text(type text, payload jsonb, tags text[]) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT concat_ws(' ',
        CASE
        WHEN payload ? 'sealed' THEN concat_ws(' ', payload ->> 'subject', payload ->> 'predicate', payload ->> 'outcome')
        ELSE CASE type
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
        END END,
        array_to_string(tags, ' '))
$$;
-- +goose StatementEnd

-- +goose Down
-- The functions keep their sealed-payload branches, which do nothing where
-- no payload is sealed; a database with sealed payloads cannot go down
-- without the keys this table holds.
DROP TABLE tenant_data_keys;
