package replicas

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// lazyPool is a pool that never connects in these tests: only its identity
// matters.
func lazyPool(t *testing.T) *pgxpool.Pool {
	p, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none")
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

func TestRouterStalenessAndOwnWrites(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	primary, a, b := lazyPool(t), lazyPool(t), lazyPool(t)
	r := New(Config{Primary: primary, Replicas: []Replica{{"a", a}, {"b", b}}, Budget: time.Second, Now: func() time.Time { return now }})
	// The primary at 100, then 200 half a second later; a has replayed
	// 200, b 100.
	r.samples = []sample{{now, 100}, {now.Add(500 * time.Millisecond), 200}}
	r.state = []replicaState{{replayed: 200, ok: true}, {replayed: 100, ok: true}}
	now = now.Add(time.Second)
	require.Equal(t, map[string]time.Duration{"a": 0, "b": 500 * time.Millisecond}, r.Lag())

	// Both within the budget: round robin.
	got := map[any]int{}
	for range 4 {
		got[r.For("t/k")]++
	}
	require.Equal(t, map[any]int{a: 2, b: 2}, got)

	// b falls past the budget: a alone.
	now = now.Add(time.Second)
	require.Equal(t, 1500*time.Millisecond, r.Lag()["b"])
	for range 3 {
		require.Same(t, a, r.For("t/k"))
	}

	// A write: no replica has a sample taken after it, so the writer's
	// reads go to the primary, and another reader's do not.
	r.Wrote("t/k")
	require.Same(t, primary, r.For("t/k"))
	require.Same(t, a, r.For("t/other"))
	// The primary is sampled after the write at 300; a replays it.
	now = now.Add(100 * time.Millisecond)
	r.samples = append(r.samples, sample{now, 300})
	require.Same(t, primary, r.For("t/k"), "a has not replayed 300 yet")
	r.state[0].replayed = 300
	require.Same(t, a, r.For("t/k"))

	// A replica that does not answer is stale without bound; with none
	// fresh, the primary.
	r.state[0].ok = false
	require.Same(t, primary, r.For("t/other"))
}

func TestRouterWithoutReplicasIsThePrimary(t *testing.T) {
	t.Parallel()
	primary := lazyPool(t)
	r := New(Config{Primary: primary})
	r.Wrote("x")
	require.Same(t, primary, r.For("x"))
}
