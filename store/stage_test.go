package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// candidate is a staged event of thread (agent "a"), its dedup key a hash
// of key.
func candidate(thread, key string, redactions ...string) store.Candidate {
	ev, _ := json.Marshal(map[string]any{"kind": "observation", "agent_id": "a", "thread_id": thread, "text": key})
	dk := sha256.Sum256([]byte(key))
	sens := memory.Public
	if len(redactions) > 0 {
		sens = memory.High
	}
	return store.Candidate{
		ID: uuid.Must(uuid.NewV7()), AgentID: "a", ThreadID: thread, Kind: memory.Observation,
		Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Event: ev, DedupKey: dk[:], Sensitivity: sens, Redactions: redactions,
	}
}

// stagedRows are the tenant's staged events, in the order they were staged.
func stagedRows(t *testing.T, ctx context.Context, db pg.DBTX) []store.Candidate {
	t.Helper()
	rows, err := store.Candidates(ctx, db, "acme", store.CandidatePending, 0, 1000)
	require.NoError(t, err)
	return rows
}

// TestStageNeverAcknowledgesAVanishedEvent: a retry meets its first
// staging, which is deleted (released or erased) before its id is read.
// The retry must not be acknowledged as staged when nothing of it is
// stored: the batch fails as a serialization failure, for the client to
// send again, and staged anew then.
func TestStageNeverAcknowledgesAVanishedEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := candidate("t1", "a")
	_, err := store.Stage(b.ctx, b.pool, b.tenant, []store.Candidate{first})
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, `UPDATE candidates SET status = 'done'`)
	require.NoError(t, err)

	// A deletion that lands between the insert and the read of the
	// ids: after each INSERT statement, classified events go.
	_, err = b.pool.Exec(b.ctx, `
CREATE FUNCTION vanish() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM candidates WHERE status = 'done';
	RETURN NULL;
END $$;
CREATE TRIGGER vanish AFTER INSERT ON candidates FOR EACH STATEMENT EXECUTE FUNCTION vanish();`)
	require.NoError(t, err)

	retry, other := candidate("t1", "a"), candidate("t1", "b")
	staged, err := store.Stage(b.ctx, b.pool, b.tenant, []store.Candidate{other, retry})
	code, _ := pg.Code(err)
	require.Equal(t, pg.SerializationFailure, code, "staged %v, err %v", staged, err)
	require.Empty(t, stagedRows(t, b.ctx, b.pool), "nothing of the batch is stored")

	// The deletion, in a transaction of its own, commits; sent again,
	// the retry is staged anew, in its order.
	_, err = b.pool.Exec(b.ctx, `DROP TRIGGER vanish ON candidates; DROP FUNCTION vanish(); DELETE FROM candidates WHERE status = 'done'`)
	require.NoError(t, err)
	staged, err = store.Stage(b.ctx, b.pool, b.tenant, []store.Candidate{other, retry})
	require.NoError(t, err)
	require.Equal(t, []store.Staged{{ID: other.ID}, {ID: retry.ID}}, staged)
	rows := stagedRows(t, b.ctx, b.pool)
	require.Equal(t, []uuid.UUID{other.ID, retry.ID}, []uuid.UUID{rows[0].ID, rows[1].ID}, fmt.Sprint(rows))
}
