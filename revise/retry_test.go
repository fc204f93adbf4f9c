package revise_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/revise"
)

// Two transactions that take two rows in opposite orders deadlock;
// PostgreSQL aborts one to break it (40P01), and the write path runs that
// one again, so both commit (a consolidation pass amending a procedure
// while feedback on it was written failed its run this way).
func TestInTxRunsADeadlockVictimAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.pool.Exec(b.ctx, `CREATE TABLE pair (id int PRIMARY KEY, n int NOT NULL); INSERT INTO pair VALUES (1, 0), (2, 0)`)
	require.NoError(t, err)
	var runs atomic.Int32
	var first sync.WaitGroup // each holds its first row before either takes its second
	first.Add(2)
	lockBoth := func(a, c int) error {
		var once sync.Once
		return b.w.InTx(b.ctx, func(ctx context.Context, tx *revise.Tx) error {
			runs.Add(1)
			if _, err := tx.Exec().Exec(ctx, `UPDATE pair SET n = n + 1 WHERE id = $1`, a); err != nil {
				return err
			}
			once.Do(func() { first.Done(); first.Wait() })
			_, err := tx.Exec().Exec(ctx, `UPDATE pair SET n = n + 1 WHERE id = $1`, c)
			return err
		})
	}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = lockBoth(1, 2) })
	wg.Go(func() { errs[1] = lockBoth(2, 1) })
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.GreaterOrEqual(t, runs.Load(), int32(3), "the victim ran again")
	require.Equal(t, 2, b.count(t, `SELECT n FROM pair WHERE id = 1`), "each committed once")
	require.Equal(t, 2, b.count(t, `SELECT n FROM pair WHERE id = 2`))
}
