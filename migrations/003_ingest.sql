-- The ingestion and policy planes (substrate RFC §15.4–15.5): the staging
-- area of candidates that agent runtimes' events become, and the threads
-- whose episodes and working memory the policy plane keeps.

-- +goose Up
-- An acknowledged event is a row here (redacted before it was written), so
-- it survives a crash; the policy plane classifies it exactly once, in the
-- transaction that writes its records. Events are kept after
-- classification: episode timelines refer to them as evt://<id>.
CREATE TABLE candidates (
    tenant_id       text        NOT NULL REFERENCES tenants (id),
    id              uuid        NOT NULL,
    seq             bigint      GENERATED ALWAYS AS IDENTITY,
    agent_id        text        NOT NULL,
    thread_id       text        NOT NULL,
    kind            text        NOT NULL,
    event_time      timestamptz NOT NULL,
    event           jsonb       NOT NULL,
    -- SHA-256 of the idempotency key, or of the event's content, agent and
    -- thread: a retried event is absorbed and answered with its first id.
    dedup_key       bytea       NOT NULL,
    sensitivity     text        NOT NULL CHECK (sensitivity IN ('public', 'low', 'medium', 'high', 'hyper')),
    redactions      text[]      NOT NULL DEFAULT '{}',
    status          text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'dropped', 'dead')),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    decision        jsonb,
    record_ids      uuid[]      NOT NULL DEFAULT '{}',
    received_at     timestamptz NOT NULL DEFAULT now(),
    processed_at    timestamptz,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, dedup_key)
);
CREATE INDEX candidates_pending ON candidates (seq) WHERE status = 'pending';
CREATE INDEX candidates_by_status ON candidates (tenant_id, status, seq);

-- A thread's open episode and working memory. An outcome closes it; the next
-- event of the same thread id opens a new generation.
CREATE TABLE threads (
    tenant_id  text        NOT NULL REFERENCES tenants (id),
    thread_id  text        NOT NULL,
    generation integer     NOT NULL,
    agent_id   text        NOT NULL,
    episode_id uuid        NOT NULL,
    working_id uuid,
    status     text        NOT NULL CHECK (status IN ('open', 'closed')),
    opened_at  timestamptz NOT NULL DEFAULT now(),
    closed_at  timestamptz,
    PRIMARY KEY (tenant_id, thread_id, generation),
    FOREIGN KEY (tenant_id, episode_id) REFERENCES records (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, working_id) REFERENCES records (tenant_id, id) ON DELETE SET NULL (working_id)
);
CREATE UNIQUE INDEX threads_one_open ON threads (tenant_id, thread_id) WHERE status = 'open';

-- +goose Down
DROP TABLE threads, candidates;
