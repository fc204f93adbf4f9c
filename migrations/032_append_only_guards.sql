-- Each append-only table gets a guard of its own (issue 31): one shared
-- trigger function had gathered every table's exceptions — purge,
-- compression, erasure, resealing — so that reading what one table allows
-- meant reading all of them. A guard names its table's exceptions and
-- nothing else; TRUNCATE is refused by one function with none. What each
-- table allows is unchanged:
--   record_versions: DELETE under engram.purge or engram.erase; UPDATE of a
--     sealed snapshot to the same content sealed under another key, under
--     engram.reseal (substrate RFC §15.9).
--   episode_entries: DELETE under engram.purge, engram.compress or
--     engram.erase; the same resealing UPDATE of an entry.
--   audit_log: DELETE under engram.erase (write-path RFC §12.10.2).
-- The version log, timelines and audit trail are append-only otherwise
-- (substrate RFC §5; write-path RFC §12.5.1).

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION engram_refuse_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION engram_record_versions_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND (current_setting('engram.purge', true) = 'on'
                             OR current_setting('engram.erase', true) = 'on') THEN
        RETURN OLD;
    END IF;
    IF TG_OP = 'UPDATE' AND current_setting('engram.reseal', true) = 'on'
       AND OLD.snapshot -> 'payload' ? 'sealed' AND NEW.snapshot -> 'payload' ? 'sealed'
       AND (NEW.snapshot -> 'payload') - 'sealed' = (OLD.snapshot -> 'payload') - 'sealed'
       AND NEW.snapshot - 'payload' = OLD.snapshot - 'payload'
       AND (NEW.tenant_id, NEW.record_id, NEW.version, NEW.recorded_at)
           = (OLD.tenant_id, OLD.record_id, OLD.version, OLD.recorded_at) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'record_versions is append-only: % refused', TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION engram_episode_entries_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND (current_setting('engram.purge', true) = 'on'
                             OR current_setting('engram.compress', true) = 'on'
                             OR current_setting('engram.erase', true) = 'on') THEN
        RETURN OLD;
    END IF;
    IF TG_OP = 'UPDATE' AND current_setting('engram.reseal', true) = 'on'
       AND OLD.entry ? 'sealed' AND NEW.entry ? 'sealed'
       AND (NEW.entry - 'sealed') = (OLD.entry - 'sealed')
       AND (NEW.tenant_id, NEW.record_id, NEW.seq, NEW.part, NEW.appended_at)
           = (OLD.tenant_id, OLD.record_id, OLD.seq, OLD.part, OLD.appended_at) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'episode_entries is append-only: % refused', TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION engram_audit_log_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('engram.erase', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;
-- +goose StatementEnd

DROP TRIGGER record_versions_append_only ON record_versions;
DROP TRIGGER record_versions_no_truncate ON record_versions;
DROP TRIGGER episode_entries_append_only ON episode_entries;
DROP TRIGGER episode_entries_no_truncate ON episode_entries;
DROP TRIGGER audit_log_append_only ON audit_log;
DROP TRIGGER audit_log_no_truncate ON audit_log;
CREATE TRIGGER record_versions_append_only BEFORE UPDATE OR DELETE ON record_versions
    FOR EACH ROW EXECUTE FUNCTION engram_record_versions_guard();
CREATE TRIGGER record_versions_no_truncate BEFORE TRUNCATE ON record_versions
    FOR EACH STATEMENT EXECUTE FUNCTION engram_refuse_truncate();
CREATE TRIGGER episode_entries_append_only BEFORE UPDATE OR DELETE ON episode_entries
    FOR EACH ROW EXECUTE FUNCTION engram_episode_entries_guard();
CREATE TRIGGER episode_entries_no_truncate BEFORE TRUNCATE ON episode_entries
    FOR EACH STATEMENT EXECUTE FUNCTION engram_refuse_truncate();
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION engram_audit_log_guard();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION engram_refuse_truncate();
DROP FUNCTION engram_append_only();

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION engram_append_only() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'DELETE' AND TG_TABLE_NAME IN ('record_versions', 'episode_entries')
       AND current_setting('engram.purge', true) = 'on' THEN
        RETURN OLD;
    END IF;
    IF TG_OP = 'DELETE' AND TG_TABLE_NAME = 'episode_entries'
       AND current_setting('engram.compress', true) = 'on' THEN
        RETURN OLD;
    END IF;
    -- Erasure on demand (migration 020, write-path RFC §12.10.2).
    IF TG_OP = 'DELETE' AND TG_TABLE_NAME IN ('record_versions', 'episode_entries', 'audit_log')
       AND current_setting('engram.erase', true) = 'on' THEN
        RETURN OLD;
    END IF;
    -- Nested: a condition naming a column of one table is not planned
    -- for the other's rows.
    IF TG_OP = 'UPDATE' AND current_setting('engram.reseal', true) = 'on' THEN
        IF TG_TABLE_NAME = 'record_versions' THEN
            IF OLD.snapshot -> 'payload' ? 'sealed' AND NEW.snapshot -> 'payload' ? 'sealed'
               AND (NEW.snapshot -> 'payload') - 'sealed' = (OLD.snapshot -> 'payload') - 'sealed'
               AND NEW.snapshot - 'payload' = OLD.snapshot - 'payload'
               AND (NEW.tenant_id, NEW.record_id, NEW.version, NEW.recorded_at)
                   = (OLD.tenant_id, OLD.record_id, OLD.version, OLD.recorded_at) THEN
                RETURN NEW;
            END IF;
        ELSIF TG_TABLE_NAME = 'episode_entries' THEN
            IF OLD.entry ? 'sealed' AND NEW.entry ? 'sealed'
               AND (NEW.entry - 'sealed') = (OLD.entry - 'sealed')
               AND (NEW.tenant_id, NEW.record_id, NEW.seq, NEW.part, NEW.appended_at)
                   = (OLD.tenant_id, OLD.record_id, OLD.seq, OLD.part, OLD.appended_at) THEN
                RETURN NEW;
            END IF;
        END IF;
    END IF;
    RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;
-- +goose StatementEnd

DROP TRIGGER record_versions_append_only ON record_versions;
DROP TRIGGER record_versions_no_truncate ON record_versions;
DROP TRIGGER episode_entries_append_only ON episode_entries;
DROP TRIGGER episode_entries_no_truncate ON episode_entries;
DROP TRIGGER audit_log_append_only ON audit_log;
DROP TRIGGER audit_log_no_truncate ON audit_log;
CREATE TRIGGER record_versions_append_only BEFORE UPDATE OR DELETE ON record_versions
    FOR EACH ROW EXECUTE FUNCTION engram_append_only();
CREATE TRIGGER record_versions_no_truncate BEFORE TRUNCATE ON record_versions
    FOR EACH STATEMENT EXECUTE FUNCTION engram_append_only();
CREATE TRIGGER episode_entries_append_only BEFORE UPDATE OR DELETE ON episode_entries
    FOR EACH ROW EXECUTE FUNCTION engram_append_only();
CREATE TRIGGER episode_entries_no_truncate BEFORE TRUNCATE ON episode_entries
    FOR EACH STATEMENT EXECUTE FUNCTION engram_append_only();
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION engram_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION engram_append_only();
DROP FUNCTION engram_refuse_truncate(), engram_record_versions_guard(), engram_episode_entries_guard(), engram_audit_log_guard();
