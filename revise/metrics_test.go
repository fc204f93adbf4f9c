package revise_test

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

// Revisions are counted by layer and action once they commit: a
// transaction rolled back, or a fact refused inside its savepoint, counts
// nothing.
func TestRevisionsAreCountedWhenCommitted(t *testing.T) {
	db := pgtest.NewSchema(t)
	ctx := context.Background()
	require.NoError(t, store.EnsureTenant(ctx, db.Pool, "acme"))
	reg := prometheus.NewRegistry()
	w := revise.New(db.Pool, revise.Config{Registry: reg, Gates: revise.Gates{
		Contradiction: revise.ContradictionConfig{Policy: revise.PolicyContest}}})
	ch := revise.Change{Actor: "test"}
	counted := func(layer memory.Type, action string) float64 {
		t.Helper()
		families, err := reg.Gather()
		require.NoError(t, err)
		for _, f := range families {
			if f.GetName() != revise.MetricRevisions {
				continue
			}
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["layer"] == string(layer) && labels["action"] == action {
					return m.GetCounter().GetValue()
				}
			}
		}
		return 0
	}

	a, err := w.Admit(ctx, "acme", fact("make", nil, 0.6, src("tool_call", "tool://make")), ch)
	require.NoError(t, err)
	require.Equal(t, 1.0, counted(memory.Semantic, revise.ActionCreate))

	// Rolled back: nothing counted.
	boom := errors.New("boom")
	err = w.InTx(ctx, func(ctx context.Context, tx *revise.Tx) error {
		if _, err := tx.Admit(ctx, "acme", fact("bazel", map[string]any{"os": "linux"}, 0.6, src("tool_call", "tool://bazel")), ch); err != nil {
			return err
		}
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.Equal(t, 1.0, counted(memory.Semantic, revise.ActionCreate))

	// A contradicting fact observed in a savepoint: both contested.
	err = w.InTx(ctx, func(ctx context.Context, tx *revise.Tx) error {
		_, err := tx.ObserveFact(ctx, "acme", fact("ninja", nil, 0.6, src("tool_call", "tool://ninja")), ch)
		return err
	})
	require.NoError(t, err)
	require.Positive(t, counted(memory.Semantic, revise.ActionContest))

	require.Zero(t, counted(memory.Semantic, revise.ActionRetract))
	cur, err := store.Get(ctx, db.Pool, "acme", a.Record.ID)
	require.NoError(t, err)
	_, err = w.Retract(ctx, "acme", cur.ID, cur.Version, ch)
	require.NoError(t, err)
	require.Equal(t, 1.0, counted(memory.Semantic, revise.ActionRetract))
}
