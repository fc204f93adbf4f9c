package embedding_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/embedding"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/jobs/jobstest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

// setupBackfill is a schema holding n facts of tenant acme, and a
// backfiller over it reading batches of two.
func setupBackfill(t *testing.T, n int) (context.Context, *embedding.Backfiller) {
	t.Helper()
	db := pgtest.NewSchema(t)
	ctx := context.Background()
	require.NoError(t, store.EnsureTenant(ctx, db.Pool, "acme"))
	w := revise.New(db.Pool, revise.Config{})
	for i := range n {
		p, _ := json.Marshal(map[string]any{"kind": "semantic", "subject": fmt.Sprintf("repo %d", i), "predicate": "build_tool",
			"object": "make", "validity": map[string]any{"mode": "global"}})
		_, err := w.Create(ctx, "acme", memory.Record{Type: memory.Semantic, Confidence: 0.8, Payload: p,
			Provenance: memory.Provenance{Sources: []memory.Source{{Kind: "observation", Ref: fmt.Sprintf("obs://%d", i)}}}},
			revise.Change{Actor: "test"})
		require.NoError(t, err)
	}
	return ctx, embedding.NewBackfiller(db.Pool, embedding.NewLexical(), 2, nil)
}

// A backfill yields to busy classification: before each batch it looks,
// and waits while classification is busy; then it embeds everything.
func TestBackfillYieldsToBusyWork(t *testing.T) {
	t.Parallel()
	ctx, b := setupBackfill(t, 5)
	var looks atomic.Int64
	b.YieldTo(func() bool { return looks.Add(1) <= 3 }, time.Hour)
	p := &jobstest.Run{}
	require.NoError(t, b.Backfill(ctx, p))
	require.Equal(t, int64(5), p.Count("embedded"))
	require.GreaterOrEqual(t, looks.Load(), int64(3+3), "it waited out the three busy looks, then looked once before each of the three batches")
}

// Under load that never pauses, a backfill still progresses, a batch per
// longest yield.
func TestBackfillProgressesUnderSustainedLoad(t *testing.T) {
	t.Parallel()
	ctx, b := setupBackfill(t, 5)
	b.YieldTo(func() bool { return true }, time.Millisecond)
	p := &jobstest.Run{}
	require.NoError(t, b.Backfill(ctx, p))
	require.Equal(t, int64(5), p.Count("embedded"))
}

// A backfill cut off while it yields stops with the context's error.
func TestBackfillStopsWhileYielding(t *testing.T) {
	t.Parallel()
	ctx, b := setupBackfill(t, 1)
	ctx, cancel := context.WithCancel(ctx)
	b.YieldTo(func() bool { cancel(); return true }, time.Hour)
	require.ErrorIs(t, b.Backfill(ctx, &jobstest.Run{}), context.Canceled)
}
