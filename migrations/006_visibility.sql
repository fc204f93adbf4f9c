-- Who may retrieve a record (after 003 §12.8.5): every agent of its tenant,
-- or only the agent or the thread it came from. agent_id and thread_id name
-- a record's origin whatever its visibility; the policy plane sets them for
-- the records events become.

-- +goose Up
ALTER TABLE records
    ADD COLUMN visibility text NOT NULL DEFAULT 'tenant' CHECK (visibility IN ('tenant', 'agent', 'thread')),
    ADD COLUMN agent_id   text NOT NULL DEFAULT '' CHECK (length(agent_id) <= 200),
    ADD COLUMN thread_id  text NOT NULL DEFAULT '' CHECK (length(thread_id) <= 200),
    ADD CONSTRAINT records_visibility_owner CHECK (
        visibility = 'tenant' OR (visibility = 'agent' AND agent_id <> '') OR (visibility = 'thread' AND thread_id <> ''));

-- +goose Down
ALTER TABLE records DROP CONSTRAINT records_visibility_owner,
    DROP COLUMN thread_id, DROP COLUMN agent_id, DROP COLUMN visibility;
