package revise_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

// A transaction's writes count for their agents' reputation when it
// commits: while it runs, it holds no agent's reputation row, so another
// writer of the same agent's facts (the ingest worker's other partition)
// is not held for the whole batch (issue 13); after it, every write is
// counted, a refused one too.
func TestReputationCountedAtCommitWithoutHoldingTheRow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := fact("make", nil, 0.6, src("tool_call", "tool://make"))
	first.AgentID = "agent-1"
	b.admit(t, first) // the agent's row exists

	err := b.w.InTx(b.ctx, func(ctx context.Context, tx *revise.Tx) error {
		for _, obj := range []string{"ninja", "bazel"} {
			rec := fact(obj, map[string]any{"os": obj}, 0.6, src("tool_call", "tool://"+obj))
			rec.AgentID = "agent-1"
			if _, err := tx.ObserveFact(ctx, "acme", rec, b.ch); err != nil {
				return err
			}
		}
		// From another connection, mid-transaction: the row is free.
		return pgx.BeginFunc(ctx, b.pool, func(other pgx.Tx) error {
			_, err := other.Exec(ctx, `SELECT 1 FROM agent_reputation WHERE tenant_id = 'acme' AND agent_id = 'agent-1' FOR UPDATE NOWAIT`)
			return err
		})
	})
	require.NoError(t, err, "the agent's reputation row was free while the transaction ran")

	r, err := store.GetReputation(b.ctx, b.pool, "acme", "agent-1")
	require.NoError(t, err)
	require.Equal(t, int64(3), r.Writes, "every write counted once, at commit")
	require.Equal(t, int64(3), r.Accepted)
}
