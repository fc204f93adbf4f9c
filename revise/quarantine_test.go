package revise_test

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/store"
)

// derivedFrom is a fact derived from the record src.
func derivedFrom(src uuid.UUID, predicate string) memory.Record {
	r := semantic("service", predicate, "x", nil)
	r.Relations = []memory.Relation{{Predicate: memory.DerivedFrom, TargetID: src}}
	return r
}

func (e *opsEnv) flagged() []uuid.UUID {
	e.t.Helper()
	page, err := store.List(e.ctx, e.pool, e.tenant, store.Filter{Flag: memory.DerivedFromQuarantined, Statuses: memory.Statuses})
	require.NoError(e.t, err)
	ids := []uuid.UUID{}
	for _, r := range page.Records {
		ids = append(ids, r.ID)
	}
	return ids
}

// Quarantine takes a record out of the active set, audited, and flags the
// live records derived from it, transitively, through records that are no
// longer live; release brings it back as it was and clears those flags
// (write-path RFC §12.11.5).
func TestQuarantineAndRelease(t *testing.T) {
	t.Parallel()
	e := newOpsEnv(t)
	src := e.create(semantic("service", "port", "8080", nil))
	d1 := e.create(derivedFrom(src.ID, "d1"))
	d2 := e.create(derivedFrom(d1.ID, "d2"))
	gone := e.create(derivedFrom(src.ID, "gone"))
	_, err := e.w.Retract(e.ctx, e.tenant, gone.ID, 0, e.ch)
	require.NoError(t, err)
	through := e.create(derivedFrom(gone.ID, "through"))
	unrelated := e.create(semantic("service", "host", "db1", nil))

	_, err = e.w.Quarantine(e.ctx, e.tenant, src.ID, 0, revise.Change{Actor: "ops"})
	var ve *schemas.ValidationError
	require.ErrorAs(t, err, &ve, "a quarantine says why")
	require.Equal(t, "/rationale", ve.Violations[0].Pointer)
	_, err = e.w.Quarantine(e.ctx, e.tenant, src.ID, 9, e.ch)
	requireConflict(t, err, revise.CodeVersionConflict)

	q, err := e.w.Quarantine(e.ctx, e.tenant, src.ID, 1, revise.Change{Actor: "ops", Rationale: "agent-7 is poisoning memory"})
	require.NoError(t, err)
	require.Equal(t, memory.Quarantined, q.Record.Status)
	require.Equal(t, 2, q.Record.Version)
	require.Equal(t, memory.Revision{}, revisionOf(t, q.Record))
	require.False(t, q.Truncated)
	require.ElementsMatch(t, []uuid.UUID{d1.ID, d2.ID, through.ID}, q.Flagged)
	require.Equal(t, d1.ID, q.Flagged[0], "nearest first")
	require.ElementsMatch(t, q.Flagged, e.flagged())
	actions, last := e.audit(src.ID)
	require.Equal(t, []string{"create", "quarantine"}, actions)
	require.Equal(t, "agent-7 is poisoning memory", last.Rationale)

	recs := []memory.Record{e.get(d2.ID), e.get(unrelated.ID)}
	require.NoError(t, store.AttachFlags(e.ctx, e.pool, e.tenant, recs))
	require.Len(t, recs[0].Flags, 1)
	f := recs[0].Flags[0]
	require.Equal(t, memory.DerivedFromQuarantined, f.Kind)
	require.Equal(t, src.ID, f.SourceID)
	require.Equal(t, "agent-7 is poisoning memory", f.Reason)
	require.Equal(t, 1, e.get(d2.ID).Version, "a flag is no revision")
	require.Nil(t, recs[1].Flags)

	page, err := store.List(e.ctx, e.pool, e.tenant, store.Filter{Subject: "service", Predicate: "port"})
	require.NoError(t, err)
	require.Empty(t, page.Records, "a quarantined record has left the active set")
	_, err = e.w.Retract(e.ctx, e.tenant, src.ID, 0, e.ch)
	requireConflict(t, err, revise.CodeNotLive)
	_, err = e.w.Quarantine(e.ctx, e.tenant, src.ID, 0, e.ch)
	requireConflict(t, err, revise.CodeNotLive)

	_, err = e.w.Release(e.ctx, e.tenant, unrelated.ID, 0, e.ch)
	requireConflict(t, err, revise.CodeNotAllowed)
	_, err = e.w.Release(e.ctx, e.tenant, src.ID, 0, revise.Change{Actor: "ops"})
	require.ErrorAs(t, err, &ve)

	rel, err := e.w.Release(e.ctx, e.tenant, src.ID, 2, revise.Change{Actor: "ops", Rationale: "cleared after review"})
	require.NoError(t, err)
	require.Equal(t, memory.Active, rel.Record.Status)
	require.Equal(t, 3, rel.Record.Version)
	require.Equal(t, "active", revisionOf(t, rel.Record).Status)
	require.ElementsMatch(t, q.Flagged, rel.Unflagged)
	require.Empty(t, e.flagged())
	actions, last = e.audit(src.ID)
	require.Equal(t, []string{"create", "quarantine", "release"}, actions)
	require.Equal(t, "cleared after review", last.Rationale)
}

// Release restores the status a record had: a contested record comes back
// contested. Each release clears only the flags its own quarantine raised.
// Another active fact that took a released fact's place meanwhile refuses
// the release.
func TestReleaseRestoresStatus(t *testing.T) {
	t.Parallel()
	e := newOpsEnv(t)
	a := e.create(semantic("build", "cache_dir", "/tmp/a", nil))
	next := semantic("build", "cache_dir", "/tmp/b", nil)
	recs, err := e.w.Contest(e.ctx, e.tenant, []uuid.UUID{a.ID}, &next, e.ch)
	require.NoError(t, err)
	b := recs[1]
	both := derivedFrom(a.ID, "both")
	both.Relations = append(both.Relations, memory.Relation{Predicate: memory.DerivedFrom, TargetID: b.ID})
	shared := e.create(both)

	for _, id := range []uuid.UUID{a.ID, b.ID} {
		q, err := e.w.Quarantine(e.ctx, e.tenant, id, 0, e.ch)
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{shared.ID}, q.Flagged)
	}
	rel, err := e.w.Release(e.ctx, e.tenant, a.ID, 0, e.ch)
	require.NoError(t, err)
	require.Equal(t, memory.Contested, rel.Record.Status)
	require.Equal(t, "contested", revisionOf(t, rel.Record).Status)
	require.Equal(t, []uuid.UUID{shared.ID}, rel.Unflagged)
	require.Equal(t, []uuid.UUID{shared.ID}, e.flagged(), "b's flag stays")

	fact := e.create(semantic("user", "shell", "bash", nil))
	_, err = e.w.Quarantine(e.ctx, e.tenant, fact.ID, 0, e.ch)
	require.NoError(t, err)
	taken := e.create(semantic("user", "shell", "zsh", nil))
	_, err = e.w.Release(e.ctx, e.tenant, fact.ID, 0, e.ch)
	ce := requireConflict(t, err, revise.CodeActiveFactExists)
	require.Equal(t, []uuid.UUID{taken.ID}, ce.RecordIDs)
	require.Equal(t, memory.Quarantined, e.get(fact.ID).Status)
}

// The walk stops after FlagDepth hops, and says so.
func TestQuarantineWalkIsBounded(t *testing.T) {
	t.Parallel()
	e := newOpsEnv(t)
	root := e.create(semantic("chain", "link", "0", nil))
	chain := []uuid.UUID{}
	prev := root.ID
	for i := range revise.FlagDepth + 2 {
		r := e.create(derivedFrom(prev, fmt.Sprintf("link%d", i)))
		chain = append(chain, r.ID)
		prev = r.ID
	}
	q, err := e.w.Quarantine(e.ctx, e.tenant, root.ID, 0, e.ch)
	require.NoError(t, err)
	require.True(t, q.Truncated)
	require.Equal(t, chain[:revise.FlagDepth], q.Flagged)
}
