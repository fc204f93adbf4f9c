-- Each agent's standing as a writer (write-path RFC §12.11.5): how many of
-- its writes the gates took and refused, how many contradicted live facts,
-- and how the records it wrote served later (feedback). An agent whose
-- reputation falls below the configured threshold has its writes sent to
-- review.

-- +goose Up
CREATE TABLE agent_reputation (
    tenant_id      text        NOT NULL REFERENCES tenants (id),
    agent_id       text        NOT NULL CHECK (agent_id <> ''),
    writes         bigint      NOT NULL DEFAULT 0 CHECK (writes >= 0),
    accepted       bigint      NOT NULL DEFAULT 0 CHECK (accepted >= 0),
    rejected       bigint      NOT NULL DEFAULT 0 CHECK (rejected >= 0),
    contradictions bigint      NOT NULL DEFAULT 0 CHECK (contradictions >= 0),
    successes      bigint      NOT NULL DEFAULT 0 CHECK (successes >= 0),
    failures       bigint      NOT NULL DEFAULT 0 CHECK (failures >= 0),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, agent_id)
);

-- +goose Down
DROP TABLE agent_reputation;
