package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
)

// Reputation is an agent's record as a writer.
type Reputation struct {
	AgentID        string    `json:"agent_id"`
	Writes         int64     `json:"writes"`
	Accepted       int64     `json:"accepted"`
	Rejected       int64     `json:"rejected"`
	Contradictions int64     `json:"contradictions"`
	Successes      int64     `json:"successes"`
	Failures       int64     `json:"failures"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// ReputationDelta is what one write or one feedback adds to an agent's
// counts.
type ReputationDelta struct {
	Writes, Accepted, Rejected, Contradictions, Successes, Failures int64
}

// Plus is d and e added.
func (d ReputationDelta) Plus(e ReputationDelta) ReputationDelta {
	return ReputationDelta{Writes: d.Writes + e.Writes, Accepted: d.Accepted + e.Accepted, Rejected: d.Rejected + e.Rejected,
		Contradictions: d.Contradictions + e.Contradictions, Successes: d.Successes + e.Successes, Failures: d.Failures + e.Failures}
}

// Plus is r with d's counts added.
func (r Reputation) Plus(d ReputationDelta) Reputation {
	r.Writes += d.Writes
	r.Accepted += d.Accepted
	r.Rejected += d.Rejected
	r.Contradictions += d.Contradictions
	r.Successes += d.Successes
	r.Failures += d.Failures
	return r
}

const addReputationSQL = `
INSERT INTO agent_reputation AS a (tenant_id, agent_id, writes, accepted, rejected, contradictions, successes, failures, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (tenant_id, agent_id) DO UPDATE SET
	writes = a.writes + excluded.writes, accepted = a.accepted + excluded.accepted,
	rejected = a.rejected + excluded.rejected, contradictions = a.contradictions + excluded.contradictions,
	successes = a.successes + excluded.successes, failures = a.failures + excluded.failures,
	updated_at = excluded.updated_at`

// AddReputation adds d to an agent's counts.
func AddReputation(ctx context.Context, db pg.DBTX, tenant, agent string, d ReputationDelta, at time.Time) error {
	if _, err := db.Exec(ctx, addReputationSQL, tenant, agent, d.Writes, d.Accepted, d.Rejected, d.Contradictions, d.Successes, d.Failures, at); err != nil {
		return fmt.Errorf("count reputation: %w", err)
	}
	return nil
}

const reputationColumns = `agent_id, writes, accepted, rejected, contradictions, successes, failures, updated_at`

// GetReputation returns an agent's counts, zero when it has written
// nothing yet.
func GetReputation(ctx context.Context, db pg.DBTX, tenant, agent string) (Reputation, error) {
	rows, err := db.Query(ctx, `SELECT `+reputationColumns+` FROM agent_reputation WHERE tenant_id = $1 AND agent_id = $2`, tenant, agent)
	if err != nil {
		return Reputation{}, fmt.Errorf("read reputation: %w", err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[Reputation])
	if errors.Is(err, pgx.ErrNoRows) {
		return Reputation{AgentID: agent}, nil
	}
	if err != nil {
		return Reputation{}, fmt.Errorf("read reputation: %w", err)
	}
	return r, nil
}

// ListReputation returns the tenant's agents' counts, by agent id.
func ListReputation(ctx context.Context, db pg.DBTX, tenant string) ([]Reputation, error) {
	rows, err := db.Query(ctx, `SELECT `+reputationColumns+` FROM agent_reputation WHERE tenant_id = $1 ORDER BY agent_id`, tenant)
	if err != nil {
		return nil, fmt.Errorf("read reputation: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Reputation])
	if err != nil {
		return nil, fmt.Errorf("read reputation: %w", err)
	}
	return out, nil
}
