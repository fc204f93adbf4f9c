package revise_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/access"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
)

// The write path decides every revision a key makes, whatever calls it:
// a refused one is an [*access.DeniedError] naming the rule, and nothing
// of its transaction is written — not in a batch, not in a transaction
// that wrote other records first. A change with no principal is the
// system's and is not checked.
func TestWritePathAuthorizes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	exec := &access.Principal{Tenant: "acme", Key: "k", Role: access.Executor, Agent: "a-1"}
	as := revise.Change{Actor: "key:k", Principal: exec}
	count := func() int {
		var n int
		require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT (SELECT count(*) FROM records) + (SELECT count(*) FROM audit_log)").Scan(&n))
		return n
	}
	working := func(agent string) memory.Record {
		p, _ := json.Marshal(map[string]any{"kind": "working", "thread_id": "t-" + agent, "state": "executing"})
		return memory.Record{Type: memory.Working, AgentID: agent, Payload: p}
	}

	before := count()
	_, err := b.w.Create(b.ctx, "acme", fact("bazel", nil, 0.9), as)
	var denied *access.DeniedError
	require.ErrorAs(t, err, &denied)
	require.Equal(t, "role:executor:write:own", denied.Rule, "a fact not its agent's")
	require.Equal(t, before, count())

	err = b.w.InTx(b.ctx, func(ctx context.Context, tx *revise.Tx) error {
		if _, err := tx.CreateMany(ctx, "acme", []memory.Record{working("a-1")}, as); err != nil {
			return err
		}
		_, err := tx.CreateMany(ctx, "acme", []memory.Record{working("a-2")}, as)
		return err
	})
	require.ErrorAs(t, err, &denied)
	require.Equal(t, "role:executor:write:own", denied.Rule)
	require.Equal(t, before, count(), "the transaction's first write is undone with it")

	rec, err := b.w.Create(b.ctx, "acme", working("a-1"), as)
	require.NoError(t, err)
	_, err = b.w.Delete(b.ctx, "acme", rec.ID, as)
	require.NoError(t, err, "its own working memory it may forget")
	rec, err = b.w.Create(b.ctx, "acme", working("a-2"), b.ch)
	require.NoError(t, err)
	_, err = b.w.Delete(b.ctx, "acme", rec.ID, as)
	require.ErrorAs(t, err, &denied)
	require.Equal(t, "role:executor:delete:own", denied.Rule)
	_, err = b.w.Delete(b.ctx, "acme", rec.ID, b.ch)
	require.NoError(t, err, "the system's change is not checked")
}
