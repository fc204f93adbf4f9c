package revise_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
)

// A retracted record is reinstated to the status it had before its
// retraction, audited; a record that is not retracted is refused, and so
// is a fact whose place another active fact took meanwhile.
func TestReinstateUndoesARetraction(t *testing.T) {
	t.Parallel()
	b := setup(t, func(g *revise.Gates) { g.Contradiction.Policy = revise.PolicySupersede })
	a := b.admit(t, fact("make", nil, 0.6, src("tool_call", "tool://make")))

	_, err := b.w.Reinstate(b.ctx, "acme", a.Record.ID, 0, b.ch)
	var ce *revise.ConflictError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, revise.CodeNotAllowed, ce.Code, "an active record is not reinstated")

	gone, err := b.w.Retract(b.ctx, "acme", a.Record.ID, a.Record.Version, b.ch)
	require.NoError(t, err)
	_, err = b.w.Reinstate(b.ctx, "acme", a.Record.ID, gone.Version-1, b.ch)
	require.ErrorAs(t, err, &ce)
	require.Equal(t, revise.CodeVersionConflict, ce.Code)

	back, err := b.w.Reinstate(b.ctx, "acme", a.Record.ID, gone.Version, b.ch)
	require.NoError(t, err)
	require.Equal(t, memory.Active, back.Status)
	require.Equal(t, gone.Version+1, back.Version)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_log WHERE record_id = $1 AND action = 'reactivate'`, a.Record.ID))

	// Retracted again, and another fact of the same key takes its place.
	_, err = b.w.Retract(b.ctx, "acme", a.Record.ID, back.Version, b.ch)
	require.NoError(t, err)
	b.admit(t, fact("bazel", nil, 0.6, src("tool_call", "tool://bazel")))
	_, err = b.w.Reinstate(b.ctx, "acme", a.Record.ID, 0, b.ch)
	require.Error(t, err)
	require.True(t, errors.As(err, &ce) && ce.Code == revise.CodeActiveFactExists, "%v", err)
}
