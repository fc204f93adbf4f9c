-- Flags on records that need re-validation (write-path RFC §12.11.5,
-- "quarantine on detection: ... all dependent items are flagged for
-- re-validation"). A flag is not a revision: the flagged record keeps its
-- status and version; the row says which record raised the flag, why and
-- when. Releasing the source clears the flags it raised. The composite
-- foreign keys keep both ends inside one tenant, as relations do, and a
-- purge takes a record's flags with it.

-- +goose Up
CREATE TABLE record_flags (
    tenant_id text        NOT NULL,
    record_id uuid        NOT NULL,
    flag      text        NOT NULL CHECK (flag IN ('derived_from_quarantined')),
    source_id uuid        NOT NULL,
    reason    text        NOT NULL DEFAULT '',
    at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, record_id, flag, source_id),
    FOREIGN KEY (tenant_id, record_id) REFERENCES records (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, source_id) REFERENCES records (tenant_id, id) ON DELETE CASCADE,
    CHECK (record_id <> source_id)
);
CREATE INDEX record_flags_by_source ON record_flags (tenant_id, source_id);
CREATE INDEX record_flags_by_flag ON record_flags (tenant_id, flag, record_id);

-- +goose Down
DROP TABLE record_flags;
