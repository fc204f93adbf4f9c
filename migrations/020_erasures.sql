-- Erasure on demand (write-path RFC §12.10.2, right to erasure): each
-- request to forget a data subject is a row here, its progress and, once
-- it has run, its certificate. The row holds no personal data: the subject
-- is kept as the SHA-256 of its normalised identifiers, and the
-- identifiers themselves live only in the memory of the daemon running the
-- erasure (a request interrupted by a restart is resubmitted; the
-- compliance job of §12.10.5 finds it by its status).
--
-- An erasure hard-deletes what the append-only tables otherwise keep for
-- ever: the versions and timeline entries of the records it erases (as a
-- purge does) and the audit entries that carry the subject's data. The
-- transaction says so (SET LOCAL engram.erase = 'on'), the way a purge
-- says engram.purge and a compression engram.compress.

-- +goose Up
CREATE TABLE erasures (
    tenant_id      text        NOT NULL REFERENCES tenants (id),
    id             uuid        NOT NULL,
    subject_sha256 text        NOT NULL CHECK (subject_sha256 ~ '^[0-9a-f]{64}$'),
    -- How many identifiers the request named, by kind: {"email": 1, ...}.
    identifiers    jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(identifiers) = 'object'),
    status         text        NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'interrupted')),
    -- The step the erasure is at while it runs: matching, erasing,
    -- rebuilding, scrubbing, verifying; done when it has ended.
    phase          text        NOT NULL DEFAULT 'matching',
    -- Counts per layer and per kind of trace (api.ErasureCounts).
    counts         jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(counts) = 'object'),
    rebuilt        uuid[]      NOT NULL DEFAULT '{}',
    -- The verification scan's result (api.ErasureVerification).
    verification   jsonb,
    -- What went wrong, in words that name no data (the log has the rest).
    error          text,
    requested_at   timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    completed_at   timestamptz,
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT erasures_completed CHECK ((status = 'running') = (completed_at IS NULL))
);
-- The compliance job's question: which erasures have not completed.
CREATE INDEX erasures_unfinished ON erasures (tenant_id, requested_at) WHERE status <> 'completed';

-- +goose StatementBegin
-- As migration 013, and an erasing transaction may delete version rows,
-- timeline entries and audit entries.
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
    IF TG_OP = 'DELETE' AND TG_TABLE_NAME IN ('record_versions', 'episode_entries', 'audit_log')
       AND current_setting('engram.erase', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
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
DROP TABLE erasures;
