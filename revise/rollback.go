package revise

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// Rollback is what [Tx.Rollback] changed.
type Rollback struct {
	// RolledBack is the bad record, now retracted; or, when the revision
	// undone merged duplicates into it, the record as it was before.
	RolledBack memory.Record
	// Retracted are the other variants of the fork the bad record came
	// from, retracted with it: one revision made them all.
	Retracted []memory.Record
	// Reactivated are the records the bad one replaced, back in the active
	// set.
	Reactivated []memory.Record
}

// Rollback undoes a bad revision (write-path RFC §12.5.6): the record id,
// which replaced one or more predecessors, is retracted and its
// predecessors are reactivated, in one transaction. The predecessors are
// what the revision that made id left behind:
//
//   - supersede: the record id supersedes;
//   - fork: the forked fact, and every other variant of the same fork is
//     retracted with id (the variants came from one revision, and the
//     forked fact cannot be active beside them);
//   - merge: every source merged into id;
//   - merge into id ([Tx.MergeInto]), when it made id's current version:
//     id itself goes back to its version before the merge (its
//     provenance, tags, confidence, salience, sensitivity and status) as
//     its next version, audited rollback, instead of being retracted, and
//     the duplicates it absorbed are reactivated.
//
// Each predecessor comes back as a new version, active (contested if it was
// contested when it was replaced), audited as reactivated; a semantic
// fact's payload revision loses its superseded_by. A fact that superseded
// its rivals by winning a contest on evidence (contradiction policy
// evidence) is not retracted: it was live before, so it is contested again
// with the rivals it superseded then. version, when non-zero, must be id's
// current version.
//
// Refused with [CodeNotAllowed] when id replaced nothing, when a
// predecessor is no longer superseded or merged (it was revised since), or
// when a sibling variant was revised since (roll that back first); with
// [CodeActiveFactExists] when a reactivated fact would collide with another
// active one.
func (t *Tx) Rollback(ctx context.Context, tenant string, id uuid.UUID, version int, ch Change) (Rollback, error) {
	var out Rollback
	if err := checkChange(ch); err != nil {
		return out, err
	}
	bad, err := t.get(ctx, tenant, id)
	if err != nil {
		return Rollback{}, err
	}
	// A record that absorbed stored duplicates of it (MergeInto)
	// goes back to what it was, and they come back beside it.
	absorbed, err := t.absorbed(ctx, tenant, id)
	if err != nil {
		return Rollback{}, err
	}
	if dups := absorbed[bad.Version]; len(dups) > 0 {
		return t.unmerge(ctx, tenant, id, cmp.Or(version, bad.Version), dups, ch)
	}
	folded := map[uuid.UUID]bool{}
	for _, dups := range absorbed {
		for _, d := range dups {
			folded[d] = true
		}
	}
	// What the revision that made id replaced, and how each must stand.
	was := map[uuid.UUID]memory.Status{}
	var forked []uuid.UUID
	for _, rel := range bad.Relations {
		switch rel.Predicate {
		case memory.Supersedes:
			was[rel.TargetID] = memory.Superseded
		case memory.ForkedFrom:
			was[rel.TargetID] = memory.Superseded
			forked = append(forked, rel.TargetID)
		}
	}
	sources, err := store.Referrers(ctx, t.tx, tenant, memory.MergedInto, []uuid.UUID{id})
	if err != nil {
		return Rollback{}, err
	}
	for _, s := range sources {
		if !folded[s.ID] { // absorbed later, not what id was made of
			was[s.ID] = memory.Merged
		}
	}
	if len(was) == 0 && len(folded) > 0 {
		return Rollback{}, conflict(CodeNotAllowed, []uuid.UUID{id},
			"record %s was revised since it absorbed its duplicates: roll that revision back first", id)
	}
	if len(was) == 0 {
		return Rollback{}, conflict(CodeNotAllowed, []uuid.UUID{id},
			"record %s replaced no record (it supersedes, forks or merges nothing): there is nothing to reactivate; retract it instead", id)
	}
	var siblings []uuid.UUID
	if len(forked) > 0 {
		refs, err := store.Referrers(ctx, t.tx, tenant, memory.ForkedFrom, forked)
		if err != nil {
			return Rollback{}, err
		}
		for _, r := range refs {
			if r.ID != id {
				siblings = append(siblings, r.ID)
			}
		}
	}

	// Every record the rollback changes is locked in id order, so that
	// it cannot deadlock with another revision over the same records.
	preds := sortedIDs(was)
	locked, err := t.lockMany(ctx, tenant, slices.Concat([]uuid.UUID{id}, preds, siblings))
	if err != nil {
		return Rollback{}, err
	}
	bad, prior, sibs := locked[0], locked[1:1+len(preds)], locked[1+len(preds):]
	if err := checkRevisable(bad, version); err != nil {
		return Rollback{}, err
	}
	for _, p := range prior {
		if p.Status != was[p.ID] {
			return Rollback{}, conflict(CodeNotAllowed, []uuid.UUID{p.ID},
				"record %s is %s, no longer %s by %s: it was revised since; roll that back first", p.ID, p.Status, was[p.ID], id)
		}
	}
	var retract []memory.Record
	for _, s := range sibs {
		switch {
		case s.Live():
			retract = append(retract, s)
		case s.Status == memory.Superseded || s.Status == memory.Merged:
			// Its successor is live and came after the fork: it would
			// stand beside the reactivated fact.
			return Rollback{}, conflict(CodeNotAllowed, []uuid.UUID{s.ID},
				"variant %s of the same fork is %s: roll back its revision first", s.ID, s.Status)
		}
		// Retracted, deleted, expired, quarantined or draft variants
		// are out of the active set already: they stay as they are.
	}

	// A fact that won a contest by evidence (policy evidence,
	// [Tx.resolveContest]) was live before the revision that made it
	// supersede its rivals: undoing that revision contests it again,
	// with the rivals it superseded then; it is not retracted, and
	// whatever it superseded at its creation stays superseded.
	status := memory.Retracted
	won, err := t.wonContest(ctx, tenant, id)
	if err != nil {
		return Rollback{}, err
	}
	if won {
		status = memory.Contested
		if bad.Payload, err = setRevision(bad.Payload, func(r *memory.Revision) { r.Supersedes = "" }); err != nil {
			return Rollback{}, err
		}
		var rivals []memory.Record
		for _, p := range prior {
			prev, err := store.StatusAt(ctx, t.tx, tenant, p.ID, p.Version-1)
			if err != nil {
				return Rollback{}, err
			}
			if prev == memory.Contested {
				rivals = append(rivals, p)
			}
		}
		prior = rivals
	}
	if err := t.leave(ctx, tenant, &bad, status, ActionRollback, ch); err != nil {
		return Rollback{}, err
	}
	for i := range retract {
		if err := t.leave(ctx, tenant, &retract[i], memory.Retracted, ActionRollback, ch); err != nil {
			return Rollback{}, err
		}
	}
	react := ch.because(fmt.Sprintf("reactivated after rollback of %s", id), ch.Evidence)
	for i := range prior {
		if err := t.reactivate(ctx, tenant, &prior[i], react); err != nil {
			return Rollback{}, err
		}
	}

	if out.RolledBack, err = t.get(ctx, tenant, id); err != nil {
		return Rollback{}, err
	}
	for _, r := range retract {
		got, err := t.get(ctx, tenant, r.ID)
		if err != nil {
			return Rollback{}, err
		}
		out.Retracted = append(out.Retracted, got)
	}
	for _, p := range prior {
		got, err := t.get(ctx, tenant, p.ID)
		if err != nil {
			return Rollback{}, err
		}
		out.Reactivated = append(out.Reactivated, got)
	}
	return out, nil
}

// reactivate brings a replaced record back into the active set as its next
// version: contested if it was contested before it was replaced, else
// active.
func (t *Tx) reactivate(ctx context.Context, tenant string, rec *memory.Record, ch Change) error {
	status := memory.Active
	prev, err := store.StatusAt(ctx, t.tx, tenant, rec.ID, rec.Version-1)
	if err != nil {
		return err
	}
	if prev.Live() {
		status = prev
	}
	if rec.Type == memory.Semantic {
		if rec.Payload, err = setRevision(rec.Payload, func(r *memory.Revision) { r.SupersededBy = "" }); err != nil {
			return err
		}
	}
	return t.leave(ctx, tenant, rec, status, ActionReactivate, ch)
}

// wonContest reports whether the last revision of id that replaced other
// records was the resolution of a contest in its favour ([ActionResolve]
// audited after its last rollback).
func (t *Tx) wonContest(ctx context.Context, tenant string, id uuid.UUID) (bool, error) {
	entries, err := store.Audit(ctx, t.tx, tenant, id)
	if err != nil {
		return false, err
	}
	won := false
	for _, e := range entries {
		switch e.Action {
		case ActionResolve:
			won = true
		case ActionRollback:
			won = false
		}
	}
	return won, nil
}

// sortedIDs returns the keys of m in id order.
func sortedIDs[V any](m map[uuid.UUID]V) []uuid.UUID {
	out := make([]uuid.UUID, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	slices.SortFunc(out, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	return out
}

// Rollback runs [Tx.Rollback] in a transaction of its own.
func (w *Writer) Rollback(ctx context.Context, tenant string, id uuid.UUID, version int, ch Change) (Rollback, error) {
	return inTx(ctx, w, func(ctx context.Context, tx *Tx) (Rollback, error) {
		return tx.Rollback(ctx, tenant, id, version, ch)
	})
}
