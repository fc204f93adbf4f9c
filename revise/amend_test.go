package revise_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
)

func procedure(t *testing.T, step string, successes int, sources ...memory.Source) memory.Record {
	t.Helper()
	p, err := json.Marshal(map[string]any{"kind": "competence", "skill_name": "fix ld cache",
		"triggers":    []any{map[string]any{"signal": "ld: cache mismatch"}},
		"recipe":      []any{map[string]any{"step": step, "tool": "shell"}},
		"performance": map[string]any{"successes": successes, "failures": 0}})
	require.NoError(t, err)
	return memory.Record{Type: memory.Competence, Confidence: 0.5, Payload: p, Tags: []string{"learned"}, Provenance: memory.Provenance{Sources: sources}}
}

// A procedure whose statistics and evidence grew is amended in place: the
// same id, its next version, audited; a changed recipe, or a fact, is not
// amended.
func TestAmendRevisesInPlace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.admit(t, procedure(t, "rm -rf cache", 2, src("tool_call", "tool://shell/1")))

	next := procedure(t, "rm -rf cache", 3, src("tool_call", "tool://shell/1"), src("tool_call", "tool://shell/2"))
	next.Confidence = 0.75
	got, err := b.w.Amend(b.ctx, "acme", a.Record.ID, a.Record.Version, next, b.ch)
	require.NoError(t, err)
	require.Equal(t, a.Record.ID, got.ID)
	require.Equal(t, a.Record.Version+1, got.Version)
	require.Equal(t, 0.75, got.Confidence)
	require.Len(t, got.Provenance.Sources, 2)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_log WHERE record_id = $1 AND action = 'amend'`, a.Record.ID))

	_, err = b.w.Amend(b.ctx, "acme", a.Record.ID, got.Version, procedure(t, "make clean", 3), b.ch)
	var ce *revise.ConflictError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, revise.CodeNotAllowed, ce.Code, "another recipe is a supersede")

	_, err = b.w.Amend(b.ctx, "acme", a.Record.ID, got.Version-1, next, b.ch)
	require.ErrorAs(t, err, &ce)
	require.Equal(t, revise.CodeVersionConflict, ce.Code)

	f := b.admit(t, fact("make", nil, 0.6, src("tool_call", "tool://make")))
	_, err = b.w.Amend(b.ctx, "acme", f.Record.ID, f.Record.Version, fact("make", nil, 0.7, src("tool_call", "tool://make")), b.ch)
	require.ErrorAs(t, err, &ce)
	require.Equal(t, revise.CodeNotAllowed, ce.Code, "a fact is revised by the semantic rules")
}
