-- Revisions of a live record that change none of its searchable text,
-- cheaper (issue 13): feedback counting a procedure's outcome, the decay
-- sweep expiring a fact.
--
--  * A record's search text is made of its payload's words and its tags,
--    never of a procedure's performance, a plan's metrics or a fact's
--    revision object (engram_search_text, migration 022). A revision that
--    changes only those — feedback counting an outcome, the decay sweep
--    expiring a fact — keeps its tsv instead of computing it again, which
--    was a third of such a revision's time.
--  * The index of evidence refs gets a pending list of at most 256 kB, as
--    episode_entries_search did (migration 017): every revision of a live
--    record is a new row version, whose refs (the tenant and every source,
--    the same for most records) went one by one into posting trees.
--    Merged in bulk instead; a probe ("does a live record cite evt://…")
--    reads at most 256 kB unsorted.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION engram_record_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    unsearched constant text[] := ARRAY['performance', 'metrics', 'revision'];
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.tags = OLD.tags
       AND (NEW.payload - unsearched) = (OLD.payload - unsearched) THEN
        NEW.tsv := OLD.tsv;
        RETURN NEW;
    END IF;
    NEW.tsv := to_tsvector('english', left(engram_search_text(NEW.type, NEW.payload, NEW.tags), 65536));
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

ALTER INDEX records_evidence_refs SET (fastupdate = on, gin_pending_list_limit = 256);

-- +goose Down
ALTER INDEX records_evidence_refs SET (fastupdate = off);
ALTER INDEX records_evidence_refs RESET (gin_pending_list_limit);
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION engram_record_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.tsv := to_tsvector('english', left(engram_search_text(NEW.type, NEW.payload, NEW.tags), 65536));
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
