package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
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

// stageWays are both ways Stage sends a batch: arrays in one INSERT, and
// COPY into a temporary table (every batch, here).
var stageWays = []struct {
	name    string
	copyMin int
}{{"arrays", 1 << 30}, {"copy", 1}}

// TestStageKeepsOrderAndAbsorbsRetries: a batch is staged in its order (a
// thread's events keep theirs), with its redactions; a retry, in the batch
// or after it, is answered with the first event's id and stores nothing.
// Both ways of sending a batch give the same answers and rows.
func TestStageKeepsOrderAndAbsorbsRetries(t *testing.T) {
	t.Parallel()
	for _, way := range stageWays {
		t.Run(way.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			batch := []store.Candidate{
				candidate("t1", "a"), candidate("t2", "b", "email", "openai_key"), candidate("t1", "c"),
				candidate("t1", "a"), // a retry of the first, in the same batch
				candidate("t2", "d"), candidate("t1", "e"),
			}
			staged, err := store.StageVia(b.ctx, b.pool, b.tenant, batch, way.copyMin)
			require.NoError(t, err)
			require.Equal(t, []store.Staged{
				{ID: batch[0].ID}, {ID: batch[1].ID}, {ID: batch[2].ID}, {ID: batch[0].ID, Duplicate: true}, {ID: batch[4].ID}, {ID: batch[5].ID},
			}, staged)

			rows := stagedRows(t, b.ctx, b.pool)
			want := []store.Candidate{batch[0], batch[1], batch[2], batch[4], batch[5]}
			require.Len(t, rows, len(want))
			for i, r := range rows {
				w := want[i]
				require.Equal(t, w.ID, r.ID, "row %d, in staging order", i)
				require.Equal(t, w.ThreadID, r.ThreadID)
				require.Equal(t, w.Sensitivity, r.Sensitivity)
				require.Equal(t, append([]string{}, w.Redactions...), r.Redactions)
				require.JSONEq(t, string(w.Event), string(r.Event))
				require.True(t, w.Time.Equal(r.Time))
				if i > 0 {
					require.Greater(t, r.Seq, rows[i-1].Seq)
				}
			}

			// Sent again with a new event between them: the retries get the
			// first ids, the new one is staged after the others.
			again := []store.Candidate{candidate("t2", "d"), candidate("t1", "f"), candidate("t1", "a"), candidate("t1", "f")}
			staged, err = store.StageVia(b.ctx, b.pool, b.tenant, again, way.copyMin)
			require.NoError(t, err)
			require.Equal(t, []store.Staged{
				{ID: batch[4].ID, Duplicate: true}, {ID: again[1].ID}, {ID: batch[0].ID, Duplicate: true}, {ID: again[1].ID, Duplicate: true},
			}, staged)
			rows = stagedRows(t, b.ctx, b.pool)
			require.Len(t, rows, len(want)+1)
			require.Equal(t, again[1].ID, rows[len(rows)-1].ID)

			// Twice in a caller's transaction: each batch in a savepoint.
			err = pg.WithTx(b.ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
				for _, key := range []string{"g", "h"} {
					if _, err := store.StageVia(ctx, tx, b.tenant, []store.Candidate{candidate("t3", key)}, way.copyMin); err != nil {
						return err
					}
				}
				return nil
			})
			require.NoError(t, err)
			require.Len(t, stagedRows(t, b.ctx, b.pool), len(want)+3)
		})
	}
}

// TestStageNeverAcknowledgesAVanishedEvent: a retry meets its first
// staging, which is deleted (released or erased) before its id is read.
// The retry must not be acknowledged as staged when nothing of it is
// stored: the batch fails as a serialization failure, for the client to
// send again, and staged anew then.
func TestStageNeverAcknowledgesAVanishedEvent(t *testing.T) {
	t.Parallel()
	for _, way := range stageWays {
		t.Run(way.name, func(t *testing.T) {
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
			staged, err := store.StageVia(b.ctx, b.pool, b.tenant, []store.Candidate{other, retry}, way.copyMin)
			code, _ := pg.Code(err)
			require.Equal(t, pg.SerializationFailure, code, "staged %v, err %v", staged, err)
			require.Empty(t, stagedRows(t, b.ctx, b.pool), "nothing of the batch is stored")

			// The deletion, in a transaction of its own, commits; sent again,
			// the retry is staged anew, in its order.
			_, err = b.pool.Exec(b.ctx, `DROP TRIGGER vanish ON candidates; DROP FUNCTION vanish(); DELETE FROM candidates WHERE status = 'done'`)
			require.NoError(t, err)
			staged, err = store.StageVia(b.ctx, b.pool, b.tenant, []store.Candidate{other, retry}, way.copyMin)
			require.NoError(t, err)
			require.Equal(t, []store.Staged{{ID: other.ID}, {ID: retry.ID}}, staged)
			rows := stagedRows(t, b.ctx, b.pool)
			require.Equal(t, []uuid.UUID{other.ID, retry.ID}, []uuid.UUID{rows[0].ID, rows[1].ID}, fmt.Sprint(rows))
		})
	}
}
