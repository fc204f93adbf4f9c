-- Consolidation regroups a tenant's latest closed episodes (store
-- TenantClosedEpisodes): without this index that is a sort of every closed
-- thread of the tenant on each pass.

-- +goose Up
CREATE INDEX threads_by_tenant_closing ON threads (tenant_id, closed_at, episode_id) WHERE status = 'closed';

-- +goose Down
DROP INDEX threads_by_tenant_closing;
