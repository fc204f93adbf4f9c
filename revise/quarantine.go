package revise

import (
	"context"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/store"
)

// Bounds of the walk that flags what derives from a quarantined record.
const (
	// FlagDepth is how many derived_from hops the walk follows.
	FlagDepth = 10
	// MaxFlagged is how many records one quarantine flags at most, the
	// nearest first.
	MaxFlagged = 1000
	// maxVisited bounds the records the walk reads, live or not.
	maxVisited = 10 * MaxFlagged
)

// Quarantine is what [Tx.Quarantine] changed.
type Quarantine struct {
	// Record is the quarantined record.
	Record memory.Record
	// Flagged are the live records derived from it, now flagged
	// derived_from_quarantined, in the order the walk found them.
	Flagged []uuid.UUID
	// Truncated says the walk stopped at [MaxFlagged] records or
	// [FlagDepth] hops before it ended: more records may derive from it.
	Truncated bool
}

// Quarantine takes a suspect record out of retrieval without deleting it,
// for investigation (write-path RFC §12.11.5, "quarantine on detection"):
// it becomes quarantined, a revision audited with the rationale, which is
// required. The live records derived from it — with a derived_from
// relation to it, or to a record that has one, up to [FlagDepth] hops and
// [MaxFlagged] records — are flagged derived_from_quarantined for
// re-validation; a flag changes neither their status nor their version.
// Any live record may be quarantined, episodes too. version, when
// non-zero, must be the record's current version.
func (t *Tx) Quarantine(ctx context.Context, tenant string, id uuid.UUID, version int, ch Change) (Quarantine, error) {
	var out Quarantine
	if err := checkChange(ch); err != nil {
		return out, err
	}
	if err := needRationale(ch, "why the record is quarantined"); err != nil {
		return out, err
	}
	rec, err := t.lockLive(ctx, tenant, id, version)
	if err != nil {
		return Quarantine{}, err
	}
	if err := t.leave(ctx, tenant, &rec, memory.Quarantined, ActionQuarantine, ch); err != nil {
		return Quarantine{}, err
	}
	if out.Flagged, out.Truncated, err = t.derived(ctx, tenant, id); err != nil {
		return Quarantine{}, err
	}
	flag := memory.Flag{Kind: memory.DerivedFromQuarantined, SourceID: id, Reason: ch.Rationale, At: t.w.clock()}
	if err := store.InsertFlags(ctx, t.tx, tenant, flag, out.Flagged); err != nil {
		return Quarantine{}, err
	}
	out.Record, err = t.get(ctx, tenant, id)
	if err != nil {
		return Quarantine{}, err
	}
	return out, nil
}

// derived walks the derived_from relations into id breadth-first, a
// set-based query per hop, and returns the live records it finds, nearest
// first. Records out of the active set are passed through, not flagged:
// what derives from them derives from the quarantined record too.
func (t *Tx) derived(ctx context.Context, tenant string, id uuid.UUID) (live []uuid.UUID, truncated bool, err error) {
	seen := map[uuid.UUID]bool{id: true}
	frontier := []uuid.UUID{id}
	for hop := 0; len(frontier) > 0; hop++ {
		if hop == FlagDepth {
			return live, true, nil
		}
		refs, err := store.Referrers(ctx, t.tx, tenant, memory.DerivedFrom, frontier)
		if err != nil {
			return nil, false, err
		}
		frontier = frontier[:0]
		for _, r := range refs {
			if seen[r.ID] {
				continue
			}
			if len(live) == MaxFlagged || len(seen) == maxVisited {
				return live, true, nil
			}
			seen[r.ID] = true
			frontier = append(frontier, r.ID)
			if r.Status.Live() {
				live = append(live, r.ID)
			}
		}
	}
	return live, false, nil
}

// Release is what [Tx.Release] changed.
type Release struct {
	// Record is the released record.
	Record memory.Record
	// Unflagged are the records whose flag from the quarantine was
	// cleared.
	Unflagged []uuid.UUID
}

// Release ends a record's quarantine: it returns to the status it had
// before (active or contested, read from the version log), a revision
// audited with the rationale, which is required, its provenance stamp says
// it was approved by who released it, signed again, and the flags its
// quarantine raised are cleared. Refused with [CodeNotAllowed] when the
// record is not quarantined, and with [CodeActiveFactExists] when another
// active fact took its place meanwhile.
func (t *Tx) Release(ctx context.Context, tenant string, id uuid.UUID, version int, ch Change) (Release, error) {
	var out Release
	if err := checkChange(ch); err != nil {
		return out, err
	}
	if err := needRationale(ch, "why the record is released"); err != nil {
		return out, err
	}
	rec, err := t.lock(ctx, tenant, id)
	if err != nil {
		return Release{}, err
	}
	if version != 0 && rec.Version != version {
		return Release{}, conflict(CodeVersionConflict, []uuid.UUID{id}, "record %s is at version %d, not %d: read it again", id, rec.Version, version)
	}
	if rec.Status != memory.Quarantined {
		return Release{}, conflict(CodeNotAllowed, []uuid.UUID{id}, "record %s is %s: only quarantined records are released", id, rec.Status)
	}
	status := memory.Active
	prev, err := store.StatusAt(ctx, t.tx, tenant, id, rec.Version-1)
	if err != nil {
		return Release{}, err
	}
	if prev.Live() {
		status = prev
	}
	if err := t.leave(ctx, tenant, &rec, status, ActionRelease, ch); err != nil {
		return Release{}, err
	}
	// A release is a person's judgement that the record may be
	// trusted again: its stamp says so, approved by who released it
	// and why (write-path RFC §12.4.2), and is signed afresh — a
	// stamp the audit had found tampered with verifies again.
	if err := t.restamp(ctx, tenant, rec, decision(ApprovalApproved, ch.Actor, ch.Rationale, rec.UpdatedAt)); err != nil {
		return Release{}, err
	}
	if out.Unflagged, err = store.ClearFlags(ctx, t.tx, tenant, id, memory.DerivedFromQuarantined); err != nil {
		return Release{}, err
	}
	out.Record, err = t.get(ctx, tenant, id)
	if err != nil {
		return Release{}, err
	}
	return out, nil
}

// needRationale refuses a change without a rationale: an operation that
// governs others' memory must say why.
func needRationale(ch Change, why string) error {
	if ch.Rationale == "" {
		return &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: "/rationale", Message: "is required: " + why}}}
	}
	return nil
}

// Quarantine runs [Tx.Quarantine] in a transaction of its own.
func (w *Writer) Quarantine(ctx context.Context, tenant string, id uuid.UUID, version int, ch Change) (Quarantine, error) {
	return inTx(ctx, w, func(ctx context.Context, tx *Tx) (Quarantine, error) {
		return tx.Quarantine(ctx, tenant, id, version, ch)
	})
}

// Release runs [Tx.Release] in a transaction of its own.
func (w *Writer) Release(ctx context.Context, tenant string, id uuid.UUID, version int, ch Change) (Release, error) {
	return inTx(ctx, w, func(ctx context.Context, tx *Tx) (Release, error) {
		return tx.Release(ctx, tenant, id, version, ch)
	})
}
