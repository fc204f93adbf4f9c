-- Idempotency keys of the write routes (write-path RFC §12.1.6–12.1.7,
-- issue 28): a write sent again with the Idempotency-Key of one that
-- committed is answered with that one's result instead of being made a
-- second time, for at least 24 hours.
--
--  * A key is its caller's: it is scoped to the tenant and the API key's
--    name, so two agents choosing the same key never meet. An operator
--    key's tenant is ''.
--  * A row with no status is a request still running: a retry meanwhile
--    is told to wait, not run alongside it. A row left so by a daemon that
--    stopped mid-request is taken over when it is old enough.
--  * response is the first result, sealed like a record's payload when
--    encryption at rest is on: it may quote a record's content.

-- +goose Up
CREATE TABLE idempotency_keys (
    tenant_id    text        NOT NULL,
    principal    text        NOT NULL,
    key          text        NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    request_hash bytea       NOT NULL,
    status       integer     CHECK (status BETWEEN 100 AND 599),
    response     bytea,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, principal, key),
    CHECK ((status IS NULL) = (response IS NULL))
);

CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);

-- +goose Down
DROP TABLE idempotency_keys;
