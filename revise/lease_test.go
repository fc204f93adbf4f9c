package revise_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
)

// A grant cannot slip between a write's lease check and its commit
// (write-path RFC §12.8.3): a grant on a record waits for the write that
// checked the record's leases, and is granted once it commits; the
// holder's own write then passes.
func TestLeaseGrantWaitsForACheckedWrite(t *testing.T) {
	t.Parallel()
	b := setup(t)
	payload := func(summary string) json.RawMessage {
		p, err := json.Marshal(map[string]any{"kind": "working", "thread_id": "t1", "state": "executing", "context_summary": summary})
		require.NoError(t, err)
		return p
	}
	rec, err := b.w.Create(b.ctx, "acme", memory.Record{Type: memory.Working, Scope: "race", Payload: payload("start")}, b.ch)
	require.NoError(t, err)
	res := revise.LeaseResource{RecordID: &rec.ID}

	type grant struct {
		lease revise.Lease
		err   error
	}
	granted := make(chan grant, 1)
	err = b.w.InTx(b.ctx, func(ctx context.Context, tx *revise.Tx) error {
		ch := revise.Change{Actor: "agent-c", Fence: &revise.Fence{Agent: "agent-c"}}
		if _, err := tx.Update(ctx, "acme", rec.ID, 1, payload("by c"), nil, ch); err != nil {
			return err
		}
		// Checked, not committed: B asks for the record now.
		go func() {
			l, err := b.w.AcquireLease(context.Background(), "acme", revise.LeaseRequest{Resource: res, Agent: "agent-b"})
			granted <- grant{l, err}
		}()
		deadline := time.Now().Add(30 * time.Second)
		for waiting := 0; waiting == 0; {
			require.True(t, time.Now().Before(deadline), "the grant never waited for the write")
			require.NoError(t, b.pool.QueryRow(ctx, `
SELECT count(*) FROM pg_locks
WHERE locktype = 'advisory' AND NOT granted
  AND ((classid::bigint << 32) | objid::bigint) = hashtextextended(concat_ws(chr(31), 'engram.lease', 'acme', 'record', $1::text), 0)`,
				rec.ID.String()).Scan(&waiting))
		}
		select {
		case g := <-granted:
			t.Fatalf("granted while a write it fences was uncommitted: %+v", g)
		default:
		}
		return nil
	})
	require.NoError(t, err)

	g := <-granted
	require.NoError(t, g.err)
	require.Equal(t, int64(1), g.lease.FencingToken)
	got, err := b.w.Update(b.ctx, "acme", rec.ID, 2, payload("by b"), nil,
		revise.Change{Actor: "agent-b", Fence: &revise.Fence{Agent: "agent-b", Token: g.lease.FencingToken}})
	require.NoError(t, err)
	require.Equal(t, 3, got.Version)
	_, err = b.w.Update(b.ctx, "acme", rec.ID, 3, payload("by c again"), nil, revise.Change{Actor: "agent-c", Fence: &revise.Fence{Agent: "agent-c"}})
	var held *revise.LeaseHeldError
	require.ErrorAs(t, err, &held)
	require.Equal(t, "agent-b", held.Lease.AgentID)

	// The daemon's own writes (no fence) are not held by leases.
	_, err = b.w.Update(b.ctx, "acme", rec.ID, 3, payload("by the daemon"), nil, b.ch)
	require.NoError(t, err)
}
