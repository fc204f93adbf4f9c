-- Every classified event is searchable at once (issue 9): an episode's
-- timeline entries are passages of their own for lexical search, each with
-- the tsvector of its event's full text (up to 8 KiB, memory.MaxEventSearchBytes),
-- written with the entry. An append writes only its new entries' terms:
-- nothing of the episode is re-read or rewritten, however long it runs
-- (substrate RFC §5, episodic memory is append-only). Retrieval ranks an
-- episode by its best passage: its own text (tags, outcome, tools) or one
-- of its entries.

-- +goose Up
ALTER TABLE episode_entries ADD COLUMN tsv tsvector;

-- Entries appended before this migration are matched on their summary.
-- The append-only guard is lifted for this derived column only, here.
ALTER TABLE episode_entries DISABLE TRIGGER episode_entries_append_only;
UPDATE episode_entries SET tsv = nullif(strip(to_tsvector('english', entry ->> 'summary')), '')
WHERE part = 'timeline' AND entry ->> 'summary' <> '';
ALTER TABLE episode_entries ENABLE TRIGGER episode_entries_append_only;

-- Tenant and lexemes in one GIN index (btree_gin, migration 005); no
-- pending list, for the reason records_search has none.
CREATE INDEX episode_entries_search ON episode_entries USING gin (tenant_id, tsv) WITH (fastupdate = off);
-- The newest entry of a tenant: whether its BM25 statistics are stale.
CREATE INDEX episode_entries_by_seq ON episode_entries (tenant_id, seq);

-- +goose StatementBegin
-- A record's own text only: an episode's entries are passages of their own
-- (until now their summaries joined its text when its payload was revised,
-- which for most threads meant never).
CREATE OR REPLACE FUNCTION engram_record_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.tsv := to_tsvector('english', left(engram_search_text(NEW.type, NEW.payload, NEW.tags), 65536));
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

-- BM25 counts passages: live records and the timeline entries of live
-- episodes. docs stays the number of live records (the vector half's
-- choice between exact ranking and HNSW); entries_seq is the newest entry
-- the statistics saw.
ALTER TABLE corpus_stats ADD COLUMN passages bigint, ADD COLUMN entries_seq bigint NOT NULL DEFAULT 0;
UPDATE corpus_stats SET passages = docs;
ALTER TABLE corpus_stats ALTER COLUMN passages SET NOT NULL, ADD CHECK (passages >= 0);

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION engram_record_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    txt text := engram_search_text(NEW.type, NEW.payload, NEW.tags);
BEGIN
    IF NEW.type = 'episodic' AND TG_OP = 'UPDATE' THEN
        txt := concat_ws(' ', txt, (
            SELECT string_agg(concat_ws(' ', entry ->> 'summary', entry ->> 'tool'), ' ' ORDER BY seq)
            FROM episode_entries WHERE tenant_id = NEW.tenant_id AND record_id = NEW.id));
    END IF;
    NEW.tsv := to_tsvector('english', left(txt, 65536));
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
ALTER TABLE corpus_stats DROP COLUMN entries_seq, DROP COLUMN passages;
DROP INDEX episode_entries_by_seq;
DROP INDEX episode_entries_search;
ALTER TABLE episode_entries DROP COLUMN tsv;
