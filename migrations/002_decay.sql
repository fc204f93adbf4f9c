-- Decay and forgetting (substrate RFC §11, §15.6, §15A.7, §15B): which
-- records follow their type's configured decay profile, when a record
-- expired, the salience each live record had at the last sweep, the
-- idempotency log of feedback, and the runs and cursors of the periodic jobs.

-- +goose Up
-- decay_inherited: the record named no decay profile, so it follows its
-- type's profile in the configuration; the decay sweep stamps that profile
-- on it when the configuration changes. A record that names a profile keeps
-- it. expired_at: when the record expired; the purge grace period counts
-- from it (two-phase collection, governance chapter §12.7.5).
ALTER TABLE records
    ADD COLUMN decay_inherited boolean NOT NULL DEFAULT false,
    ADD COLUMN expired_at timestamptz;

UPDATE records SET expired_at = updated_at WHERE status = 'expired';
ALTER TABLE records ADD CONSTRAINT records_expired_at CHECK ((status = 'expired') = (expired_at IS NOT NULL));

-- Feedback moves salience and last_reinforced_at, which no index covers:
-- with room left on each page such an update is a heap-only tuple (HOT)
-- and rewrites no index entry. Pages written from now on keep 15% free.
ALTER TABLE records SET (fillfactor = 85);

-- +goose StatementBegin
-- expired_at follows the status, so no code path can forget it: set when a
-- record becomes expired (at its updated_at, the revision's time), cleared
-- when it leaves that status (restored, or deleted by an operator).
CREATE FUNCTION engram_record_expiry() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status <> 'expired' THEN
        NEW.expired_at := NULL;
    ELSIF TG_OP = 'INSERT' OR OLD.status <> 'expired' THEN
        NEW.expired_at := NEW.updated_at;
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER records_expiry BEFORE INSERT OR UPDATE OF status ON records
    FOR EACH ROW EXECUTE FUNCTION engram_record_expiry();

-- The decay sweep walks the active set of every tenant in (tenant, id) order, a
-- batch at a time; the purge finds expired records past their grace period.
-- No index covers payload: a payload change (an episode's append, a
-- procedure's statistics) can then be a heap-only update.
CREATE INDEX records_live ON records (tenant_id, id) WHERE status IN ('active', 'contested');
CREATE INDEX records_expired ON records (expired_at) WHERE status = 'expired';

-- Each live record's salience as of computed_at, materialised by the decay
-- sweep for metrics and set-based reads, to within 0.01. It is never the
-- source of truth: reads compute the exact value from the record (see
-- decay/doc.go). A narrow table of its own, so that a sweep never rewrites
-- the records themselves. Derived, so unlogged: no WAL, and emptied by a
-- crash, after which the next sweep writes every row again.
CREATE UNLOGGED TABLE record_salience (
    tenant_id   text             NOT NULL,
    record_id   uuid             NOT NULL,
    type        text             NOT NULL,
    salience    double precision NOT NULL CHECK (salience >= 0),
    computed_at timestamptz      NOT NULL,
    PRIMARY KEY (tenant_id, record_id)
) WITH (fillfactor = 80);

-- +goose StatementBegin
-- A record that leaves the active set (expired, deleted, superseded, …)
-- leaves record_salience too: it holds live records only.
CREATE FUNCTION engram_record_unmaterialise() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM record_salience WHERE tenant_id = OLD.tenant_id AND record_id = OLD.id;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER records_unmaterialise AFTER UPDATE OF status ON records
    FOR EACH ROW WHEN (OLD.status IN ('active', 'contested') AND NEW.status NOT IN ('active', 'contested'))
    EXECUTE FUNCTION engram_record_unmaterialise();

-- Feedback on records (§15.6), one row per (tenant, scope, record): the
-- scope is the retrieval id or idempotency key the caller sent (or a
-- generated one), so the same feedback sent twice counts once.
CREATE TABLE feedback (
    tenant_id text        NOT NULL,
    scope     text        NOT NULL CHECK (scope <> ''),
    record_id uuid        NOT NULL,
    outcome   text        NOT NULL CHECK (outcome IN ('used_success', 'used_failure', 'unused')),
    at        timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, scope, record_id),
    FOREIGN KEY (tenant_id, record_id) REFERENCES records (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX feedback_by_record ON feedback (tenant_id, record_id);

-- Every run of a periodic job: when, where, what it counted, how it ended.
-- Jobs work across tenants, so these rows belong to none; they hold counts,
-- never content.
CREATE TABLE job_runs (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job        text        NOT NULL CHECK (job <> ''),
    trigger    text        NOT NULL CHECK (trigger IN ('schedule', 'manual')),
    node       text        NOT NULL,
    status     text        NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'interrupted', 'abandoned')),
    started_at timestamptz NOT NULL,
    ended_at   timestamptz,
    counts     jsonb       NOT NULL DEFAULT '{}',
    error      text,
    CONSTRAINT job_runs_ended CHECK ((status = 'running') = (ended_at IS NULL))
);
CREATE INDEX job_runs_by_job ON job_runs (job, id);

-- Where a job stopped: a run that is interrupted resumes from here.
CREATE TABLE job_cursors (
    job        text        PRIMARY KEY,
    cursor     jsonb       NOT NULL,
    run_id     bigint      REFERENCES job_runs (id) ON DELETE SET NULL,
    updated_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE job_cursors, job_runs, feedback;
DROP TRIGGER records_unmaterialise ON records;
DROP TABLE record_salience;
DROP FUNCTION engram_record_unmaterialise;
DROP INDEX records_expired, records_live;
ALTER TABLE records RESET (fillfactor);
DROP TRIGGER records_expiry ON records;
DROP FUNCTION engram_record_expiry;
ALTER TABLE records DROP CONSTRAINT records_expired_at;
ALTER TABLE records DROP COLUMN expired_at, DROP COLUMN decay_inherited;
