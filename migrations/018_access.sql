-- Keys in the database and write budgets (write-path RFC §12.8.2,
-- §12.11.2). A key is stored as the SHA-256 of its secret only: the secret
-- is shown once, when it is made. Every daemon sharing the database looks a
-- key up here per request (by its hash, indexed), so a revoked key fails at
-- once everywhere.

-- +goose Up
CREATE TABLE api_keys (
    name       text        PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,99}$'),
    tenant_id  text        REFERENCES tenants (id),
    role       text        NOT NULL CHECK (role IN ('executor', 'verifier', 'orchestrator', 'curator', 'operator')),
    agent_id   text        NOT NULL DEFAULT '' CHECK (length(agent_id) <= 200),
    domains    text[]      NOT NULL DEFAULT '{}',
    clearance  text        NOT NULL DEFAULT 'hyper' CHECK (clearance IN ('public', 'low', 'medium', 'high', 'hyper')),
    hash       bytea       NOT NULL UNIQUE CHECK (length(hash) = 32),
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz,
    -- An operator key works across every tenant and has none; every other
    -- key has exactly one. An executor's own session is its agent's.
    CONSTRAINT api_keys_tenant CHECK ((role = 'operator') = (tenant_id IS NULL)),
    CONSTRAINT api_keys_executor_agent CHECK (role <> 'executor' OR agent_id <> '')
);

-- Writes per agent and session in the current budget window (§12.11.2).
CREATE TABLE write_budgets (
    tenant_id    text        NOT NULL REFERENCES tenants (id),
    agent_id     text        NOT NULL CHECK (agent_id <> ''),
    session_id   text        NOT NULL DEFAULT '' CHECK (length(session_id) <= 200),
    window_start timestamptz NOT NULL,
    writes       bigint      NOT NULL CHECK (writes >= 0),
    PRIMARY KEY (tenant_id, agent_id, session_id)
);

-- +goose Down
DROP TABLE write_budgets;
DROP TABLE api_keys;
