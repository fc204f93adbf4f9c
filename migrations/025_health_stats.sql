-- The health statistics of the operator console (issue 16; substrate RFC
-- §14, §15.10; write-path RFC §12.12): counts per time bucket over a
-- tenant's records, audit log, feedback and retrieval log. Each index lets
-- one bucketed count read a time range of one tenant, and the records' and
-- audit log's carry the column the count groups by, so the counts are
-- index-only scans that do not touch the tables' rows.

-- +goose Up
CREATE INDEX records_by_created ON records (tenant_id, created_at) INCLUDE (type, status);
CREATE INDEX audit_log_by_time ON audit_log (tenant_id, at) INCLUDE (action);
CREATE INDEX feedback_by_time ON feedback (tenant_id, at);
CREATE INDEX retrievals_by_tenant_time ON retrievals (tenant_id, at);

-- +goose Down
DROP INDEX retrievals_by_tenant_time, feedback_by_time, audit_log_by_time, records_by_created;
