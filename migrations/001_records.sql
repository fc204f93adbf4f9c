-- The authoritative store (substrate RFC §15.1): tenants, records with their
-- lifecycle in columns and typed payload as JSONB, the append-only version
-- log, relations, the audit log and the content-addressed artifact store.
-- Every invariant the database can hold is held here; store tests prove each.

-- +goose Up
-- pgvector is an advisory index only (§15.3). It lives in public so that a
-- test schema dropped with CASCADE never takes the extension with it.
CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public;

CREATE TABLE tenants (
    id         text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE records (
    tenant_id   text        NOT NULL REFERENCES tenants (id),
    id          uuid        NOT NULL,
    type        text        NOT NULL CHECK (type IN ('episodic', 'working', 'semantic', 'competence', 'plan_graph')),
    status      text        NOT NULL CHECK (status IN ('active', 'contested', 'superseded', 'retracted', 'merged', 'deleted', 'expired')),
    version     integer     NOT NULL CHECK (version >= 1),
    sensitivity text        NOT NULL CHECK (sensitivity IN ('public', 'low', 'medium', 'high', 'hyper')),
    -- Sensitivity as an ordered rank, for trust-gated reads (§13, §15.9).
    sensitivity_rank smallint GENERATED ALWAYS AS (
        CASE sensitivity WHEN 'public' THEN 0 WHEN 'low' THEN 1 WHEN 'medium' THEN 2 WHEN 'high' THEN 3 ELSE 4 END
    ) STORED,
    confidence  double precision NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
    salience    double precision NOT NULL CHECK (salience >= 0),
    scope       text        NOT NULL DEFAULT '',
    tags        text[]      NOT NULL DEFAULT '{}',

    -- Lifecycle (§15A.3, §15A.7).
    decay_curve              text             NOT NULL CHECK (decay_curve IN ('exponential', 'linear', 'custom')),
    decay_half_life_seconds  bigint           NOT NULL CHECK (decay_half_life_seconds > 0),
    decay_floor              double precision NOT NULL DEFAULT 0 CHECK (decay_floor >= 0 AND decay_floor <= 1),
    decay_max_age_seconds    bigint           CHECK (decay_max_age_seconds > 0),
    decay_reinforcement_gain double precision CHECK (decay_reinforcement_gain >= 0),
    decay_points             jsonb,
    last_reinforced_at       timestamptz      NOT NULL,
    pinned                   boolean          NOT NULL DEFAULT false,
    deletion_policy          text             NOT NULL DEFAULT 'auto_prune' CHECK (deletion_policy IN ('auto_prune', 'manual_only', 'never')),
    expires_at               timestamptz,

    provenance  jsonb       NOT NULL,
    payload     jsonb       NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    deleted_at  timestamptz,

    -- A semantic fact's identity (§7): subject, predicate and its validity
    -- without the mode (conditions, start, end). Derived, so never stale.
    subject      text  GENERATED ALWAYS AS (CASE WHEN type = 'semantic' THEN payload ->> 'subject' END) STORED,
    predicate    text  GENERATED ALWAYS AS (CASE WHEN type = 'semantic' THEN payload ->> 'predicate' END) STORED,
    validity_key jsonb GENERATED ALWAYS AS (CASE WHEN type = 'semantic' THEN COALESCE(payload -> 'validity', '{}'::jsonb) - 'mode' END) STORED,

    PRIMARY KEY (tenant_id, id),
    CONSTRAINT records_payload_kind CHECK (payload ->> 'kind' = type),
    CONSTRAINT records_deleted_at CHECK ((status = 'deleted') = (deleted_at IS NOT NULL))
);

-- At most one active semantic fact per (tenant, scope, subject, predicate,
-- condition set): conditional forks with other conditions coexist, and a
-- contradiction must go through supersede, fork or contest (§7, §15.1).
CREATE UNIQUE INDEX records_one_active_fact ON records (tenant_id, scope, subject, predicate, validity_key)
    WHERE type = 'semantic' AND status = 'active';

CREATE INDEX records_by_type ON records (tenant_id, type, status, id);
CREATE INDEX records_by_status ON records (tenant_id, status, id);
CREATE INDEX records_by_fact ON records (tenant_id, subject, predicate) WHERE type = 'semantic';
CREATE INDEX records_by_tag ON records USING gin (tags);

-- The version log: a full snapshot of every revision, written by trigger so
-- no code path can forget it. Point-in-time reads (as_of) come from here.
CREATE TABLE record_versions (
    tenant_id   text        NOT NULL,
    record_id   uuid        NOT NULL,
    version     integer     NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    snapshot    jsonb       NOT NULL,
    PRIMARY KEY (tenant_id, record_id, version),
    FOREIGN KEY (tenant_id, record_id) REFERENCES records (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX record_versions_by_time ON record_versions (tenant_id, recorded_at);

-- Relations are rows in the authoritative store (§15.4). The composite
-- foreign keys keep both ends inside one tenant.
CREATE TABLE relations (
    tenant_id  text        NOT NULL,
    source_id  uuid        NOT NULL,
    predicate  text        NOT NULL CHECK (predicate IN ('supports', 'contradicts', 'derived_from', 'supersedes', 'forked_from', 'merged_into')),
    target_id  uuid        NOT NULL,
    weight     double precision CHECK (weight >= 0 AND weight <= 1),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, source_id, predicate, target_id),
    FOREIGN KEY (tenant_id, source_id) REFERENCES records (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, target_id) REFERENCES records (tenant_id, id) ON DELETE CASCADE,
    CHECK (source_id <> target_id)
);
CREATE INDEX relations_by_target ON relations (tenant_id, target_id);

-- The audit log (§15A.8): who did what to which record, when and why. It
-- names no content, has no foreign key (it outlives purged records) and is
-- append-only.
CREATE TABLE audit_log (
    tenant_id text        NOT NULL REFERENCES tenants (id),
    id        bigint      GENERATED ALWAYS AS IDENTITY,
    record_id uuid,
    action    text        NOT NULL CHECK (action <> ''),
    actor     text        NOT NULL CHECK (actor <> ''),
    at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    version   integer,
    rationale text        NOT NULL DEFAULT '',
    evidence  jsonb       NOT NULL DEFAULT '[]',
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX audit_log_by_record ON audit_log (tenant_id, record_id, id);

-- Content-addressed artifacts (§15.3): the key is the SHA-256 of the content,
-- checked by the database.
CREATE TABLE artifacts (
    tenant_id  text        NOT NULL REFERENCES tenants (id),
    sha256     bytea       NOT NULL,
    media_type text        NOT NULL,
    size       bigint      NOT NULL,
    content    bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, sha256),
    CONSTRAINT artifacts_content_addressed CHECK (sha256 = sha256(content) AND size = octet_length(content))
);

-- +goose StatementBegin
-- Rows of the version log and the audit log are never changed. Version rows
-- are deleted only with their record, by a purge that says so in the
-- transaction (SET LOCAL engram.purge = 'on').
CREATE FUNCTION engram_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND TG_TABLE_NAME = 'record_versions'
       AND current_setting('engram.purge', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER record_versions_append_only BEFORE UPDATE OR DELETE ON record_versions
    FOR EACH ROW EXECUTE FUNCTION engram_append_only();
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION engram_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION engram_append_only();
CREATE TRIGGER record_versions_no_truncate BEFORE TRUNCATE ON record_versions
    FOR EACH STATEMENT EXECUTE FUNCTION engram_append_only();

-- +goose StatementBegin
-- What may change in a record and how: identity never; a revision of
-- content or state bumps the version by exactly one; episodic payloads only
-- grow (§5, §15A.2: "Episodic payloads MUST be append-only").
CREATE FUNCTION engram_record_revision() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE TRIGGER records_revision BEFORE UPDATE ON records
    FOR EACH ROW EXECUTE FUNCTION engram_record_revision();

-- +goose StatementBegin
CREATE FUNCTION engram_record_snapshot() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO record_versions (tenant_id, record_id, version, snapshot)
    VALUES (NEW.tenant_id, NEW.id, NEW.version, to_jsonb(NEW));
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER records_snapshot_insert AFTER INSERT ON records
    FOR EACH ROW EXECUTE FUNCTION engram_record_snapshot();
CREATE TRIGGER records_snapshot_update AFTER UPDATE ON records
    FOR EACH ROW WHEN (NEW.version <> OLD.version) EXECUTE FUNCTION engram_record_snapshot();

-- +goose Down
DROP TABLE artifacts, audit_log, relations, record_versions, records, tenants;
DROP FUNCTION engram_record_snapshot, engram_record_revision, engram_append_only;
