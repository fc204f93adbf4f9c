package revise

import (
	"context"
	"errors"
	"slices"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// Audit action of a duplicate folded into the record it duplicates.
const ActionAbsorb = "absorb"

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
	existing, exact, err := store.SameContent(ctx, t.tx, tenant, rec.Type, hash, fingerprint(rec))
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
	if !changed {
		return Admission{Record: existing, Outcome: Absorbed}, true, nil, nil
	}
	if err := t.revise(ctx, tenant, &merged); err != nil {
		return a, false, nil, err
	}
	if err := t.audit(ctx, tenant, merged, ActionAbsorb, Change{Actor: ch.Actor,
		Rationale: "a duplicate write brought new evidence, tags or confidence", Evidence: rec.Provenance.Sources}); err != nil {
		return a, false, nil, err
	}
	return Admission{Record: merged, Outcome: Merged, Reasons: []string{"duplicates record " + existing.ID.String()}}, true, nil, nil
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
