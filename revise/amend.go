package revise

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/schemas"
)

// ActionAmend is the audit action of a learned record revised in place.
const ActionAmend = "amend"

// Amend revises a procedure or a plan in place, as its next version, when
// what it says has not changed but what is known of it has: a procedure's
// statistics, failure modes, fallbacks and evidence grow with its uses
// (substrate RFC §8, §15A.9), a plan's metrics with its reuse (§9,
// §15A.10). next's payload, confidence, tags and provenance sources replace
// the record's, its sensitivity never falls, and its relations gain next's
// derived_from and supports relations; the record keeps its id, so
// what agents hold of it (a retrieval, feedback) stays valid. A changed
// structure — a procedure's triggers or recipe, a plan's nodes or edges —
// is refused with [CodeNotAllowed]: that is a supersede, which keeps the
// old structure in history. The evidence and provenance-cycle gates run on
// what the amended record cites. version, when non-zero, must be id's
// current version.
func (t *Tx) Amend(ctx context.Context, tenant string, id uuid.UUID, version int, next memory.Record, ch Change) (memory.Record, error) {
	if err := checkChange(ch); err != nil {
		return memory.Record{}, err
	}
	old, err := t.lockRevisable(ctx, tenant, id, version)
	if err != nil {
		return memory.Record{}, err
	}
	if next.Type == "" {
		next.Type = old.Type
	}
	if next.Type != old.Type {
		return memory.Record{}, &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: "/record/type", Message: fmt.Sprintf("must be %q, the type of the record it amends", old.Type)}}}
	}
	same, err := SameStructure(old, next)
	if err != nil {
		return memory.Record{}, err
	}
	if !same {
		return memory.Record{}, conflict(CodeNotAllowed, []uuid.UUID{id}, "record %s: only a procedure or plan whose structure is unchanged is amended; supersede it", id)
	}
	for i, r := range next.Relations {
		if r.Predicate != memory.DerivedFrom && r.Predicate != memory.Supports {
			return memory.Record{}, &schemas.ValidationError{Violations: []schemas.Violation{{
				Pointer: fmt.Sprintf("/record/relations/%d/predicate", i), Message: fmt.Sprintf("%q is not added by an amendment", r.Predicate)}}}
		}
	}
	// The relations the record has stay (relations are never removed);
	// next's are added, those it already has once.
	added := next.Relations
	rec := old
	rec.Payload, rec.Confidence, rec.Tags = next.Payload, next.Confidence, next.Tags
	rec.Provenance.Sources = next.Provenance.Sources
	rec.Sensitivity = old.Sensitivity.Max(next.Sensitivity)
	rec.Relations = added
	if err := t.w.validate(rec, "/record"); err != nil {
		return memory.Record{}, err
	}
	if bad := checkIndexed(rec, "/record"); len(bad) > 0 {
		return memory.Record{}, &schemas.ValidationError{Violations: bad}
	}
	if err := t.checkRelations(ctx, tenant, added, "/record"); err != nil {
		return memory.Record{}, err
	}
	ev, err := t.checkEvidence(ctx, tenant, rec, old.Provenance.Sources...)
	if err != nil {
		return memory.Record{}, err
	}
	if err := t.checkCycle(ctx, tenant, rec, ev, nil); err != nil {
		return memory.Record{}, err
	}
	if err := t.revise(ctx, tenant, &rec); err != nil {
		return memory.Record{}, err
	}
	if err := t.addRelations(ctx, tenant, rec.ID, added); err != nil {
		return memory.Record{}, err
	}
	if err := t.audit(ctx, tenant, rec, ActionAmend, ch); err != nil {
		return memory.Record{}, err
	}
	return rec, nil
}

// SameStructure reports whether two procedures (triggers and recipe) or
// two plans (plan id, version, nodes and edges) have one structure: what
// [Tx.Amend] keeps.
func SameStructure(a, b memory.Record) (bool, error) {
	var keys []string
	switch a.Type {
	case memory.Competence:
		keys = []string{"triggers", "recipe"}
	case memory.PlanGraph:
		keys = []string{"plan_id", "version", "nodes", "edges"}
	default:
		return false, nil
	}
	var pa, pb map[string]json.RawMessage
	if err := json.Unmarshal(a.Payload, &pa); err != nil {
		return false, fmt.Errorf("decode record %s: %w", a.ID, err)
	}
	if err := json.Unmarshal(b.Payload, &pb); err != nil {
		return false, &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: "/record/payload", Message: "is not a JSON object"}}}
	}
	for _, k := range keys {
		if !jsonEqual(pa[k], pb[k]) && !(len(pa[k]) == 0 && len(pb[k]) == 0) {
			return false, nil
		}
	}
	return true, nil
}
