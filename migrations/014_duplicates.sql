-- Duplicate resolution over stored records (substrate RFC §15.7,
-- write-path RFC §12.3): the consolidation pass reads the live durable
-- records revised since its watermark, in the order of their latest
-- revision, and those whose vector was written since, in that order, and
-- compares each with the tenant's others.

-- +goose Up
CREATE INDEX records_by_revision ON records (updated_at, tenant_id, id)
    WHERE type IN ('semantic', 'competence', 'plan_graph') AND status IN ('active', 'contested');
CREATE INDEX record_vectors_by_embedding ON record_vectors (embedded_at, tenant_id, record_id);

-- +goose Down
DROP INDEX record_vectors_by_embedding;
DROP INDEX records_by_revision;
