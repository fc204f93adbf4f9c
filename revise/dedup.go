package revise

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// Audit actions of the dedup gate: a duplicate folded into the record it
// duplicates, and a contest that the evidence it brought resolved.
const (
	ActionAbsorb  = "absorb"
	ActionResolve = "resolve"
)

// dedup is the dedup gate (write-path RFC §12.3): a live record with the
// same content (tier 1, content hash) absorbs the write, which writes
// nothing; one with the same structure (tier 2, fingerprint) absorbs it as
// well when the write adds nothing, takes what it adds — evidence, tags, a
// higher confidence — as its next version when it is a superset (merge,
// §12.3.4); a procedure or plan with the same structure and other content
// is a conflict, returned for the caller to defer to review. Tier 3
// (vector near-duplicates) is not run: the write path embeds nothing
// itself. done reports the write was answered here.
func (t *Tx) dedup(ctx context.Context, tenant string, rec memory.Record, ch Change) (a Admission, done bool, conflict *memory.Record, err error) {
	hash, err := contentHash(rec)
	if err != nil {
		return a, false, nil, err
	}
	existing, exact, err := t.sameContent(ctx, tenant, rec, hash, fingerprint(rec))
	if errors.Is(err, store.ErrNotFound) {
		return a, false, nil, nil
	}
	if err != nil {
		return a, false, nil, err
	}
	if !exact && rec.Type != memory.Semantic {
		// Same skill and triggers (or plan and version), other content.
		return a, false, &existing, nil
	}
	merged, changed := absorbInto(existing, rec)
	g := t.w.cfg.Gates
	if merged.Type == memory.Semantic && len(merged.Provenance.Sources) > len(existing.Provenance.Sources) {
		// A fact's confidence follows its evidence count and the sources'
		// authority (substrate RFC §7), and new evidence never lowers it.
		if c, _ := g.factEvidence(merged.Provenance.Sources); c > merged.Confidence {
			merged.Confidence = c
		}
		// Observed again, from a new source: a use that confirms it, so
		// it is reinforced and its decay restarts, in the revision that
		// counts the source (substrate RFC §11, §15.6). A retry of the
		// same source is nothing new.
		now := t.w.clock()
		merged.Salience, merged.Lifecycle.LastReinforcedAt = t.w.reinforced(merged, now), now
	}
	if !changed {
		return Admission{Record: existing, Outcome: Absorbed}, true, nil, nil
	}
	var res resolution
	if merged.Type == memory.Semantic && merged.Status == memory.Contested && g.policyFor(merged.Scope) == PolicyEvidence {
		if res, err = t.resolveContest(ctx, tenant, &merged, ch); err != nil {
			return a, false, nil, err
		}
	}
	if err := t.revise(ctx, tenant, &merged); err != nil {
		return a, false, nil, err
	}
	if err := t.audit(ctx, tenant, merged, ActionAbsorb, ch.because("a duplicate write brought new evidence, tags or confidence", rec.Provenance.Sources)); err != nil {
		return a, false, nil, err
	}
	a = Admission{Record: merged, Outcome: Merged, Reasons: []string{"duplicates record " + existing.ID.String()}}
	if res.why == "" {
		return a, true, nil, nil
	}
	if err := t.audit(ctx, tenant, merged, ActionResolve, ch.because(res.why, rec.Provenance.Sources)); err != nil {
		return a, false, nil, err
	}
	for _, id := range res.superseded {
		rel := memory.Relation{Predicate: memory.Supersedes, TargetID: id}
		if err := t.addRelation(ctx, tenant, merged.ID, rel); err != nil {
			return a, false, nil, err
		}
		a.Record.Relations = append(a.Record.Relations, rel)
	}
	a.Replaced, a.Reasons = res.superseded, append(a.Reasons, res.why)
	return a, true, nil, nil
}

// resolution is what [Tx.resolveContest] decided: why the contest ended,
// and the facts the winner superseded ("" and none while it goes on).
type resolution struct {
	why        string
	superseded []uuid.UUID
}

// resolveContest re-weighs a contested fact that gained evidence (the
// same fact observed again, merged into it as rec) against the live facts
// it is contested with, under the contradiction policy evidence
// (substrate RFC §7: contested "until resolved"): when its evidence now
// clearly outweighs the strongest of them, they leave the active set,
// superseded by it, and rec becomes active — its caller writes it as its
// next version, in the same transaction, with the supersedes relations and
// an audit entry ([ActionResolve]) saying what was weighed. A fact whose
// every rival has left the active set is active again by the same rule.
// [Tx.Rollback] of rec undoes the resolution: all contested again.
func (t *Tx) resolveContest(ctx context.Context, tenant string, rec *memory.Record, ch Change) (resolution, error) {
	var res resolution
	edges, err := store.Relations(ctx, t.tx, tenant, rec.ID)
	if err != nil {
		return res, err
	}
	var ids []uuid.UUID
	for _, e := range edges {
		if e.SourceID == rec.ID && e.Predicate == memory.Contradicts && !slices.Contains(ids, e.TargetID) {
			ids = append(ids, e.TargetID)
		}
	}
	rivals, err := t.lockMany(ctx, tenant, ids)
	if err != nil {
		return res, err
	}
	rivals = slices.DeleteFunc(rivals, func(r memory.Record) bool { return !r.Live() })
	g := t.w.cfg.Gates
	ratio := *g.Contradiction.EvidenceRatio
	mine, theirs := g.weigh(*rec), g.strongest(rivals)
	if len(rivals) > 0 && !outweighs(mine, theirs, ratio) {
		return res, nil
	}
	res.why = "contest resolved: no fact it contradicts is live any more"
	if len(rivals) > 0 {
		res.why = fmt.Sprintf("contest resolved by evidence: %s (contradiction policy evidence, ratio %g)", mine.against(theirs), ratio)
	}
	for i := range rivals {
		if rivals[i].Payload, err = setRevision(rivals[i].Payload, func(r *memory.Revision) { r.SupersededBy = rec.ID.String() }); err != nil {
			return res, err
		}
		if err := t.leave(ctx, tenant, &rivals[i], memory.Superseded, ActionSupersede, ch.because(res.why, rec.Provenance.Sources)); err != nil {
			return res, err
		}
		res.superseded = append(res.superseded, rivals[i].ID)
	}
	rec.Status = memory.Active
	rec.Payload, err = setRevision(rec.Payload, func(r *memory.Revision) {
		r.Status = revisionStatus(memory.Active)
		if len(res.superseded) > 0 {
			r.Supersedes = res.superseded[0].String()
		}
	})
	return res, err
}

// absorbInto folds what a duplicate adds into the record it duplicates:
// the union of evidence and tags, the higher confidence (§12.3.4).
func absorbInto(existing, dup memory.Record) (memory.Record, bool) {
	out := existing
	out.Provenance.Sources = slices.Clone(existing.Provenance.Sources)
	out.Tags = slices.Clone(existing.Tags)
	changed := false
	for _, s := range dup.Provenance.Sources {
		if !slices.ContainsFunc(out.Provenance.Sources, func(o memory.Source) bool { return o.Kind == s.Kind && o.Ref == s.Ref }) {
			out.Provenance.Sources = append(out.Provenance.Sources, s)
			changed = true
		}
	}
	for _, tag := range dup.Tags {
		if !slices.Contains(out.Tags, tag) {
			out.Tags = append(out.Tags, tag)
			changed = true
		}
	}
	if dup.Confidence > out.Confidence {
		out.Confidence, changed = dup.Confidence, true
	}
	return out, changed
}
