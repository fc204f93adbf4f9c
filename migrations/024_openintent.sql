-- OpenIntent memory entries (OpenIntent RFC-0015), served by package
-- openintent as records of type working whose payload carries the entry
-- under "openintent". An entry's identity is unique (RFC-0015 §1.2):
-- (agent_id, namespace, key) for working and episodic entries, (namespace,
-- key) for semantic ones, which belong to no agent. The index holds it for
-- every record that still occupies its key (live, waiting for review or
-- held in quarantine); a deleted or expired entry frees it. The write path
-- turns a violation into a conflict (store.ErrEntryKeyTaken).
--
-- A payload sealed at rest (encryption of its sensitivity class) has no
-- "openintent" member in the clear, so the index does not hold for it.

-- +goose Up
CREATE UNIQUE INDEX records_openintent_key ON records (
    tenant_id,
    (CASE WHEN payload -> 'openintent' ->> 'memory_type' = 'semantic' THEN '' ELSE payload -> 'openintent' ->> 'agent_id' END),
    (payload -> 'openintent' ->> 'namespace'),
    (payload -> 'openintent' ->> 'key'))
    WHERE type = 'working' AND status IN ('active', 'contested', 'draft', 'quarantined') AND payload ? 'openintent';

-- +goose Down
DROP INDEX records_openintent_key;
