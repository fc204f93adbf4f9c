-- The review queue of the approval gate (write-path RFC §12.6): a write
-- whose risk calls for a human is stored as a draft record and queued here
-- until a reviewer approves it (the draft becomes active) or rejects it (it
-- is retracted), or, for a sync-tier review, until its deadline passes and
-- the write is refused (fail-closed, §12.6.5). Each draft has one review.

-- +goose Up
CREATE TABLE reviews (
    tenant_id        text             NOT NULL REFERENCES tenants (id),
    id               uuid             NOT NULL,
    record_id        uuid             NOT NULL,
    -- async: the writer goes on and the draft waits (§12.6.4); sync: the
    -- writer waits up to sla_deadline, then the write is refused (§12.6.5).
    tier             text             NOT NULL CHECK (tier IN ('async', 'sync')),
    status           text             NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected', 'expired')),
    -- R(w) and the factor values f_i(w) it was computed from (§12.6.2), for
    -- the reviewer.
    risk             double precision NOT NULL CHECK (risk >= 0),
    risk_factors     jsonb            NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(risk_factors) = 'object'),
    -- Why the write needs review: contradictions, weak evidence, … (§12.6.6).
    reasons          jsonb            NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(reasons) = 'array'),
    -- What approving does beyond activating the draft, such as superseding
    -- the record it contradicts: {"supersedes": "<id>"}.
    proposal         jsonb            CHECK (proposal IS NULL OR jsonb_typeof(proposal) = 'object'),
    agent_id         text,
    created_at       timestamptz      NOT NULL,
    sla_deadline     timestamptz      NOT NULL,
    escalated_at     timestamptz,
    decided_at       timestamptz,
    decided_by       text             CHECK (decided_by <> ''),
    justification    text             NOT NULL DEFAULT '',
    -- Structured, so that rejections feed the agents' learning loop (§12.6.7).
    rejection_reason text             CHECK (rejection_reason IN (
        'factual_error', 'policy_violation', 'duplicate', 'insufficient_evidence', 'contradiction', 'other')),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, record_id) REFERENCES records (tenant_id, id) ON DELETE CASCADE,
    CONSTRAINT reviews_deadline CHECK (sla_deadline >= created_at),
    -- A review is decided exactly when it is no longer pending, by someone.
    CONSTRAINT reviews_decided CHECK ((status = 'pending') = (decided_at IS NULL) AND (decided_at IS NULL) = (decided_by IS NULL)),
    -- Only a rejection has a rejection reason, and every rejection has one.
    CONSTRAINT reviews_rejection_reason CHECK ((status = 'rejected') = (rejection_reason IS NOT NULL))
);

-- One review a draft.
CREATE UNIQUE INDEX reviews_one_per_record ON reviews (tenant_id, record_id);
-- A tenant's queue by status, oldest first (GET /v1/reviews).
CREATE INDEX reviews_by_status ON reviews (tenant_id, status, created_at, id);
-- The escalation sweep: pending reviews by deadline, across tenants.
CREATE INDEX reviews_due ON reviews (sla_deadline) WHERE status = 'pending';
-- The queue's depth and oldest age, across tenants.
CREATE INDEX reviews_pending_age ON reviews (created_at) WHERE status = 'pending';

-- +goose StatementBegin
-- A decided review is final, and a pending one changes only by escalation
-- or by its decision: its identity, tier, risk, reasons, proposal and
-- deadline are what the reviewer was shown.
CREATE FUNCTION engram_review_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status <> 'pending' THEN
        RAISE EXCEPTION 'review %: a % review is final', OLD.id, OLD.status USING ERRCODE = 'restrict_violation';
    END IF;
    IF NEW.tenant_id <> OLD.tenant_id OR NEW.id <> OLD.id OR NEW.record_id <> OLD.record_id
       OR NEW.tier <> OLD.tier OR NEW.risk <> OLD.risk OR NEW.risk_factors <> OLD.risk_factors
       OR NEW.reasons <> OLD.reasons OR NEW.proposal IS DISTINCT FROM OLD.proposal
       OR NEW.agent_id IS DISTINCT FROM OLD.agent_id OR NEW.created_at <> OLD.created_at
       OR NEW.sla_deadline <> OLD.sla_deadline THEN
        RAISE EXCEPTION 'review %: only its escalation and its decision change', OLD.id USING ERRCODE = 'restrict_violation';
    END IF;
    IF OLD.escalated_at IS NOT NULL AND NEW.escalated_at IS DISTINCT FROM OLD.escalated_at THEN
        RAISE EXCEPTION 'review %: escalated once', OLD.id USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER reviews_transition BEFORE UPDATE ON reviews
    FOR EACH ROW EXECUTE FUNCTION engram_review_transition();

-- +goose Down
DROP TABLE reviews;
DROP FUNCTION engram_review_transition;
