-- The schema the migrations build, as `pg_dump --schema-only` prints it.
-- Written by `make schema`; `make test` checks it is current. Read it;
-- change the schema with a new migration, never here.
CREATE SCHEMA engram;

CREATE FUNCTION engram_audit_log_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('engram.erase', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE FUNCTION engram_conditions_hold(conds jsonb, ctx jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT NOT EXISTS (
        SELECT 1 FROM jsonb_each(CASE jsonb_typeof(conds) WHEN 'object' THEN conds ELSE '{}' END) AS c
        WHERE ctx ? c.key AND ctx -> c.key <> c.value)
$$;

CREATE FUNCTION engram_episode_entries_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'DELETE' AND (current_setting('engram.purge', true) = 'on'
                             OR current_setting('engram.compress', true) = 'on'
                             OR current_setting('engram.erase', true) = 'on') THEN
        RETURN OLD;
    END IF;
    IF TG_OP = 'UPDATE' AND current_setting('engram.reseal', true) = 'on'
       AND OLD.entry ? 'sealed' AND NEW.entry ? 'sealed'
       AND (NEW.entry - 'sealed') = (OLD.entry - 'sealed')
       AND (NEW.tenant_id, NEW.record_id, NEW.seq, NEW.part, NEW.appended_at)
           = (OLD.tenant_id, OLD.record_id, OLD.seq, OLD.part, OLD.appended_at) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'episode_entries is append-only: % refused', TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE FUNCTION engram_evidence_refs(provenance jsonb, payload jsonb) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT coalesce(array_agg(DISTINCT s ->> 'ref') FILTER (WHERE s ->> 'ref' IS NOT NULL), '{}')
    FROM jsonb_array_elements(
        CASE jsonb_typeof(provenance -> 'sources') WHEN 'array' THEN provenance -> 'sources' ELSE '[]' END
        || CASE jsonb_typeof(payload -> 'evidence') WHEN 'array' THEN payload -> 'evidence' ELSE '[]' END) AS s
$$;

CREATE FUNCTION engram_fact_applies(payload jsonb, ctx jsonb, at timestamp with time zone) RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT engram_conditions_hold(payload #> '{validity,conditions}', ctx)
        AND coalesce((payload #>> '{validity,start}')::timestamptz <= at, true)
        AND coalesce((payload #>> '{validity,end}')::timestamptz >= at, true)
$$;

CREATE FUNCTION engram_feature_keys(search_key text, features integer[]) RETURNS bigint[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
    SELECT array_agg((hashtext(search_key)::int8 << 32) | f::int8) FROM unnest(features) AS f
$$;

CREATE FUNCTION engram_lease_monotonic() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_TABLE_NAME = 'lease_counters' THEN
        IF NEW.last_token <= OLD.last_token OR NEW.tenant_id <> OLD.tenant_id THEN
            RAISE EXCEPTION 'fencing counter of %: % may not follow %', OLD.tenant_id, NEW.last_token, OLD.last_token
                USING ERRCODE = 'restrict_violation';
        END IF;
        RETURN NEW;
    END IF;
    IF NEW.token < OLD.token THEN
        RAISE EXCEPTION 'lease %: fencing token % may not follow %', OLD.id, NEW.token, OLD.token
            USING ERRCODE = 'restrict_violation';
    END IF;
    IF NEW.tenant_id <> OLD.tenant_id OR NEW.record_id IS DISTINCT FROM OLD.record_id
       OR NEW.scope IS DISTINCT FROM OLD.scope THEN
        RAISE EXCEPTION 'lease %: its resource is immutable', OLD.id USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END;
$$;

CREATE FUNCTION engram_path_text(doc jsonb, path jsonpath) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT string_agg(x #>> '{}', ' ') FROM jsonb_path_query(doc, path) AS x
$$;

CREATE FUNCTION engram_procedure_applies(payload jsonb, ctx jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT coalesce(jsonb_array_length(payload -> 'triggers'), 0) = 0 OR EXISTS (
        SELECT 1 FROM jsonb_array_elements(payload -> 'triggers') AS t
        WHERE engram_conditions_hold(t -> 'conditions', ctx))
$$;

CREATE FUNCTION engram_record_conditions(type text, payload jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
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

CREATE FUNCTION engram_record_expiry() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF NEW.status <> 'expired' THEN
        NEW.expired_at := NULL;
    ELSIF TG_OP = 'INSERT' OR OLD.status <> 'expired' THEN
        NEW.expired_at := NEW.updated_at;
    END IF;
    RETURN NEW;
END;
$$;

CREATE FUNCTION engram_record_revision() RETURNS trigger
    LANGUAGE plpgsql
    AS $_$
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
$_$;

CREATE FUNCTION engram_record_snapshot() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO record_versions (tenant_id, record_id, version, snapshot)
    VALUES (NEW.tenant_id, NEW.id, NEW.version, to_jsonb(NEW));
    RETURN NULL;
END;
$$;

CREATE FUNCTION engram_record_tsv() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    unsearched constant text[] := ARRAY['performance', 'metrics', 'revision'];
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.tags = OLD.tags
       AND (NEW.payload - unsearched) = (OLD.payload - unsearched) THEN
        NEW.tsv := OLD.tsv;
        RETURN NEW;
    END IF;
    NEW.tsv := to_tsvector('english', left(engram_search_text(NEW.type, NEW.payload, NEW.tags), 65536));
    RETURN NEW;
END;
$$;

CREATE FUNCTION engram_record_unmaterialise() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    DELETE FROM record_salience WHERE tenant_id = OLD.tenant_id AND record_id = OLD.id;
    RETURN NULL;
END;
$$;

CREATE FUNCTION engram_record_vectors_follow() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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

CREATE FUNCTION engram_record_versions_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'DELETE' AND (current_setting('engram.purge', true) = 'on'
                             OR current_setting('engram.erase', true) = 'on') THEN
        RETURN OLD;
    END IF;
    IF TG_OP = 'UPDATE' AND current_setting('engram.reseal', true) = 'on'
       AND OLD.snapshot -> 'payload' ? 'sealed' AND NEW.snapshot -> 'payload' ? 'sealed'
       AND (NEW.snapshot -> 'payload') - 'sealed' = (OLD.snapshot -> 'payload') - 'sealed'
       AND NEW.snapshot - 'payload' = OLD.snapshot - 'payload'
       AND (NEW.tenant_id, NEW.record_id, NEW.version, NEW.recorded_at)
           = (OLD.tenant_id, OLD.record_id, OLD.version, OLD.recorded_at) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'record_versions is append-only: % refused', TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE FUNCTION engram_refuse_truncate() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE FUNCTION engram_retention_class(tags text[], sensitivity text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE
        WHEN 'pii' = ANY(tags) OR sensitivity IN ('high', 'hyper') THEN 'pii'
        WHEN sensitivity = 'medium' THEN 'business_sensitive'
        WHEN sensitivity = 'low' THEN 'general'
        ELSE 'public'
    END
$$;

CREATE FUNCTION engram_review_transition() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF OLD.status <> 'pending' THEN
        RAISE EXCEPTION 'review %: a % review is final', OLD.id, OLD.status USING ERRCODE = 'restrict_violation';
    END IF;
    IF NEW.tenant_id <> OLD.tenant_id OR NEW.id <> OLD.id OR NEW.record_id <> OLD.record_id
       OR NEW.tier <> OLD.tier OR NEW.risk <> OLD.risk OR NEW.risk_factors <> OLD.risk_factors
       OR NEW.reasons <> OLD.reasons OR NEW.proposal IS DISTINCT FROM OLD.proposal
       OR NEW.agent_id IS DISTINCT FROM OLD.agent_id OR NEW.created_at <> OLD.created_at
       OR NEW.sla_deadline <> OLD.sla_deadline THEN
        RAISE EXCEPTION 'review %: only its escalation and its decision change', OLD.id USING ERRCODE = 'restrict_violation';
    END IF;
    IF OLD.escalated_at IS NOT NULL AND NEW.escalated_at IS DISTINCT FROM OLD.escalated_at THEN
        RAISE EXCEPTION 'review %: escalated once', OLD.id USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END;
$$;

CREATE FUNCTION engram_search_text(type text, payload jsonb, tags text[]) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $_$
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
$_$;

CREATE FUNCTION engram_sparse_features(v public.sparsevec) RETURNS integer[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
    SELECT array_agg(split_part(e, ':', 1)::int4 - 1)
    FROM unnest(string_to_array(btrim(split_part(v::text, '/', 1), '{}'), ',')) AS e
$$;

CREATE FUNCTION engram_subsequence(part jsonb, whole jsonb) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    AS $$
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

CREATE TABLE agent_reputation (
    tenant_id text NOT NULL,
    agent_id text NOT NULL,
    writes bigint DEFAULT 0 NOT NULL,
    accepted bigint DEFAULT 0 NOT NULL,
    rejected bigint DEFAULT 0 NOT NULL,
    contradictions bigint DEFAULT 0 NOT NULL,
    successes bigint DEFAULT 0 NOT NULL,
    failures bigint DEFAULT 0 NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT agent_reputation_accepted_check CHECK ((accepted >= 0)),
    CONSTRAINT agent_reputation_agent_id_check CHECK ((agent_id <> ''::text)),
    CONSTRAINT agent_reputation_contradictions_check CHECK ((contradictions >= 0)),
    CONSTRAINT agent_reputation_failures_check CHECK ((failures >= 0)),
    CONSTRAINT agent_reputation_rejected_check CHECK ((rejected >= 0)),
    CONSTRAINT agent_reputation_successes_check CHECK ((successes >= 0)),
    CONSTRAINT agent_reputation_writes_check CHECK ((writes >= 0))
);

CREATE TABLE api_keys (
    name text NOT NULL,
    tenant_id text,
    role text NOT NULL,
    agent_id text DEFAULT ''::text NOT NULL,
    domains text[] DEFAULT '{}'::text[] NOT NULL,
    clearance text DEFAULT 'hyper'::text NOT NULL,
    hash bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone,
    CONSTRAINT api_keys_agent_id_check CHECK ((length(agent_id) <= 200)),
    CONSTRAINT api_keys_clearance_check CHECK ((clearance = ANY (ARRAY['public'::text, 'low'::text, 'medium'::text, 'high'::text, 'hyper'::text]))),
    CONSTRAINT api_keys_executor_agent CHECK (((role <> 'executor'::text) OR (agent_id <> ''::text))),
    CONSTRAINT api_keys_hash_check CHECK ((length(hash) = 32)),
    CONSTRAINT api_keys_name_check CHECK ((name ~ '^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,99}$'::text)),
    CONSTRAINT api_keys_role_check CHECK ((role = ANY (ARRAY['executor'::text, 'verifier'::text, 'orchestrator'::text, 'curator'::text, 'operator'::text]))),
    CONSTRAINT api_keys_tenant CHECK (((role = 'operator'::text) = (tenant_id IS NULL)))
);

CREATE TABLE artifacts (
    tenant_id text NOT NULL,
    sha256 bytea NOT NULL,
    media_type text NOT NULL,
    size bigint NOT NULL,
    content bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    sealed boolean DEFAULT false NOT NULL,
    CONSTRAINT artifacts_content_addressed CHECK ((sealed OR ((sha256 = sha256(content)) AND (size = octet_length(content)))))
);

CREATE TABLE audit_log (
    tenant_id text NOT NULL,
    id bigint NOT NULL,
    record_id uuid,
    action text NOT NULL,
    actor text NOT NULL,
    at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    version integer,
    rationale text DEFAULT ''::text NOT NULL,
    evidence jsonb DEFAULT '[]'::jsonb NOT NULL,
    CONSTRAINT audit_log_action_check CHECK ((action <> ''::text)),
    CONSTRAINT audit_log_actor_check CHECK ((actor <> ''::text))
);

ALTER TABLE audit_log ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME audit_log_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE candidates (
    tenant_id text NOT NULL,
    id uuid NOT NULL,
    seq bigint NOT NULL,
    agent_id text NOT NULL,
    thread_id text NOT NULL,
    kind text NOT NULL,
    event_time timestamp with time zone NOT NULL,
    event jsonb NOT NULL,
    dedup_key bytea NOT NULL,
    sensitivity text NOT NULL,
    redactions text[] DEFAULT '{}'::text[] NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone DEFAULT now() NOT NULL,
    last_error text,
    decision jsonb,
    record_ids uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    processed_at timestamp with time zone,
    CONSTRAINT candidates_sensitivity_check CHECK ((sensitivity = ANY (ARRAY['public'::text, 'low'::text, 'medium'::text, 'high'::text, 'hyper'::text]))),
    CONSTRAINT candidates_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'done'::text, 'dropped'::text, 'dead'::text])))
);

ALTER TABLE candidates ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME candidates_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE compliance_reports (
    id bigint NOT NULL,
    run_id bigint,
    at timestamp with time zone NOT NULL,
    report jsonb NOT NULL
);

ALTER TABLE compliance_reports ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME compliance_reports_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE corpus_stats (
    tenant_id text NOT NULL,
    docs bigint NOT NULL,
    avg_len double precision NOT NULL,
    computed_at timestamp with time zone NOT NULL,
    passages bigint NOT NULL,
    entries_seq bigint DEFAULT 0 NOT NULL,
    type_docs jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT corpus_stats_avg_len_check CHECK ((avg_len > (0)::double precision)),
    CONSTRAINT corpus_stats_docs_check CHECK ((docs >= 0)),
    CONSTRAINT corpus_stats_passages_check CHECK ((passages >= 0))
);

CREATE TABLE embedding_df (
    tenant_id text NOT NULL,
    model text NOT NULL,
    feature integer NOT NULL,
    df bigint NOT NULL,
    CONSTRAINT embedding_df_df_check CHECK ((df > 0))
);

CREATE TABLE episode_entries (
    tenant_id text NOT NULL,
    record_id uuid NOT NULL,
    seq bigint NOT NULL,
    part text NOT NULL,
    entry jsonb NOT NULL,
    appended_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    tsv tsvector,
    CONSTRAINT episode_entries_entry_check CHECK ((jsonb_typeof(entry) = 'object'::text)),
    CONSTRAINT episode_entries_part_check CHECK ((part = ANY (ARRAY['timeline'::text, 'tool_graph'::text])))
);

ALTER TABLE episode_entries ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME episode_entries_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE episode_features (
    tenant_id text NOT NULL,
    episode_id uuid NOT NULL,
    learner text NOT NULL,
    episode_version integer NOT NULL,
    features bytea NOT NULL,
    learned_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT episode_features_learner_check CHECK (((length(learner) >= 1) AND (length(learner) <= 200)))
);
ALTER TABLE ONLY episode_features ALTER COLUMN features SET STATISTICS 0;

CREATE TABLE erasures (
    tenant_id text NOT NULL,
    id uuid NOT NULL,
    subject_sha256 text NOT NULL,
    identifiers jsonb DEFAULT '{}'::jsonb NOT NULL,
    status text NOT NULL,
    phase text DEFAULT 'matching'::text NOT NULL,
    counts jsonb DEFAULT '{}'::jsonb NOT NULL,
    rebuilt uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    verification jsonb,
    error text,
    requested_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    completed_at timestamp with time zone,
    CONSTRAINT erasures_completed CHECK (((status = 'running'::text) = (completed_at IS NULL))),
    CONSTRAINT erasures_counts_check CHECK ((jsonb_typeof(counts) = 'object'::text)),
    CONSTRAINT erasures_identifiers_check CHECK ((jsonb_typeof(identifiers) = 'object'::text)),
    CONSTRAINT erasures_status_check CHECK ((status = ANY (ARRAY['running'::text, 'completed'::text, 'failed'::text, 'interrupted'::text]))),
    CONSTRAINT erasures_subject_sha256_check CHECK ((subject_sha256 ~ '^[0-9a-f]{64}$'::text))
);

CREATE TABLE feedback (
    tenant_id text NOT NULL,
    scope text NOT NULL,
    record_id uuid NOT NULL,
    outcome text NOT NULL,
    at timestamp with time zone NOT NULL,
    CONSTRAINT feedback_outcome_check CHECK ((outcome = ANY (ARRAY['used_success'::text, 'used_failure'::text, 'unused'::text]))),
    CONSTRAINT feedback_scope_check CHECK ((scope <> ''::text))
);

CREATE TABLE goose_db_version (
    id integer NOT NULL,
    version_id bigint NOT NULL,
    is_applied boolean NOT NULL,
    tstamp timestamp without time zone DEFAULT now() NOT NULL
);

ALTER TABLE goose_db_version ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME goose_db_version_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE idempotency_keys (
    tenant_id text NOT NULL,
    principal text NOT NULL,
    key text NOT NULL,
    request_hash bytea NOT NULL,
    status integer,
    response bytea,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    CONSTRAINT idempotency_keys_check CHECK (((status IS NULL) = (response IS NULL))),
    CONSTRAINT idempotency_keys_key_check CHECK (((length(key) >= 1) AND (length(key) <= 255))),
    CONSTRAINT idempotency_keys_status_check CHECK (((status >= 100) AND (status <= 599)))
);

CREATE TABLE job_cursors (
    job text NOT NULL,
    cursor jsonb NOT NULL,
    run_id bigint,
    updated_at timestamp with time zone NOT NULL
);

CREATE TABLE job_runs (
    id bigint NOT NULL,
    job text NOT NULL,
    trigger text NOT NULL,
    node text NOT NULL,
    status text NOT NULL,
    started_at timestamp with time zone NOT NULL,
    ended_at timestamp with time zone,
    counts jsonb DEFAULT '{}'::jsonb NOT NULL,
    error text,
    CONSTRAINT job_runs_ended CHECK (((status = 'running'::text) = (ended_at IS NULL))),
    CONSTRAINT job_runs_job_check CHECK ((job <> ''::text)),
    CONSTRAINT job_runs_status_check CHECK ((status = ANY (ARRAY['running'::text, 'succeeded'::text, 'failed'::text, 'interrupted'::text, 'abandoned'::text]))),
    CONSTRAINT job_runs_trigger_check CHECK ((trigger = ANY (ARRAY['schedule'::text, 'manual'::text])))
);

ALTER TABLE job_runs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME job_runs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE lease_counters (
    tenant_id text NOT NULL,
    last_token bigint NOT NULL,
    CONSTRAINT lease_counters_last_token_check CHECK ((last_token > 0))
);

CREATE TABLE leases (
    tenant_id text NOT NULL,
    id uuid NOT NULL,
    record_id uuid,
    scope text,
    agent_id text NOT NULL,
    token bigint NOT NULL,
    granted_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    released_at timestamp with time zone,
    CONSTRAINT leases_agent_id_check CHECK ((agent_id <> ''::text)),
    CONSTRAINT leases_bounded CHECK ((expires_at > granted_at)),
    CONSTRAINT leases_one_resource CHECK (((record_id IS NULL) <> (scope IS NULL))),
    CONSTRAINT leases_scope_check CHECK ((scope <> ''::text)),
    CONSTRAINT leases_token_check CHECK ((token > 0))
);

CREATE TABLE lexeme_stats (
    tenant_id text NOT NULL,
    lexeme text NOT NULL,
    df bigint NOT NULL,
    CONSTRAINT lexeme_stats_df_check CHECK ((df > 0))
);

CREATE TABLE provenance (
    tenant_id text NOT NULL,
    record_id uuid NOT NULL,
    stamp jsonb NOT NULL,
    content_hash bytea NOT NULL,
    fingerprint bytea,
    key_id text DEFAULT ''::text NOT NULL,
    signature bytea,
    tampered_at timestamp with time zone,
    CONSTRAINT provenance_check CHECK (((key_id = ''::text) = (signature IS NULL))),
    CONSTRAINT provenance_content_hash_check CHECK ((octet_length(content_hash) = 32)),
    CONSTRAINT provenance_fingerprint_check CHECK ((octet_length(fingerprint) = 32))
);

CREATE TABLE record_flags (
    tenant_id text NOT NULL,
    record_id uuid NOT NULL,
    flag text NOT NULL,
    source_id uuid NOT NULL,
    reason text DEFAULT ''::text NOT NULL,
    at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    CONSTRAINT record_flags_check CHECK ((record_id <> source_id)),
    CONSTRAINT record_flags_flag_check CHECK ((flag = 'derived_from_quarantined'::text))
);

CREATE UNLOGGED TABLE record_salience (
    tenant_id text NOT NULL,
    record_id uuid NOT NULL,
    type text NOT NULL,
    salience double precision NOT NULL,
    computed_at timestamp with time zone NOT NULL,
    CONSTRAINT record_salience_salience_check CHECK ((salience >= (0)::double precision))
)
WITH (fillfactor='80');

CREATE TABLE record_vectors (
    tenant_id text NOT NULL,
    record_id uuid NOT NULL,
    model text NOT NULL,
    type text NOT NULL,
    sensitivity_rank smallint NOT NULL,
    record_version integer NOT NULL,
    sparse public.sparsevec(1048576),
    dense public.vector,
    embedded_at timestamp with time zone DEFAULT now() NOT NULL,
    features integer[] GENERATED ALWAYS AS (engram_sparse_features(sparse)) STORED,
    search_key text GENERATED ALWAYS AS (((((tenant_id || '/'::text) || model) || '/'::text) || type)) STORED,
    feature_keys bigint[] GENERATED ALWAYS AS (engram_feature_keys(((((tenant_id || '/'::text) || model) || '/'::text) || type), engram_sparse_features(sparse))) STORED,
    CONSTRAINT record_vectors_check CHECK (((sparse IS NULL) <> (dense IS NULL)))
)
PARTITION BY HASH (tenant_id);

CREATE TABLE record_vectors_0 (
    tenant_id text NOT NULL,
    record_id uuid NOT NULL,
    model text NOT NULL,
    type text NOT NULL,
    sensitivity_rank smallint NOT NULL,
    record_version integer NOT NULL,
    sparse public.sparsevec(1048576),
    dense public.vector,
    embedded_at timestamp with time zone DEFAULT now() NOT NULL,
    features integer[] GENERATED ALWAYS AS (engram_sparse_features(sparse)) STORED,
    search_key text GENERATED ALWAYS AS (((((tenant_id || '/'::text) || model) || '/'::text) || type)) STORED,
    feature_keys bigint[] GENERATED ALWAYS AS (engram_feature_keys(((((tenant_id || '/'::text) || model) || '/'::text) || type), engram_sparse_features(sparse))) STORED,
    CONSTRAINT record_vectors_check CHECK (((sparse IS NULL) <> (dense IS NULL)))
);

CREATE TABLE record_vectors_1 (
    tenant_id text NOT NULL,
    record_id uuid NOT NULL,
    model text NOT NULL,
    type text NOT NULL,
    sensitivity_rank smallint NOT NULL,
    record_version integer NOT NULL,
    sparse public.sparsevec(1048576),
    dense public.vector,
    embedded_at timestamp with time zone DEFAULT now() NOT NULL,
    features integer[] GENERATED ALWAYS AS (engram_sparse_features(sparse)) STORED,
    search_key text GENERATED ALWAYS AS (((((tenant_id || '/'::text) || model) || '/'::text) || type)) STORED,
    feature_keys bigint[] GENERATED ALWAYS AS (engram_feature_keys(((((tenant_id || '/'::text) || model) || '/'::text) || type), engram_sparse_features(sparse))) STORED,
    CONSTRAINT record_vectors_check CHECK (((sparse IS NULL) <> (dense IS NULL)))
);

CREATE TABLE record_vectors_10 (
    tenant_id text NOT NULL,
    record_id uuid NOT NULL,
    model text NOT NULL,
    type text NOT NULL,
    sensitivity_rank smallint NOT NULL,
    record_version integer NOT NULL,
    sparse public.sparsevec(1048576),
    dense public.vector,
    embedded_at timestamp with time zone DEFAULT now() NOT NULL,
    features integer[] GENERATED ALWAYS AS (engram_sparse_features(sparse)) STORED,
    search_key text GENERATED ALWAYS AS (((((tenant_id || '/'::text) || model) || '/'::text) || type)) STORED,
    feature_keys bigint[] GENERATED ALWAYS AS (engram_feature_keys(((((tenant_id || '/'::text) || model) || '/'::text) || type), engram_sparse_features(sparse))) STORED,
    CONSTRAINT record_vectors_check CHECK (((sparse IS NULL) <> (dense IS NULL)))
);

CREATE TABLE record_vectors_11 (
    tenant_id text NOT NULL,
    record_id uuid NOT NULL,
    model text NOT NULL,
    type text NOT NULL,
    sensitivity_rank smallint NOT NULL,
    record_version integer NOT NULL,
    sparse public.sparsevec(1048576),
    dense public.vector,
    embedded_at timestamp with time zone DEFAULT now() NOT NULL,
    features integer[] GENERATED ALWAYS AS (engram_sparse_features(sparse)) STORED,
    search_key text GENERATED ALWAYS AS (((((tenant_id || '/'::text) || model) || '/'::text) || type)) STORED,
    feature_keys bigint[] GENERATED ALWAYS AS (engram_feature_keys(((((tenant_id || '/'::text) || model) || '/'::text) || type), engram_sparse_features(sparse))) STORED,
    CONSTRAINT record_vectors_check CHECK (((sparse IS NULL) <> (dense IS NULL)))
);

CREATE TABLE record_vectors_12 (
    tenant_id text NOT NULL,
    record_id uuid NOT NULL,
    model text NOT NULL,
    type text NOT NULL,
    sensitivity_rank smallint NOT NULL,
    record_version integer NOT NULL,
    sparse public.sparsevec(1048576),
    dense public.vector,
    embedded_at timestamp with time zone DEFAULT now() NOT NULL,
    features integer[] GENERATED ALWAYS AS (engram_sparse_features(sparse)) STORED,
    search_key text GENERATED ALWAYS AS (((((tenant_id || '/'::text) || model) || '/'::text) || type)) STORED,
    feature_keys bigint[] GENERATED ALWAYS AS (engram_feature_keys(((((tenant_id || '/'::text) || model) || '/'::text) || type), engram_sparse_features(sparse))) STORED,
    CONSTRAINT record_vectors_check CHECK (((sparse IS NULL) <> (dense IS NULL)))
);

CREATE TABLE record_vectors_13 (
    tenant_id text NOT NULL,
    record_id uuid NOT NULL,
    model text NOT NULL,
    type text NOT NULL,
    sensitivity_rank smallint NOT NULL,
    record_version integer NOT NULL,
    sparse public.sparsevec(1048576),
    dense public.vector,
    embedded_at timestamp with time zone DEFAULT now() NOT NULL,
    features integer[] GENERATED ALWAYS AS (engram_sparse_features(sparse)) STORED,
    search_key text GENERATED ALWAYS AS (((((tenant_id || '/'::text) || model) || '/'::text) || type)) STORED,
    feature_keys bigint[] GENERATED ALWAYS AS (engram_feature_keys(((((tenant_id || '/'::text) || model) || '/'::text) || type), engram_sparse_features(sparse))) STORED,
    CONSTRAINT record_vectors_check CHECK (((sparse IS NULL) <> (dense IS NULL)))
);

CREATE TABLE record_vectors_14 (
    tenant_id text NOT NULL,
    record_id uuid NOT NULL,
    model text NOT NULL,
    type text NOT NULL,
    sensitivity_rank smallint NOT NULL,
    record_version integer NOT NULL,
    sparse public.sparsevec(1048576),
    dense public.vector,
    embedded_at timestamp with time zone DEFAULT now() NOT NULL,
    features integer[] GENERATED ALWAYS AS (engram_sparse_features(sparse)) STORED,
    search_key text GENERATED ALWAYS AS (((((tenant_id || '/'::text) || model) || '/'::text) || type)) STORED,
    feature_keys bigint[] GENERATED ALWAYS AS (engram_feature_keys(((((tenant_id || '/'::text) || model) || '/'::text) || type), engram_sparse_features(sparse))) STORED,
    CONSTRAINT record_vectors_check CHECK (((sparse IS NULL) <> (dense IS NULL)))
);

CREATE TABLE record_vectors_15 (
    tenant_id text NOT NULL,
    record_id uuid NOT NULL,
    model text NOT NULL,
    type text NOT NULL,
    sensitivity_rank smallint NOT NULL,
    record_version integer NOT NULL,
    sparse public.sparsevec(1048576),
    dense public.vector,
    embedded_at timestamp with time zone DEFAULT now() NOT NULL,
    features integer[] GENERATED ALWAYS AS (engram_sparse_features(sparse)) STORED,
    search_key text GENERATED ALWAYS AS (((((tenant_id || '/'::text) || model) || '/'::text) || type)) STORED,
    feature_keys bigint[] GENERATED ALWAYS AS (engram_feature_keys(((((tenant_id || '/'::text) || model) || '/'::text) || type), engram_sparse_features(sparse))) STORED,
    CONSTRAINT record_vectors_check CHECK (((sparse IS NULL) <> (dense IS NULL)))
);

CREATE TABLE record_vectors_2 (
    tenant_id text NOT NULL,
    record_id uuid NOT NULL,
    model text NOT NULL,
    type text NOT NULL,
    sensitivity_rank smallint NOT NULL,
    record_version integer NOT NULL,
    sparse public.sparsevec(1048576),
    dense public.vector,
    embedded_at timestamp with time zone DEFAULT now() NOT NULL,
    features integer[] GENERATED ALWAYS AS (engram_sparse_features(sparse)) STORED,
    search_key text GENERATED ALWAYS AS (((((tenant_id || '/'::text) || model) || '/'::text) || type)) STORED,
    feature_keys bigint[] GENERATED ALWAYS AS (engram_feature_keys(((((tenant_id || '/'::text) || model) || '/'::text) || type), engram_sparse_features(sparse))) STORED,
    CONSTRAINT record_vectors_check CHECK (((sparse IS NULL) <> (dense IS NULL)))
);

CREATE TABLE record_vectors_3 (
    tenant_id text NOT NULL,
    record_id uuid NOT NULL,
    model text NOT NULL,
    type text NOT NULL,
    sensitivity_rank smallint NOT NULL,
    record_version integer NOT NULL,
    sparse public.sparsevec(1048576),
    dense public.vector,
    embedded_at timestamp with time zone DEFAULT now() NOT NULL,
    features integer[] GENERATED ALWAYS AS (engram_sparse_features(sparse)) STORED,
    search_key text GENERATED ALWAYS AS (((((tenant_id || '/'::text) || model) || '/'::text) || type)) STORED,
    feature_keys bigint[] GENERATED ALWAYS AS (engram_feature_keys(((((tenant_id || '/'::text) || model) || '/'::text) || type), engram_sparse_features(sparse))) STORED,
    CONSTRAINT record_vectors_check CHECK (((sparse IS NULL) <> (dense IS NULL)))
);

CREATE TABLE record_vectors_4 (
    tenant_id text NOT NULL,
    record_id uuid NOT NULL,
    model text NOT NULL,
    type text NOT NULL,
    sensitivity_rank smallint NOT NULL,
    record_version integer NOT NULL,
    sparse public.sparsevec(1048576),
    dense public.vector,
    embedded_at timestamp with time zone DEFAULT now() NOT NULL,
    features integer[] GENERATED ALWAYS AS (engram_sparse_features(sparse)) STORED,
    search_key text GENERATED ALWAYS AS (((((tenant_id || '/'::text) || model) || '/'::text) || type)) STORED,
    feature_keys bigint[] GENERATED ALWAYS AS (engram_feature_keys(((((tenant_id || '/'::text) || model) || '/'::text) || type), engram_sparse_features(sparse))) STORED,
    CONSTRAINT record_vectors_check CHECK (((sparse IS NULL) <> (dense IS NULL)))
);

CREATE TABLE record_vectors_5 (
    tenant_id text NOT NULL,
    record_id uuid NOT NULL,
    model text NOT NULL,
    type text NOT NULL,
    sensitivity_rank smallint NOT NULL,
    record_version integer NOT NULL,
    sparse public.sparsevec(1048576),
    dense public.vector,
    embedded_at timestamp with time zone DEFAULT now() NOT NULL,
    features integer[] GENERATED ALWAYS AS (engram_sparse_features(sparse)) STORED,
    search_key text GENERATED ALWAYS AS (((((tenant_id || '/'::text) || model) || '/'::text) || type)) STORED,
    feature_keys bigint[] GENERATED ALWAYS AS (engram_feature_keys(((((tenant_id || '/'::text) || model) || '/'::text) || type), engram_sparse_features(sparse))) STORED,
    CONSTRAINT record_vectors_check CHECK (((sparse IS NULL) <> (dense IS NULL)))
);

CREATE TABLE record_vectors_6 (
    tenant_id text NOT NULL,
    record_id uuid NOT NULL,
    model text NOT NULL,
    type text NOT NULL,
    sensitivity_rank smallint NOT NULL,
    record_version integer NOT NULL,
    sparse public.sparsevec(1048576),
    dense public.vector,
    embedded_at timestamp with time zone DEFAULT now() NOT NULL,
    features integer[] GENERATED ALWAYS AS (engram_sparse_features(sparse)) STORED,
    search_key text GENERATED ALWAYS AS (((((tenant_id || '/'::text) || model) || '/'::text) || type)) STORED,
    feature_keys bigint[] GENERATED ALWAYS AS (engram_feature_keys(((((tenant_id || '/'::text) || model) || '/'::text) || type), engram_sparse_features(sparse))) STORED,
    CONSTRAINT record_vectors_check CHECK (((sparse IS NULL) <> (dense IS NULL)))
);

CREATE TABLE record_vectors_7 (
    tenant_id text NOT NULL,
    record_id uuid NOT NULL,
    model text NOT NULL,
    type text NOT NULL,
    sensitivity_rank smallint NOT NULL,
    record_version integer NOT NULL,
    sparse public.sparsevec(1048576),
    dense public.vector,
    embedded_at timestamp with time zone DEFAULT now() NOT NULL,
    features integer[] GENERATED ALWAYS AS (engram_sparse_features(sparse)) STORED,
    search_key text GENERATED ALWAYS AS (((((tenant_id || '/'::text) || model) || '/'::text) || type)) STORED,
    feature_keys bigint[] GENERATED ALWAYS AS (engram_feature_keys(((((tenant_id || '/'::text) || model) || '/'::text) || type), engram_sparse_features(sparse))) STORED,
    CONSTRAINT record_vectors_check CHECK (((sparse IS NULL) <> (dense IS NULL)))
);

CREATE TABLE record_vectors_8 (
    tenant_id text NOT NULL,
    record_id uuid NOT NULL,
    model text NOT NULL,
    type text NOT NULL,
    sensitivity_rank smallint NOT NULL,
    record_version integer NOT NULL,
    sparse public.sparsevec(1048576),
    dense public.vector,
    embedded_at timestamp with time zone DEFAULT now() NOT NULL,
    features integer[] GENERATED ALWAYS AS (engram_sparse_features(sparse)) STORED,
    search_key text GENERATED ALWAYS AS (((((tenant_id || '/'::text) || model) || '/'::text) || type)) STORED,
    feature_keys bigint[] GENERATED ALWAYS AS (engram_feature_keys(((((tenant_id || '/'::text) || model) || '/'::text) || type), engram_sparse_features(sparse))) STORED,
    CONSTRAINT record_vectors_check CHECK (((sparse IS NULL) <> (dense IS NULL)))
);

CREATE TABLE record_vectors_9 (
    tenant_id text NOT NULL,
    record_id uuid NOT NULL,
    model text NOT NULL,
    type text NOT NULL,
    sensitivity_rank smallint NOT NULL,
    record_version integer NOT NULL,
    sparse public.sparsevec(1048576),
    dense public.vector,
    embedded_at timestamp with time zone DEFAULT now() NOT NULL,
    features integer[] GENERATED ALWAYS AS (engram_sparse_features(sparse)) STORED,
    search_key text GENERATED ALWAYS AS (((((tenant_id || '/'::text) || model) || '/'::text) || type)) STORED,
    feature_keys bigint[] GENERATED ALWAYS AS (engram_feature_keys(((((tenant_id || '/'::text) || model) || '/'::text) || type), engram_sparse_features(sparse))) STORED,
    CONSTRAINT record_vectors_check CHECK (((sparse IS NULL) <> (dense IS NULL)))
);

CREATE TABLE record_versions (
    tenant_id text NOT NULL,
    record_id uuid NOT NULL,
    version integer NOT NULL,
    recorded_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    snapshot jsonb NOT NULL
);

CREATE TABLE records (
    tenant_id text NOT NULL,
    id uuid NOT NULL,
    type text NOT NULL,
    status text NOT NULL,
    version integer NOT NULL,
    sensitivity text NOT NULL,
    sensitivity_rank smallint GENERATED ALWAYS AS (
CASE sensitivity
    WHEN 'public'::text THEN 0
    WHEN 'low'::text THEN 1
    WHEN 'medium'::text THEN 2
    WHEN 'high'::text THEN 3
    ELSE 4
END) STORED,
    confidence double precision NOT NULL,
    salience double precision NOT NULL,
    scope text DEFAULT ''::text NOT NULL,
    tags text[] DEFAULT '{}'::text[] NOT NULL,
    decay_curve text NOT NULL,
    decay_half_life_seconds bigint NOT NULL,
    decay_floor double precision DEFAULT 0 NOT NULL,
    decay_max_age_seconds bigint,
    decay_reinforcement_gain double precision,
    decay_points jsonb,
    last_reinforced_at timestamp with time zone NOT NULL,
    pinned boolean DEFAULT false NOT NULL,
    deletion_policy text DEFAULT 'auto_prune'::text NOT NULL,
    expires_at timestamp with time zone,
    provenance jsonb NOT NULL,
    payload jsonb NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    deleted_at timestamp with time zone,
    subject text GENERATED ALWAYS AS (
CASE
    WHEN (type = 'semantic'::text) THEN (payload ->> 'subject'::text)
    ELSE NULL::text
END) STORED,
    predicate text GENERATED ALWAYS AS (
CASE
    WHEN (type = 'semantic'::text) THEN (payload ->> 'predicate'::text)
    ELSE NULL::text
END) STORED,
    validity_key jsonb GENERATED ALWAYS AS (
CASE
    WHEN (type = 'semantic'::text) THEN (COALESCE((payload -> 'validity'::text), '{}'::jsonb) - 'mode'::text)
    ELSE NULL::jsonb
END) STORED,
    decay_inherited boolean DEFAULT false NOT NULL,
    expired_at timestamp with time zone,
    tsv tsvector NOT NULL,
    search_key text GENERATED ALWAYS AS (((tenant_id || '/'::text) || type)) STORED,
    visibility text DEFAULT 'tenant'::text NOT NULL,
    agent_id text DEFAULT ''::text NOT NULL,
    thread_id text DEFAULT ''::text NOT NULL,
    conditions jsonb GENERATED ALWAYS AS (engram_record_conditions(type, payload)) STORED,
    CONSTRAINT records_agent_id_check CHECK ((length(agent_id) <= 200)),
    CONSTRAINT records_confidence_check CHECK (((confidence >= (0)::double precision) AND (confidence <= (1)::double precision))),
    CONSTRAINT records_decay_curve_check CHECK ((decay_curve = ANY (ARRAY['exponential'::text, 'linear'::text, 'custom'::text]))),
    CONSTRAINT records_decay_floor_check CHECK (((decay_floor >= (0)::double precision) AND (decay_floor <= (1)::double precision))),
    CONSTRAINT records_decay_half_life_seconds_check CHECK ((decay_half_life_seconds > 0)),
    CONSTRAINT records_decay_max_age_seconds_check CHECK ((decay_max_age_seconds > 0)),
    CONSTRAINT records_decay_reinforcement_gain_check CHECK ((decay_reinforcement_gain >= (0)::double precision)),
    CONSTRAINT records_deleted_at CHECK (((status = 'deleted'::text) = (deleted_at IS NOT NULL))),
    CONSTRAINT records_deletion_policy_check CHECK ((deletion_policy = ANY (ARRAY['auto_prune'::text, 'manual_only'::text, 'never'::text]))),
    CONSTRAINT records_expired_at CHECK (((status = 'expired'::text) = (expired_at IS NOT NULL))),
    CONSTRAINT records_payload_kind CHECK (((payload ->> 'kind'::text) = type)),
    CONSTRAINT records_salience_check CHECK ((salience >= (0)::double precision)),
    CONSTRAINT records_sensitivity_check CHECK ((sensitivity = ANY (ARRAY['public'::text, 'low'::text, 'medium'::text, 'high'::text, 'hyper'::text]))),
    CONSTRAINT records_status_check CHECK ((status = ANY (ARRAY['active'::text, 'contested'::text, 'superseded'::text, 'retracted'::text, 'merged'::text, 'deleted'::text, 'expired'::text, 'draft'::text, 'quarantined'::text]))),
    CONSTRAINT records_thread_id_check CHECK ((length(thread_id) <= 200)),
    CONSTRAINT records_type_check CHECK ((type = ANY (ARRAY['episodic'::text, 'working'::text, 'semantic'::text, 'competence'::text, 'plan_graph'::text]))),
    CONSTRAINT records_version_check CHECK ((version >= 1)),
    CONSTRAINT records_visibility_check CHECK ((visibility = ANY (ARRAY['tenant'::text, 'agent'::text, 'thread'::text]))),
    CONSTRAINT records_visibility_owner CHECK (((visibility = 'tenant'::text) OR ((visibility = 'agent'::text) AND (agent_id <> ''::text)) OR ((visibility = 'thread'::text) AND (thread_id <> ''::text))))
)
WITH (fillfactor='85');

CREATE TABLE relations (
    tenant_id text NOT NULL,
    source_id uuid NOT NULL,
    predicate text NOT NULL,
    target_id uuid NOT NULL,
    weight double precision,
    created_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    CONSTRAINT relations_check CHECK ((source_id <> target_id)),
    CONSTRAINT relations_predicate_check CHECK (((length(predicate) >= 1) AND (length(predicate) <= 256))),
    CONSTRAINT relations_weight_check CHECK (((weight >= (0)::double precision) AND (weight <= (1)::double precision)))
);

CREATE TABLE retrievals (
    tenant_id text NOT NULL,
    id uuid NOT NULL,
    at timestamp with time zone NOT NULL,
    agent_id text DEFAULT ''::text NOT NULL,
    thread_id text DEFAULT ''::text NOT NULL,
    record_ids uuid[] NOT NULL,
    withheld integer DEFAULT 0 NOT NULL,
    lexical_only boolean DEFAULT false NOT NULL
);

CREATE TABLE reviews (
    tenant_id text NOT NULL,
    id uuid NOT NULL,
    record_id uuid NOT NULL,
    tier text NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    risk double precision NOT NULL,
    risk_factors jsonb DEFAULT '{}'::jsonb NOT NULL,
    reasons jsonb DEFAULT '[]'::jsonb NOT NULL,
    proposal jsonb,
    agent_id text,
    created_at timestamp with time zone NOT NULL,
    sla_deadline timestamp with time zone NOT NULL,
    escalated_at timestamp with time zone,
    decided_at timestamp with time zone,
    decided_by text,
    justification text DEFAULT ''::text NOT NULL,
    rejection_reason text,
    CONSTRAINT reviews_deadline CHECK ((sla_deadline >= created_at)),
    CONSTRAINT reviews_decided CHECK ((((status = 'pending'::text) = (decided_at IS NULL)) AND ((decided_at IS NULL) = (decided_by IS NULL)))),
    CONSTRAINT reviews_decided_by_check CHECK ((decided_by <> ''::text)),
    CONSTRAINT reviews_proposal_check CHECK (((proposal IS NULL) OR (jsonb_typeof(proposal) = 'object'::text))),
    CONSTRAINT reviews_reasons_check CHECK ((jsonb_typeof(reasons) = 'array'::text)),
    CONSTRAINT reviews_rejection_reason CHECK (((status = 'rejected'::text) = (rejection_reason IS NOT NULL))),
    CONSTRAINT reviews_rejection_reason_check CHECK ((rejection_reason = ANY (ARRAY['factual_error'::text, 'policy_violation'::text, 'duplicate'::text, 'insufficient_evidence'::text, 'contradiction'::text, 'other'::text]))),
    CONSTRAINT reviews_risk_check CHECK ((risk >= (0)::double precision)),
    CONSTRAINT reviews_risk_factors_check CHECK ((jsonb_typeof(risk_factors) = 'object'::text)),
    CONSTRAINT reviews_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'approved'::text, 'rejected'::text, 'expired'::text]))),
    CONSTRAINT reviews_tier_check CHECK ((tier = ANY (ARRAY['async'::text, 'sync'::text])))
);

CREATE TABLE tenant_data_keys (
    tenant_id text NOT NULL,
    version integer NOT NULL,
    master_key_id text NOT NULL,
    wrapped bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    rewrapped_at timestamp with time zone,
    retired_at timestamp with time zone,
    CONSTRAINT tenant_data_keys_master_key_id_check CHECK ((master_key_id <> ''::text)),
    CONSTRAINT tenant_data_keys_tenant_id_check CHECK ((tenant_id <> ''::text)),
    CONSTRAINT tenant_data_keys_version_check CHECK ((version >= 1))
);

CREATE TABLE tenants (
    id text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT tenants_id_check CHECK ((id ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'::text))
);

CREATE TABLE threads (
    tenant_id text NOT NULL,
    thread_id text NOT NULL,
    generation integer NOT NULL,
    agent_id text NOT NULL,
    episode_id uuid NOT NULL,
    working_id uuid,
    status text NOT NULL,
    opened_at timestamp with time zone DEFAULT now() NOT NULL,
    closed_at timestamp with time zone,
    CONSTRAINT threads_status_check CHECK ((status = ANY (ARRAY['open'::text, 'closed'::text])))
);

CREATE TABLE write_budgets (
    tenant_id text NOT NULL,
    agent_id text NOT NULL,
    session_id text DEFAULT ''::text NOT NULL,
    window_start timestamp with time zone NOT NULL,
    writes bigint NOT NULL,
    CONSTRAINT write_budgets_agent_id_check CHECK ((agent_id <> ''::text)),
    CONSTRAINT write_budgets_session_id_check CHECK ((length(session_id) <= 200)),
    CONSTRAINT write_budgets_writes_check CHECK ((writes >= 0))
);

ALTER TABLE ONLY record_vectors ATTACH PARTITION record_vectors_0 FOR VALUES WITH (modulus 16, remainder 0);

ALTER TABLE ONLY record_vectors ATTACH PARTITION record_vectors_1 FOR VALUES WITH (modulus 16, remainder 1);

ALTER TABLE ONLY record_vectors ATTACH PARTITION record_vectors_10 FOR VALUES WITH (modulus 16, remainder 10);

ALTER TABLE ONLY record_vectors ATTACH PARTITION record_vectors_11 FOR VALUES WITH (modulus 16, remainder 11);

ALTER TABLE ONLY record_vectors ATTACH PARTITION record_vectors_12 FOR VALUES WITH (modulus 16, remainder 12);

ALTER TABLE ONLY record_vectors ATTACH PARTITION record_vectors_13 FOR VALUES WITH (modulus 16, remainder 13);

ALTER TABLE ONLY record_vectors ATTACH PARTITION record_vectors_14 FOR VALUES WITH (modulus 16, remainder 14);

ALTER TABLE ONLY record_vectors ATTACH PARTITION record_vectors_15 FOR VALUES WITH (modulus 16, remainder 15);

ALTER TABLE ONLY record_vectors ATTACH PARTITION record_vectors_2 FOR VALUES WITH (modulus 16, remainder 2);

ALTER TABLE ONLY record_vectors ATTACH PARTITION record_vectors_3 FOR VALUES WITH (modulus 16, remainder 3);

ALTER TABLE ONLY record_vectors ATTACH PARTITION record_vectors_4 FOR VALUES WITH (modulus 16, remainder 4);

ALTER TABLE ONLY record_vectors ATTACH PARTITION record_vectors_5 FOR VALUES WITH (modulus 16, remainder 5);

ALTER TABLE ONLY record_vectors ATTACH PARTITION record_vectors_6 FOR VALUES WITH (modulus 16, remainder 6);

ALTER TABLE ONLY record_vectors ATTACH PARTITION record_vectors_7 FOR VALUES WITH (modulus 16, remainder 7);

ALTER TABLE ONLY record_vectors ATTACH PARTITION record_vectors_8 FOR VALUES WITH (modulus 16, remainder 8);

ALTER TABLE ONLY record_vectors ATTACH PARTITION record_vectors_9 FOR VALUES WITH (modulus 16, remainder 9);

ALTER TABLE ONLY agent_reputation
    ADD CONSTRAINT agent_reputation_pkey PRIMARY KEY (tenant_id, agent_id);

ALTER TABLE ONLY api_keys
    ADD CONSTRAINT api_keys_hash_key UNIQUE (hash);

ALTER TABLE ONLY api_keys
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (name);

ALTER TABLE ONLY artifacts
    ADD CONSTRAINT artifacts_pkey PRIMARY KEY (tenant_id, sha256);

ALTER TABLE ONLY audit_log
    ADD CONSTRAINT audit_log_pkey PRIMARY KEY (tenant_id, id);

ALTER TABLE ONLY candidates
    ADD CONSTRAINT candidates_pkey PRIMARY KEY (tenant_id, id);

ALTER TABLE ONLY candidates
    ADD CONSTRAINT candidates_tenant_id_dedup_key_key UNIQUE (tenant_id, dedup_key);

ALTER TABLE ONLY compliance_reports
    ADD CONSTRAINT compliance_reports_pkey PRIMARY KEY (id);

ALTER TABLE ONLY corpus_stats
    ADD CONSTRAINT corpus_stats_pkey PRIMARY KEY (tenant_id);

ALTER TABLE ONLY embedding_df
    ADD CONSTRAINT embedding_df_pkey PRIMARY KEY (tenant_id, model, feature);

ALTER TABLE ONLY episode_entries
    ADD CONSTRAINT episode_entries_pkey PRIMARY KEY (tenant_id, record_id, seq);

ALTER TABLE ONLY episode_features
    ADD CONSTRAINT episode_features_pkey PRIMARY KEY (tenant_id, episode_id);

ALTER TABLE ONLY erasures
    ADD CONSTRAINT erasures_pkey PRIMARY KEY (tenant_id, id);

ALTER TABLE ONLY feedback
    ADD CONSTRAINT feedback_pkey PRIMARY KEY (tenant_id, scope, record_id);

ALTER TABLE ONLY goose_db_version
    ADD CONSTRAINT goose_db_version_pkey PRIMARY KEY (id);

ALTER TABLE ONLY idempotency_keys
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (tenant_id, principal, key);

ALTER TABLE ONLY job_cursors
    ADD CONSTRAINT job_cursors_pkey PRIMARY KEY (job);

ALTER TABLE ONLY job_runs
    ADD CONSTRAINT job_runs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY lease_counters
    ADD CONSTRAINT lease_counters_pkey PRIMARY KEY (tenant_id);

ALTER TABLE ONLY leases
    ADD CONSTRAINT leases_pkey PRIMARY KEY (tenant_id, id);

ALTER TABLE ONLY lexeme_stats
    ADD CONSTRAINT lexeme_stats_pkey PRIMARY KEY (tenant_id, lexeme);

ALTER TABLE ONLY provenance
    ADD CONSTRAINT provenance_pkey PRIMARY KEY (tenant_id, record_id);

ALTER TABLE ONLY record_flags
    ADD CONSTRAINT record_flags_pkey PRIMARY KEY (tenant_id, record_id, flag, source_id);

ALTER TABLE ONLY record_salience
    ADD CONSTRAINT record_salience_pkey PRIMARY KEY (tenant_id, record_id);

ALTER TABLE ONLY record_vectors
    ADD CONSTRAINT record_vectors_pkey PRIMARY KEY (tenant_id, record_id, model);

ALTER TABLE ONLY record_vectors_0
    ADD CONSTRAINT record_vectors_0_pkey PRIMARY KEY (tenant_id, record_id, model);

ALTER TABLE ONLY record_vectors_10
    ADD CONSTRAINT record_vectors_10_pkey PRIMARY KEY (tenant_id, record_id, model);

ALTER TABLE ONLY record_vectors_11
    ADD CONSTRAINT record_vectors_11_pkey PRIMARY KEY (tenant_id, record_id, model);

ALTER TABLE ONLY record_vectors_12
    ADD CONSTRAINT record_vectors_12_pkey PRIMARY KEY (tenant_id, record_id, model);

ALTER TABLE ONLY record_vectors_13
    ADD CONSTRAINT record_vectors_13_pkey PRIMARY KEY (tenant_id, record_id, model);

ALTER TABLE ONLY record_vectors_14
    ADD CONSTRAINT record_vectors_14_pkey PRIMARY KEY (tenant_id, record_id, model);

ALTER TABLE ONLY record_vectors_15
    ADD CONSTRAINT record_vectors_15_pkey PRIMARY KEY (tenant_id, record_id, model);

ALTER TABLE ONLY record_vectors_1
    ADD CONSTRAINT record_vectors_1_pkey PRIMARY KEY (tenant_id, record_id, model);

ALTER TABLE ONLY record_vectors_2
    ADD CONSTRAINT record_vectors_2_pkey PRIMARY KEY (tenant_id, record_id, model);

ALTER TABLE ONLY record_vectors_3
    ADD CONSTRAINT record_vectors_3_pkey PRIMARY KEY (tenant_id, record_id, model);

ALTER TABLE ONLY record_vectors_4
    ADD CONSTRAINT record_vectors_4_pkey PRIMARY KEY (tenant_id, record_id, model);

ALTER TABLE ONLY record_vectors_5
    ADD CONSTRAINT record_vectors_5_pkey PRIMARY KEY (tenant_id, record_id, model);

ALTER TABLE ONLY record_vectors_6
    ADD CONSTRAINT record_vectors_6_pkey PRIMARY KEY (tenant_id, record_id, model);

ALTER TABLE ONLY record_vectors_7
    ADD CONSTRAINT record_vectors_7_pkey PRIMARY KEY (tenant_id, record_id, model);

ALTER TABLE ONLY record_vectors_8
    ADD CONSTRAINT record_vectors_8_pkey PRIMARY KEY (tenant_id, record_id, model);

ALTER TABLE ONLY record_vectors_9
    ADD CONSTRAINT record_vectors_9_pkey PRIMARY KEY (tenant_id, record_id, model);

ALTER TABLE ONLY record_versions
    ADD CONSTRAINT record_versions_pkey PRIMARY KEY (tenant_id, record_id, version);

ALTER TABLE ONLY records
    ADD CONSTRAINT records_pkey PRIMARY KEY (tenant_id, id);

ALTER TABLE ONLY relations
    ADD CONSTRAINT relations_pkey PRIMARY KEY (tenant_id, source_id, predicate, target_id);

ALTER TABLE ONLY retrievals
    ADD CONSTRAINT retrievals_pkey PRIMARY KEY (tenant_id, id);

ALTER TABLE ONLY reviews
    ADD CONSTRAINT reviews_pkey PRIMARY KEY (tenant_id, id);

ALTER TABLE ONLY tenant_data_keys
    ADD CONSTRAINT tenant_data_keys_pkey PRIMARY KEY (tenant_id, version);

ALTER TABLE ONLY tenants
    ADD CONSTRAINT tenants_pkey PRIMARY KEY (id);

ALTER TABLE ONLY threads
    ADD CONSTRAINT threads_pkey PRIMARY KEY (tenant_id, thread_id, generation);

ALTER TABLE ONLY write_budgets
    ADD CONSTRAINT write_budgets_pkey PRIMARY KEY (tenant_id, agent_id, session_id);

CREATE INDEX audit_log_by_record ON audit_log USING btree (tenant_id, record_id, id);

CREATE INDEX audit_log_by_time ON audit_log USING btree (tenant_id, at) INCLUDE (action);

CREATE INDEX candidates_by_status ON candidates USING btree (tenant_id, status, seq);

CREATE INDEX candidates_pending ON candidates USING btree (seq) WHERE (status = 'pending'::text);

CREATE INDEX episode_entries_by_seq ON episode_entries USING btree (tenant_id, seq);

CREATE INDEX episode_entries_search ON episode_entries USING gin (tenant_id, tsv) WITH (fastupdate='on', gin_pending_list_limit='256');

CREATE INDEX erasures_unfinished ON erasures USING btree (tenant_id, requested_at) WHERE (status <> 'completed'::text);

CREATE INDEX feedback_by_record ON feedback USING btree (tenant_id, record_id);

CREATE INDEX feedback_by_time ON feedback USING btree (tenant_id, at);

CREATE INDEX idempotency_keys_expires_at ON idempotency_keys USING btree (expires_at);

CREATE INDEX job_runs_by_job ON job_runs USING btree (job, id);

CREATE UNIQUE INDEX leases_record ON leases USING btree (tenant_id, record_id) WHERE (record_id IS NOT NULL);

CREATE UNIQUE INDEX leases_scope ON leases USING btree (tenant_id, scope) WHERE (scope IS NOT NULL);

CREATE INDEX provenance_by_content ON provenance USING btree (tenant_id, content_hash);

CREATE INDEX provenance_by_fingerprint ON provenance USING btree (tenant_id, fingerprint) WHERE (fingerprint IS NOT NULL);

CREATE INDEX record_flags_by_flag ON record_flags USING btree (tenant_id, flag, record_id);

CREATE INDEX record_flags_by_source ON record_flags USING btree (tenant_id, source_id);

CREATE INDEX record_vectors_by_embedding ON ONLY record_vectors USING btree (embedded_at, tenant_id, record_id);

CREATE INDEX record_vectors_0_embedded_at_tenant_id_record_id_idx ON record_vectors_0 USING btree (embedded_at, tenant_id, record_id);

CREATE INDEX record_vectors_feature_keys ON ONLY record_vectors USING gin (feature_keys) WITH (fastupdate=off) WHERE (sparse IS NOT NULL);

CREATE INDEX record_vectors_0_feature_keys_idx ON record_vectors_0 USING gin (feature_keys) WITH (fastupdate=off) WHERE (sparse IS NOT NULL);

CREATE INDEX record_vectors_by_tenant ON ONLY record_vectors USING btree (tenant_id, model, type);

CREATE INDEX record_vectors_0_tenant_id_model_type_idx ON record_vectors_0 USING btree (tenant_id, model, type);

CREATE INDEX record_vectors_10_embedded_at_tenant_id_record_id_idx ON record_vectors_10 USING btree (embedded_at, tenant_id, record_id);

CREATE INDEX record_vectors_10_feature_keys_idx ON record_vectors_10 USING gin (feature_keys) WITH (fastupdate=off) WHERE (sparse IS NOT NULL);

CREATE INDEX record_vectors_10_tenant_id_model_type_idx ON record_vectors_10 USING btree (tenant_id, model, type);

CREATE INDEX record_vectors_11_embedded_at_tenant_id_record_id_idx ON record_vectors_11 USING btree (embedded_at, tenant_id, record_id);

CREATE INDEX record_vectors_11_feature_keys_idx ON record_vectors_11 USING gin (feature_keys) WITH (fastupdate=off) WHERE (sparse IS NOT NULL);

CREATE INDEX record_vectors_11_tenant_id_model_type_idx ON record_vectors_11 USING btree (tenant_id, model, type);

CREATE INDEX record_vectors_12_embedded_at_tenant_id_record_id_idx ON record_vectors_12 USING btree (embedded_at, tenant_id, record_id);

CREATE INDEX record_vectors_12_feature_keys_idx ON record_vectors_12 USING gin (feature_keys) WITH (fastupdate=off) WHERE (sparse IS NOT NULL);

CREATE INDEX record_vectors_12_tenant_id_model_type_idx ON record_vectors_12 USING btree (tenant_id, model, type);

CREATE INDEX record_vectors_13_embedded_at_tenant_id_record_id_idx ON record_vectors_13 USING btree (embedded_at, tenant_id, record_id);

CREATE INDEX record_vectors_13_feature_keys_idx ON record_vectors_13 USING gin (feature_keys) WITH (fastupdate=off) WHERE (sparse IS NOT NULL);

CREATE INDEX record_vectors_13_tenant_id_model_type_idx ON record_vectors_13 USING btree (tenant_id, model, type);

CREATE INDEX record_vectors_14_embedded_at_tenant_id_record_id_idx ON record_vectors_14 USING btree (embedded_at, tenant_id, record_id);

CREATE INDEX record_vectors_14_feature_keys_idx ON record_vectors_14 USING gin (feature_keys) WITH (fastupdate=off) WHERE (sparse IS NOT NULL);

CREATE INDEX record_vectors_14_tenant_id_model_type_idx ON record_vectors_14 USING btree (tenant_id, model, type);

CREATE INDEX record_vectors_15_embedded_at_tenant_id_record_id_idx ON record_vectors_15 USING btree (embedded_at, tenant_id, record_id);

CREATE INDEX record_vectors_15_feature_keys_idx ON record_vectors_15 USING gin (feature_keys) WITH (fastupdate=off) WHERE (sparse IS NOT NULL);

CREATE INDEX record_vectors_15_tenant_id_model_type_idx ON record_vectors_15 USING btree (tenant_id, model, type);

CREATE INDEX record_vectors_1_embedded_at_tenant_id_record_id_idx ON record_vectors_1 USING btree (embedded_at, tenant_id, record_id);

CREATE INDEX record_vectors_1_feature_keys_idx ON record_vectors_1 USING gin (feature_keys) WITH (fastupdate=off) WHERE (sparse IS NOT NULL);

CREATE INDEX record_vectors_1_tenant_id_model_type_idx ON record_vectors_1 USING btree (tenant_id, model, type);

CREATE INDEX record_vectors_2_embedded_at_tenant_id_record_id_idx ON record_vectors_2 USING btree (embedded_at, tenant_id, record_id);

CREATE INDEX record_vectors_2_feature_keys_idx ON record_vectors_2 USING gin (feature_keys) WITH (fastupdate=off) WHERE (sparse IS NOT NULL);

CREATE INDEX record_vectors_2_tenant_id_model_type_idx ON record_vectors_2 USING btree (tenant_id, model, type);

CREATE INDEX record_vectors_3_embedded_at_tenant_id_record_id_idx ON record_vectors_3 USING btree (embedded_at, tenant_id, record_id);

CREATE INDEX record_vectors_3_feature_keys_idx ON record_vectors_3 USING gin (feature_keys) WITH (fastupdate=off) WHERE (sparse IS NOT NULL);

CREATE INDEX record_vectors_3_tenant_id_model_type_idx ON record_vectors_3 USING btree (tenant_id, model, type);

CREATE INDEX record_vectors_4_embedded_at_tenant_id_record_id_idx ON record_vectors_4 USING btree (embedded_at, tenant_id, record_id);

CREATE INDEX record_vectors_4_feature_keys_idx ON record_vectors_4 USING gin (feature_keys) WITH (fastupdate=off) WHERE (sparse IS NOT NULL);

CREATE INDEX record_vectors_4_tenant_id_model_type_idx ON record_vectors_4 USING btree (tenant_id, model, type);

CREATE INDEX record_vectors_5_embedded_at_tenant_id_record_id_idx ON record_vectors_5 USING btree (embedded_at, tenant_id, record_id);

CREATE INDEX record_vectors_5_feature_keys_idx ON record_vectors_5 USING gin (feature_keys) WITH (fastupdate=off) WHERE (sparse IS NOT NULL);

CREATE INDEX record_vectors_5_tenant_id_model_type_idx ON record_vectors_5 USING btree (tenant_id, model, type);

CREATE INDEX record_vectors_6_embedded_at_tenant_id_record_id_idx ON record_vectors_6 USING btree (embedded_at, tenant_id, record_id);

CREATE INDEX record_vectors_6_feature_keys_idx ON record_vectors_6 USING gin (feature_keys) WITH (fastupdate=off) WHERE (sparse IS NOT NULL);

CREATE INDEX record_vectors_6_tenant_id_model_type_idx ON record_vectors_6 USING btree (tenant_id, model, type);

CREATE INDEX record_vectors_7_embedded_at_tenant_id_record_id_idx ON record_vectors_7 USING btree (embedded_at, tenant_id, record_id);

CREATE INDEX record_vectors_7_feature_keys_idx ON record_vectors_7 USING gin (feature_keys) WITH (fastupdate=off) WHERE (sparse IS NOT NULL);

CREATE INDEX record_vectors_7_tenant_id_model_type_idx ON record_vectors_7 USING btree (tenant_id, model, type);

CREATE INDEX record_vectors_8_embedded_at_tenant_id_record_id_idx ON record_vectors_8 USING btree (embedded_at, tenant_id, record_id);

CREATE INDEX record_vectors_8_feature_keys_idx ON record_vectors_8 USING gin (feature_keys) WITH (fastupdate=off) WHERE (sparse IS NOT NULL);

CREATE INDEX record_vectors_8_tenant_id_model_type_idx ON record_vectors_8 USING btree (tenant_id, model, type);

CREATE INDEX record_vectors_9_embedded_at_tenant_id_record_id_idx ON record_vectors_9 USING btree (embedded_at, tenant_id, record_id);

CREATE INDEX record_vectors_9_feature_keys_idx ON record_vectors_9 USING gin (feature_keys) WITH (fastupdate=off) WHERE (sparse IS NOT NULL);

CREATE INDEX record_vectors_9_tenant_id_model_type_idx ON record_vectors_9 USING btree (tenant_id, model, type);

CREATE INDEX record_versions_by_time ON record_versions USING btree (tenant_id, recorded_at);

CREATE INDEX records_by_created ON records USING btree (tenant_id, created_at) INCLUDE (type, status);

CREATE INDEX records_by_fact ON records USING btree (tenant_id, subject, predicate) WHERE (type = 'semantic'::text);

CREATE INDEX records_by_revision ON records USING btree (updated_at, tenant_id, id) WHERE ((type = ANY (ARRAY['semantic'::text, 'competence'::text, 'plan_graph'::text])) AND (status = ANY (ARRAY['active'::text, 'contested'::text])));

CREATE INDEX records_by_status ON records USING btree (tenant_id, status, id);

CREATE INDEX records_by_tag ON records USING gin (tags);

CREATE INDEX records_by_type ON records USING btree (tenant_id, type, status, id);

CREATE INDEX records_evidence_refs ON records USING gin (tenant_id, engram_evidence_refs(provenance, payload)) WITH (fastupdate='on', gin_pending_list_limit='256') WHERE (status = ANY (ARRAY['active'::text, 'contested'::text]));

CREATE INDEX records_expired ON records USING btree (expired_at) WHERE (status = 'expired'::text);

CREATE INDEX records_live ON records USING btree (tenant_id, id) WHERE (status = ANY (ARRAY['active'::text, 'contested'::text]));

CREATE UNIQUE INDEX records_one_active_fact ON records USING btree (tenant_id, scope, subject, predicate, validity_key) WHERE ((type = 'semantic'::text) AND (status = 'active'::text));

CREATE UNIQUE INDEX records_openintent_key ON records USING btree (tenant_id, (
CASE
    WHEN (((payload -> 'openintent'::text) ->> 'memory_type'::text) = 'semantic'::text) THEN ''::text
    ELSE ((payload -> 'openintent'::text) ->> 'agent_id'::text)
END), (((payload -> 'openintent'::text) ->> 'namespace'::text)), (((payload -> 'openintent'::text) ->> 'key'::text))) WHERE ((type = 'working'::text) AND (status = ANY (ARRAY['active'::text, 'contested'::text, 'draft'::text, 'quarantined'::text])) AND (payload ? 'openintent'::text));

CREATE INDEX records_retention ON records USING btree (engram_retention_class(tags, sensitivity), created_at);

CREATE INDEX records_search ON records USING gin (search_key, tsv) WITH (fastupdate=off) WHERE (status = ANY (ARRAY['active'::text, 'contested'::text]));

CREATE INDEX relations_by_target ON relations USING btree (tenant_id, target_id);

CREATE INDEX retrievals_by_tenant_time ON retrievals USING btree (tenant_id, at);

CREATE INDEX retrievals_by_time ON retrievals USING btree (at);

CREATE INDEX reviews_by_status ON reviews USING btree (tenant_id, status, created_at, id);

CREATE INDEX reviews_due ON reviews USING btree (sla_deadline) WHERE (status = 'pending'::text);

CREATE UNIQUE INDEX reviews_one_per_record ON reviews USING btree (tenant_id, record_id);

CREATE INDEX reviews_pending_age ON reviews USING btree (created_at) WHERE (status = 'pending'::text);

CREATE INDEX threads_by_closing ON threads USING btree (closed_at, tenant_id, episode_id) WHERE (status = 'closed'::text);

CREATE INDEX threads_by_episode ON threads USING btree (tenant_id, episode_id);

CREATE INDEX threads_by_tenant_closing ON threads USING btree (tenant_id, closed_at, episode_id) WHERE (status = 'closed'::text);

CREATE UNIQUE INDEX threads_one_open ON threads USING btree (tenant_id, thread_id) WHERE (status = 'open'::text);

ALTER INDEX record_vectors_by_embedding ATTACH PARTITION record_vectors_0_embedded_at_tenant_id_record_id_idx;

ALTER INDEX record_vectors_feature_keys ATTACH PARTITION record_vectors_0_feature_keys_idx;

ALTER INDEX record_vectors_pkey ATTACH PARTITION record_vectors_0_pkey;

ALTER INDEX record_vectors_by_tenant ATTACH PARTITION record_vectors_0_tenant_id_model_type_idx;

ALTER INDEX record_vectors_by_embedding ATTACH PARTITION record_vectors_10_embedded_at_tenant_id_record_id_idx;

ALTER INDEX record_vectors_feature_keys ATTACH PARTITION record_vectors_10_feature_keys_idx;

ALTER INDEX record_vectors_pkey ATTACH PARTITION record_vectors_10_pkey;

ALTER INDEX record_vectors_by_tenant ATTACH PARTITION record_vectors_10_tenant_id_model_type_idx;

ALTER INDEX record_vectors_by_embedding ATTACH PARTITION record_vectors_11_embedded_at_tenant_id_record_id_idx;

ALTER INDEX record_vectors_feature_keys ATTACH PARTITION record_vectors_11_feature_keys_idx;

ALTER INDEX record_vectors_pkey ATTACH PARTITION record_vectors_11_pkey;

ALTER INDEX record_vectors_by_tenant ATTACH PARTITION record_vectors_11_tenant_id_model_type_idx;

ALTER INDEX record_vectors_by_embedding ATTACH PARTITION record_vectors_12_embedded_at_tenant_id_record_id_idx;

ALTER INDEX record_vectors_feature_keys ATTACH PARTITION record_vectors_12_feature_keys_idx;

ALTER INDEX record_vectors_pkey ATTACH PARTITION record_vectors_12_pkey;

ALTER INDEX record_vectors_by_tenant ATTACH PARTITION record_vectors_12_tenant_id_model_type_idx;

ALTER INDEX record_vectors_by_embedding ATTACH PARTITION record_vectors_13_embedded_at_tenant_id_record_id_idx;

ALTER INDEX record_vectors_feature_keys ATTACH PARTITION record_vectors_13_feature_keys_idx;

ALTER INDEX record_vectors_pkey ATTACH PARTITION record_vectors_13_pkey;

ALTER INDEX record_vectors_by_tenant ATTACH PARTITION record_vectors_13_tenant_id_model_type_idx;

ALTER INDEX record_vectors_by_embedding ATTACH PARTITION record_vectors_14_embedded_at_tenant_id_record_id_idx;

ALTER INDEX record_vectors_feature_keys ATTACH PARTITION record_vectors_14_feature_keys_idx;

ALTER INDEX record_vectors_pkey ATTACH PARTITION record_vectors_14_pkey;

ALTER INDEX record_vectors_by_tenant ATTACH PARTITION record_vectors_14_tenant_id_model_type_idx;

ALTER INDEX record_vectors_by_embedding ATTACH PARTITION record_vectors_15_embedded_at_tenant_id_record_id_idx;

ALTER INDEX record_vectors_feature_keys ATTACH PARTITION record_vectors_15_feature_keys_idx;

ALTER INDEX record_vectors_pkey ATTACH PARTITION record_vectors_15_pkey;

ALTER INDEX record_vectors_by_tenant ATTACH PARTITION record_vectors_15_tenant_id_model_type_idx;

ALTER INDEX record_vectors_by_embedding ATTACH PARTITION record_vectors_1_embedded_at_tenant_id_record_id_idx;

ALTER INDEX record_vectors_feature_keys ATTACH PARTITION record_vectors_1_feature_keys_idx;

ALTER INDEX record_vectors_pkey ATTACH PARTITION record_vectors_1_pkey;

ALTER INDEX record_vectors_by_tenant ATTACH PARTITION record_vectors_1_tenant_id_model_type_idx;

ALTER INDEX record_vectors_by_embedding ATTACH PARTITION record_vectors_2_embedded_at_tenant_id_record_id_idx;

ALTER INDEX record_vectors_feature_keys ATTACH PARTITION record_vectors_2_feature_keys_idx;

ALTER INDEX record_vectors_pkey ATTACH PARTITION record_vectors_2_pkey;

ALTER INDEX record_vectors_by_tenant ATTACH PARTITION record_vectors_2_tenant_id_model_type_idx;

ALTER INDEX record_vectors_by_embedding ATTACH PARTITION record_vectors_3_embedded_at_tenant_id_record_id_idx;

ALTER INDEX record_vectors_feature_keys ATTACH PARTITION record_vectors_3_feature_keys_idx;

ALTER INDEX record_vectors_pkey ATTACH PARTITION record_vectors_3_pkey;

ALTER INDEX record_vectors_by_tenant ATTACH PARTITION record_vectors_3_tenant_id_model_type_idx;

ALTER INDEX record_vectors_by_embedding ATTACH PARTITION record_vectors_4_embedded_at_tenant_id_record_id_idx;

ALTER INDEX record_vectors_feature_keys ATTACH PARTITION record_vectors_4_feature_keys_idx;

ALTER INDEX record_vectors_pkey ATTACH PARTITION record_vectors_4_pkey;

ALTER INDEX record_vectors_by_tenant ATTACH PARTITION record_vectors_4_tenant_id_model_type_idx;

ALTER INDEX record_vectors_by_embedding ATTACH PARTITION record_vectors_5_embedded_at_tenant_id_record_id_idx;

ALTER INDEX record_vectors_feature_keys ATTACH PARTITION record_vectors_5_feature_keys_idx;

ALTER INDEX record_vectors_pkey ATTACH PARTITION record_vectors_5_pkey;

ALTER INDEX record_vectors_by_tenant ATTACH PARTITION record_vectors_5_tenant_id_model_type_idx;

ALTER INDEX record_vectors_by_embedding ATTACH PARTITION record_vectors_6_embedded_at_tenant_id_record_id_idx;

ALTER INDEX record_vectors_feature_keys ATTACH PARTITION record_vectors_6_feature_keys_idx;

ALTER INDEX record_vectors_pkey ATTACH PARTITION record_vectors_6_pkey;

ALTER INDEX record_vectors_by_tenant ATTACH PARTITION record_vectors_6_tenant_id_model_type_idx;

ALTER INDEX record_vectors_by_embedding ATTACH PARTITION record_vectors_7_embedded_at_tenant_id_record_id_idx;

ALTER INDEX record_vectors_feature_keys ATTACH PARTITION record_vectors_7_feature_keys_idx;

ALTER INDEX record_vectors_pkey ATTACH PARTITION record_vectors_7_pkey;

ALTER INDEX record_vectors_by_tenant ATTACH PARTITION record_vectors_7_tenant_id_model_type_idx;

ALTER INDEX record_vectors_by_embedding ATTACH PARTITION record_vectors_8_embedded_at_tenant_id_record_id_idx;

ALTER INDEX record_vectors_feature_keys ATTACH PARTITION record_vectors_8_feature_keys_idx;

ALTER INDEX record_vectors_pkey ATTACH PARTITION record_vectors_8_pkey;

ALTER INDEX record_vectors_by_tenant ATTACH PARTITION record_vectors_8_tenant_id_model_type_idx;

ALTER INDEX record_vectors_by_embedding ATTACH PARTITION record_vectors_9_embedded_at_tenant_id_record_id_idx;

ALTER INDEX record_vectors_feature_keys ATTACH PARTITION record_vectors_9_feature_keys_idx;

ALTER INDEX record_vectors_pkey ATTACH PARTITION record_vectors_9_pkey;

ALTER INDEX record_vectors_by_tenant ATTACH PARTITION record_vectors_9_tenant_id_model_type_idx;

CREATE TRIGGER audit_log_append_only BEFORE DELETE OR UPDATE ON audit_log FOR EACH ROW EXECUTE FUNCTION engram_audit_log_guard();

CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log FOR EACH STATEMENT EXECUTE FUNCTION engram_refuse_truncate();

CREATE TRIGGER episode_entries_append_only BEFORE DELETE OR UPDATE ON episode_entries FOR EACH ROW EXECUTE FUNCTION engram_episode_entries_guard();

CREATE TRIGGER episode_entries_no_truncate BEFORE TRUNCATE ON episode_entries FOR EACH STATEMENT EXECUTE FUNCTION engram_refuse_truncate();

CREATE TRIGGER lease_counters_monotonic BEFORE UPDATE ON lease_counters FOR EACH ROW EXECUTE FUNCTION engram_lease_monotonic();

CREATE TRIGGER leases_monotonic BEFORE UPDATE ON leases FOR EACH ROW EXECUTE FUNCTION engram_lease_monotonic();

CREATE TRIGGER record_versions_append_only BEFORE DELETE OR UPDATE ON record_versions FOR EACH ROW EXECUTE FUNCTION engram_record_versions_guard();

CREATE TRIGGER record_versions_no_truncate BEFORE TRUNCATE ON record_versions FOR EACH STATEMENT EXECUTE FUNCTION engram_refuse_truncate();

CREATE TRIGGER records_expiry BEFORE INSERT OR UPDATE OF status ON records FOR EACH ROW EXECUTE FUNCTION engram_record_expiry();

CREATE TRIGGER records_revision BEFORE UPDATE ON records FOR EACH ROW EXECUTE FUNCTION engram_record_revision();

CREATE TRIGGER records_snapshot_insert AFTER INSERT ON records FOR EACH ROW EXECUTE FUNCTION engram_record_snapshot();

CREATE TRIGGER records_snapshot_update AFTER UPDATE ON records FOR EACH ROW WHEN ((new.version <> old.version)) EXECUTE FUNCTION engram_record_snapshot();

CREATE TRIGGER records_tsv BEFORE INSERT OR UPDATE OF payload, tags ON records FOR EACH ROW EXECUTE FUNCTION engram_record_tsv();

CREATE TRIGGER records_unmaterialise AFTER UPDATE OF status ON records FOR EACH ROW WHEN (((old.status = ANY (ARRAY['active'::text, 'contested'::text])) AND (new.status <> ALL (ARRAY['active'::text, 'contested'::text])))) EXECUTE FUNCTION engram_record_unmaterialise();

CREATE TRIGGER records_vectors_follow AFTER UPDATE OF status, sensitivity ON records FOR EACH ROW WHEN (((old.status IS DISTINCT FROM new.status) OR (old.sensitivity IS DISTINCT FROM new.sensitivity))) EXECUTE FUNCTION engram_record_vectors_follow();

CREATE TRIGGER reviews_transition BEFORE UPDATE ON reviews FOR EACH ROW EXECUTE FUNCTION engram_review_transition();

ALTER TABLE ONLY agent_reputation
    ADD CONSTRAINT agent_reputation_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id);

ALTER TABLE ONLY api_keys
    ADD CONSTRAINT api_keys_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id);

ALTER TABLE ONLY artifacts
    ADD CONSTRAINT artifacts_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id);

ALTER TABLE ONLY audit_log
    ADD CONSTRAINT audit_log_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id);

ALTER TABLE ONLY candidates
    ADD CONSTRAINT candidates_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id);

ALTER TABLE ONLY episode_entries
    ADD CONSTRAINT episode_entries_tenant_id_record_id_fkey FOREIGN KEY (tenant_id, record_id) REFERENCES records(tenant_id, id) ON DELETE CASCADE;

ALTER TABLE ONLY episode_features
    ADD CONSTRAINT episode_features_tenant_id_episode_id_fkey FOREIGN KEY (tenant_id, episode_id) REFERENCES records(tenant_id, id) ON DELETE CASCADE;

ALTER TABLE ONLY erasures
    ADD CONSTRAINT erasures_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id);

ALTER TABLE ONLY feedback
    ADD CONSTRAINT feedback_tenant_id_record_id_fkey FOREIGN KEY (tenant_id, record_id) REFERENCES records(tenant_id, id) ON DELETE CASCADE;

ALTER TABLE ONLY job_cursors
    ADD CONSTRAINT job_cursors_run_id_fkey FOREIGN KEY (run_id) REFERENCES job_runs(id) ON DELETE SET NULL;

ALTER TABLE ONLY lease_counters
    ADD CONSTRAINT lease_counters_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id);

ALTER TABLE ONLY leases
    ADD CONSTRAINT leases_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id);

ALTER TABLE ONLY provenance
    ADD CONSTRAINT provenance_tenant_id_record_id_fkey FOREIGN KEY (tenant_id, record_id) REFERENCES records(tenant_id, id) ON DELETE CASCADE;

ALTER TABLE ONLY record_flags
    ADD CONSTRAINT record_flags_tenant_id_record_id_fkey FOREIGN KEY (tenant_id, record_id) REFERENCES records(tenant_id, id) ON DELETE CASCADE;

ALTER TABLE ONLY record_flags
    ADD CONSTRAINT record_flags_tenant_id_source_id_fkey FOREIGN KEY (tenant_id, source_id) REFERENCES records(tenant_id, id) ON DELETE CASCADE;

ALTER TABLE record_vectors
    ADD CONSTRAINT record_vectors_tenant_id_record_id_fkey FOREIGN KEY (tenant_id, record_id) REFERENCES records(tenant_id, id) ON DELETE CASCADE;

ALTER TABLE ONLY record_versions
    ADD CONSTRAINT record_versions_tenant_id_record_id_fkey FOREIGN KEY (tenant_id, record_id) REFERENCES records(tenant_id, id) ON DELETE CASCADE;

ALTER TABLE ONLY records
    ADD CONSTRAINT records_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id);

ALTER TABLE ONLY relations
    ADD CONSTRAINT relations_tenant_id_source_id_fkey FOREIGN KEY (tenant_id, source_id) REFERENCES records(tenant_id, id) ON DELETE CASCADE;

ALTER TABLE ONLY relations
    ADD CONSTRAINT relations_tenant_id_target_id_fkey FOREIGN KEY (tenant_id, target_id) REFERENCES records(tenant_id, id) ON DELETE CASCADE;

ALTER TABLE ONLY retrievals
    ADD CONSTRAINT retrievals_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id);

ALTER TABLE ONLY reviews
    ADD CONSTRAINT reviews_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id);

ALTER TABLE ONLY reviews
    ADD CONSTRAINT reviews_tenant_id_record_id_fkey FOREIGN KEY (tenant_id, record_id) REFERENCES records(tenant_id, id) ON DELETE CASCADE;

ALTER TABLE ONLY threads
    ADD CONSTRAINT threads_tenant_id_episode_id_fkey FOREIGN KEY (tenant_id, episode_id) REFERENCES records(tenant_id, id) ON DELETE CASCADE;

ALTER TABLE ONLY threads
    ADD CONSTRAINT threads_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id);

ALTER TABLE ONLY threads
    ADD CONSTRAINT threads_tenant_id_working_id_fkey FOREIGN KEY (tenant_id, working_id) REFERENCES records(tenant_id, id) ON DELETE SET NULL (working_id);

ALTER TABLE ONLY write_budgets
    ADD CONSTRAINT write_budgets_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id);
