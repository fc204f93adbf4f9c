-- Lease-based write locks with fencing tokens (write-path RFC §12.8.3): an
-- agent leases a record, or every record of a scope, for a bounded time;
-- each grant carries a fencing token, and a write carrying a token older
-- than its resource's current one is refused by the write path.
--
-- lease_counters is the fencing counter: one per tenant, so that a record's
-- and its scope's tokens are comparable (a grant on either fences every
-- older grant on both). It only grows, across releases, expiries and
-- daemon restarts.
--
-- leases holds one row per leased resource: its latest grant (holder,
-- token, expiry, release). The row stays after release and expiry, as the
-- resource's current fencing token; a new grant replaces it.

-- +goose Up
CREATE TABLE lease_counters (
    tenant_id  text   NOT NULL PRIMARY KEY REFERENCES tenants (id),
    last_token bigint NOT NULL CHECK (last_token > 0)
);

CREATE TABLE leases (
    tenant_id   text        NOT NULL REFERENCES tenants (id),
    -- The current grant's id: a re-entrant grant and a renewal keep it.
    id          uuid        NOT NULL,
    -- The resource: a record, or a scope (every record whose scope it is).
    record_id   uuid,
    scope       text        CHECK (scope <> ''),
    agent_id    text        NOT NULL CHECK (agent_id <> ''),
    token       bigint      NOT NULL CHECK (token > 0),
    granted_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    released_at timestamptz,
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT leases_one_resource CHECK ((record_id IS NULL) <> (scope IS NULL)),
    CONSTRAINT leases_bounded CHECK (expires_at > granted_at)
);
CREATE UNIQUE INDEX leases_record ON leases (tenant_id, record_id) WHERE record_id IS NOT NULL;
CREATE UNIQUE INDEX leases_scope ON leases (tenant_id, scope) WHERE scope IS NOT NULL;

-- +goose StatementBegin
-- Fencing tokens never go back (§12.8.3: "monotonically increasing"): not a
-- tenant's counter, not a resource's token. A resource stays the resource it
-- is.
CREATE FUNCTION engram_lease_monotonic() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'lease_counters' THEN
        IF NEW.last_token <= OLD.last_token OR NEW.tenant_id <> OLD.tenant_id THEN
            RAISE EXCEPTION 'fencing counter of %: % may not follow %', OLD.tenant_id, NEW.last_token, OLD.last_token
                USING ERRCODE = 'restrict_violation';
        END IF;
        RETURN NEW;
    END IF;
    IF NEW.token < OLD.token THEN
        RAISE EXCEPTION 'lease %: fencing token % may not follow %', OLD.id, NEW.token, OLD.token
            USING ERRCODE = 'restrict_violation';
    END IF;
    IF NEW.tenant_id <> OLD.tenant_id OR NEW.record_id IS DISTINCT FROM OLD.record_id
       OR NEW.scope IS DISTINCT FROM OLD.scope THEN
        RAISE EXCEPTION 'lease %: its resource is immutable', OLD.id USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER lease_counters_monotonic BEFORE UPDATE ON lease_counters
    FOR EACH ROW EXECUTE FUNCTION engram_lease_monotonic();
CREATE TRIGGER leases_monotonic BEFORE UPDATE ON leases
    FOR EACH ROW EXECUTE FUNCTION engram_lease_monotonic();

-- +goose Down
DROP TABLE leases, lease_counters;
DROP FUNCTION engram_lease_monotonic;
