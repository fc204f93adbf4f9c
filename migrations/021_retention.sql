-- Retention (write-path RFC §12.10.4) and the compliance report (§12.10.5).
--
-- A record's retention class follows from what its classification
-- recorded: PII-bearing when it carries the tag 'pii' (set by the write
-- path when redaction found personal data, or by the writer) or its
-- sensitivity is high or hyper; business-sensitive at medium; general at
-- low; public at public. One immutable function says so, mirrored by
-- memory.ClassOf (a test holds the two together), so the retention job, the
-- compliance report and the index below all mean the same thing.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION engram_retention_class(tags text[], sensitivity text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN 'pii' = ANY(tags) OR sensitivity IN ('high', 'hyper') THEN 'pii'
        WHEN sensitivity = 'medium' THEN 'business_sensitive'
        WHEN sensitivity = 'low' THEN 'general'
        ELSE 'public'
    END
$$;
-- +goose StatementEnd

-- The retention job and the compliance report find a class's records
-- created before a cutoff, oldest first, whatever their status.
CREATE INDEX records_retention ON records (engram_retention_class(tags, sensitivity), created_at);

-- The latest compliance reports (§12.10.5), as the compliance job wrote
-- them. A report is the operator's, across every tenant, like job_runs: it
-- holds counts and record ids, never content. Only the newest few are kept.
CREATE TABLE compliance_reports (
    id     bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id bigint,
    at     timestamptz NOT NULL,
    report jsonb       NOT NULL
);

-- +goose Down
DROP TABLE compliance_reports;
DROP INDEX records_retention;
DROP FUNCTION engram_retention_class;
