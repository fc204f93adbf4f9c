-- Episodic memory is append-only (substrate RFC §5): what a thread appends
-- to its episode's timeline and tool graph is stored as immutable rows, so
-- an append writes only the new entries instead of rewriting (and
-- snapshotting into the version log) a timeline that grows for as long as
-- the thread runs. Reads merge the rows back into the payload, after the
-- entries the episode was created with; appended_at serves point-in-time
-- reads.

-- +goose Up
CREATE TABLE episode_entries (
    tenant_id   text        NOT NULL,
    record_id   uuid        NOT NULL,
    seq         bigint      GENERATED ALWAYS AS IDENTITY,
    part        text        NOT NULL CHECK (part IN ('timeline', 'tool_graph')),
    entry       jsonb       NOT NULL CHECK (jsonb_typeof(entry) = 'object'),
    appended_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, record_id, seq),
    FOREIGN KEY (tenant_id, record_id) REFERENCES records (tenant_id, id) ON DELETE CASCADE
);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION engram_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND TG_TABLE_NAME IN ('record_versions', 'episode_entries')
       AND current_setting('engram.purge', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER episode_entries_append_only BEFORE UPDATE OR DELETE ON episode_entries
    FOR EACH ROW EXECUTE FUNCTION engram_append_only();
CREATE TRIGGER episode_entries_no_truncate BEFORE TRUNCATE ON episode_entries
    FOR EACH STATEMENT EXECUTE FUNCTION engram_append_only();

-- +goose Down
DROP TABLE episode_entries;
