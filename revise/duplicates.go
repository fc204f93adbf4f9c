package revise

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/store"
)

// ActionMergeInto is the audit action of a record that absorbed duplicates
// of it which were already stored ([Tx.MergeInto]); its audit entry's
// evidence names each of them as a record source.
const ActionMergeInto = "merge_into"

// MergeInto folds stored duplicates into the oldest of them, which survives
// (write-path RFC §12.3.4, substrate RFC §15.7 duplicate resolution): into
// becomes its own next version with the union of its and their provenance
// sources and tags, the highest confidence, salience and sensitivity, the
// latest reinforcement, and keeps its payload, id and creation time (the
// earliest: into must be at least as old as each duplicate). Each duplicate
// leaves the active set, merged, with a merged_into relation to into. All
// of it is one transaction and each record changed is audited; the
// survivor's entry names the duplicates in its evidence, which is how
// [Tx.Rollback] undoes it.
//
// The records must be live, revisable, and share type, scope and
// visibility; a merge whose evidence would lead back to the survivor or to
// a duplicate is refused by the provenance gate (§12.11.4).
func (t *Tx) MergeInto(ctx context.Context, tenant string, into uuid.UUID, dups []uuid.UUID, ch Change) (memory.Record, error) {
	if err := checkChange(ch); err != nil {
		return memory.Record{}, err
	}
	ids := append([]uuid.UUID{into}, dups...)
	if err := checkIDs(ids, 2, "/record_ids"); err != nil {
		return memory.Record{}, err
	}
	var survivor memory.Record
	recs, err := t.lockMany(ctx, tenant, ids)
	if err != nil {
		return memory.Record{}, err
	}
	survivor = recs[0]
	for _, r := range recs {
		if err := checkRevisable(r, 0); err != nil {
			return memory.Record{}, err
		}
		if r.Type == memory.Working {
			return memory.Record{}, conflict(CodeNotAllowed, []uuid.UUID{r.ID}, "working memory is not merged; it ends with its task")
		}
		if r.Type != survivor.Type || r.Scope != survivor.Scope || r.Visibility != survivor.Visibility ||
			r.AgentID != survivor.AgentID || r.ThreadID != survivor.ThreadID {
			return memory.Record{}, conflict(CodeNotAllowed, ids, "merged records must share type, scope and visibility")
		}
		if r.CreatedAt.Before(survivor.CreatedAt) {
			return memory.Record{}, conflict(CodeNotAllowed, ids, "record %s is older than %s: duplicates merge into the oldest, which keeps the earliest creation", r.ID, into)
		}
	}
	merged := survivor
	merged.Provenance.Sources = slices.Clone(survivor.Provenance.Sources)
	merged.Tags = slices.Clone(survivor.Tags)
	evidence := slices.Clone(ch.Evidence)
	for _, d := range recs[1:] {
		merged, _ = absorbInto(merged, d)
		merged.Salience = max(merged.Salience, d.Salience)
		merged.Sensitivity = merged.Sensitivity.Max(d.Sensitivity)
		if d.Lifecycle.LastReinforcedAt.After(merged.Lifecycle.LastReinforcedAt) {
			merged.Lifecycle.LastReinforcedAt = d.Lifecycle.LastReinforcedAt
		}
		evidence = append(evidence, memory.Source{Kind: SourceRecord, Ref: "record://" + d.ID.String()})
	}
	// Provenance never forms a cycle (§12.11.4): what the survivor
	// now cites must not lead back to it or to what it absorbs.
	ev, err := t.checkEvidence(ctx, tenant, merged)
	if err != nil {
		return memory.Record{}, err
	}
	if err := t.checkCycle(ctx, tenant, merged, ev, dups); err != nil {
		return memory.Record{}, err
	}
	for _, d := range recs[1:] {
		if err := t.leave(ctx, tenant, &d, memory.Merged, ActionMerge, ch); err != nil {
			return memory.Record{}, err
		}
		if err := t.addRelation(ctx, tenant, d.ID, memory.Relation{Predicate: memory.MergedInto, TargetID: into}); err != nil {
			return memory.Record{}, err
		}
	}
	if err := t.revise(ctx, tenant, &merged); err != nil {
		return memory.Record{}, err
	}
	if err := t.audit(ctx, tenant, merged, ActionMergeInto, ch.because(ch.Rationale, evidence)); err != nil {
		return memory.Record{}, err
	}
	survivor, err = t.get(ctx, tenant, into)
	if err != nil {
		return memory.Record{}, err
	}
	return survivor, nil
}

// absorbed are the duplicates a record absorbed with [Tx.MergeInto], by
// the version of the record each merge made.
func (t *Tx) absorbed(ctx context.Context, tenant string, id uuid.UUID) (map[int][]uuid.UUID, error) {
	entries, err := store.Audit(ctx, t.tx, tenant, id)
	if err != nil {
		return nil, err
	}
	out := map[int][]uuid.UUID{}
	for _, e := range entries {
		if e.Action != ActionMergeInto || e.Version == nil {
			continue
		}
		for _, s := range e.Evidence {
			if s.Kind != SourceRecord {
				continue
			}
			if d, err := uuid.Parse(strings.TrimPrefix(s.Ref, "record://")); err == nil && d != id {
				out[*e.Version] = append(out[*e.Version], d)
			}
		}
	}
	return out, nil
}

// unmerge is [Tx.Rollback] of a [Tx.MergeInto]: the survivor goes back to
// what it was before the merge (its previous version's provenance, tags,
// confidence, salience, sensitivity and status) as its next version,
// audited rollback, and each duplicate it absorbed then is reactivated.
func (t *Tx) unmerge(ctx context.Context, tenant string, id uuid.UUID, version int, dups []uuid.UUID, ch Change) (Rollback, error) {
	var out Rollback
	ids := append([]uuid.UUID{id}, dups...)
	locked, err := t.lockMany(ctx, tenant, ids)
	if err != nil {
		return out, err
	}
	survivor, absorbed := locked[0], locked[1:]
	if err := checkRevisable(survivor, version); err != nil {
		return out, err
	}
	for _, d := range absorbed {
		if d.Status != memory.Merged {
			return out, conflict(CodeNotAllowed, []uuid.UUID{d.ID},
				"record %s is %s, no longer merged into %s: it was revised since; roll that back first", d.ID, d.Status, id)
		}
	}
	history, err := t.history(ctx, tenant, id)
	if err != nil {
		return out, err
	}
	i := slices.IndexFunc(history, func(v store.Version) bool { return v.Version == survivor.Version-1 })
	if i < 0 {
		return out, conflict(CodeNotAllowed, []uuid.UUID{id}, "record %s has no version before its merge", id)
	}
	before := history[i].Record
	restored := survivor
	restored.Status = before.Status
	restored.Provenance, restored.Tags = before.Provenance, before.Tags
	restored.Confidence, restored.Salience, restored.Sensitivity = before.Confidence, before.Salience, before.Sensitivity
	restored.Lifecycle.LastReinforcedAt = before.Lifecycle.LastReinforcedAt
	if err := t.revise(ctx, tenant, &restored); err != nil {
		return out, err
	}
	if err := t.audit(ctx, tenant, restored, ActionRollback, ch); err != nil {
		return out, err
	}
	react := ch.because(fmt.Sprintf("reactivated after rollback of the merge into %s", id), ch.Evidence)
	for i := range absorbed {
		if err := t.reactivate(ctx, tenant, &absorbed[i], react); err != nil {
			return out, err
		}
	}
	if out.RolledBack, err = t.get(ctx, tenant, id); err != nil {
		return out, err
	}
	for _, d := range absorbed {
		got, err := t.get(ctx, tenant, d.ID)
		if err != nil {
			return out, err
		}
		out.Reactivated = append(out.Reactivated, got)
	}
	return out, nil
}

// Likeness is how two stored records of one type relate, for duplicate
// resolution over records already stored (write-path RFC §12.3.2).
type Likeness int

// Likenesses, from [Compare].
const (
	// Apart: nothing to resolve — other visibility or scope, disjoint
	// conditions (§12: they coexist), or alternatives (another procedure
	// or plan structure for the same trigger or intent, §8, §9).
	Apart Likeness = iota
	// Duplicate: the same content, or the same structure with nothing
	// that contradicts: a pure duplicate, to merge.
	Duplicate
	// Conflict: the same structure with other content — a fact's object,
	// a procedure's recipe, a plan's graph: a contradiction, to contest.
	Conflict
	// Different: the structures disagree. Only a vector near-duplicate
	// makes two such records a question (a contest); they never merge.
	Different
)

// Comparison is what [Compare] found, and the words for an audit rationale.
type Comparison struct {
	Likeness Likeness
	// Reason says what matched or differed ("same content hash", "same
	// fingerprint: subject, predicate, validity and normalised object").
	Reason string
}

// Compare tells how two stored records relate: the dedup gate's tiers 1
// and 2 (content hash, structural fingerprint) and the structure a vector
// near-duplicate must share to be a pure duplicate (§12.3.2): for a fact
// its subject, predicate, validity and normalised object (subject and
// predicate up to case and separators); for a procedure its triggers
// (signals and conditions) and normalised recipe; for a plan its intent and
// graph. Records of other types, scopes or visibility are [Apart].
func Compare(a, b memory.Record) (Comparison, error) {
	if a.Type != b.Type || a.Scope != b.Scope || a.Visibility != b.Visibility || a.AgentID != b.AgentID || a.ThreadID != b.ThreadID {
		return Comparison{Apart, "other type, scope or visibility"}, nil
	}
	ha, err := contentHash(a)
	if err != nil {
		return Comparison{}, err
	}
	hb, err := contentHash(b)
	if err != nil {
		return Comparison{}, err
	}
	if slices.Equal(ha, hb) {
		return Comparison{Duplicate, "same content hash"}, nil
	}
	sameFP := slices.Equal(fingerprint(a), fingerprint(b)) && fingerprint(a) != nil
	switch a.Type {
	case memory.Semantic:
		return compareFacts(a, b, sameFP)
	case memory.Competence:
		return compareProcedures(a, b, sameFP)
	case memory.PlanGraph:
		return comparePlans(a, b, sameFP)
	}
	return Comparison{Apart, a.Type.ARecord() + " has no structure to compare"}, nil
}

func compareFacts(a, b memory.Record, sameFP bool) (Comparison, error) {
	var pa, pb memory.SemanticPayload
	if err := decodeBoth(a, b, &pa, &pb); err != nil {
		return Comparison{}, err
	}
	if pa.Validity.Conditions.Disjoint(pb.Validity.Conditions) {
		return Comparison{Apart, "disjoint conditions"}, nil
	}
	if looseKey(pa.Subject) != looseKey(pb.Subject) || looseKey(pa.Predicate) != looseKey(pb.Predicate) {
		return Comparison{Different, "other subject or predicate"}, nil
	}
	if !sameValidity(pa.Validity, pb.Validity) {
		// A global fact and a conditional one, say: not the same claim.
		return Comparison{Apart, "other validity"}, nil
	}
	switch {
	case normalise(pa.Object) != normalise(pb.Object):
		return Comparison{Conflict, "same subject, predicate and validity, other object"}, nil
	case sameFP:
		return Comparison{Duplicate, "same fingerprint: subject, predicate, validity and normalised object"}, nil
	}
	return Comparison{Duplicate, "same subject, predicate (up to case and separators), validity and normalised object"}, nil
}

func compareProcedures(a, b memory.Record, sameFP bool) (Comparison, error) {
	var pa, pb memory.CompetencePayload
	if err := decodeBoth(a, b, &pa, &pb); err != nil {
		return Comparison{}, err
	}
	shared, disjoint := false, true
	for _, ta := range pa.Triggers {
		for _, tb := range pb.Triggers {
			if normaliseText(ta.Signal) == normaliseText(tb.Signal) {
				shared = true
				disjoint = disjoint && ta.Conditions.Disjoint(tb.Conditions)
			}
		}
	}
	switch {
	case shared && disjoint:
		return Comparison{Apart, "the same trigger under disjoint conditions"}, nil
	case !shared && !sameFP:
		return Comparison{Different, "other triggers"}, nil
	}
	sameTriggers := triggerKey(pa.Triggers) == triggerKey(pb.Triggers)
	sameRecipe := recipeKey(pa.Recipe) == recipeKey(pb.Recipe)
	switch {
	case sameFP && !sameRecipe:
		return Comparison{Conflict, "same fingerprint (skill and triggers), other recipe"}, nil
	case sameTriggers && sameRecipe && sameFP:
		return Comparison{Duplicate, "same fingerprint (skill and triggers) and recipe"}, nil
	case sameTriggers && sameRecipe:
		return Comparison{Duplicate, "same triggers and normalised recipe"}, nil
	}
	// Another procedure for the same trigger is an alternative, a
	// fallback, not a contradiction (substrate RFC §8).
	return Comparison{Apart, "another procedure for the same trigger"}, nil
}

// triggerKey is a procedure's triggers, normalised and in order.
func triggerKey(ts []memory.Trigger) string {
	keys := make([]string, len(ts))
	for i, tr := range ts {
		c, _ := json.Marshal(tr.Conditions)
		keys[i] = normaliseText(tr.Signal) + "\x00" + string(c)
	}
	slices.Sort(keys)
	return strings.Join(keys, "\x01")
}

// recipeKey is a procedure's recipe, normalised: each step's tool and text.
func recipeKey(steps []memory.Step) string {
	keys := make([]string, len(steps))
	for i, s := range steps {
		keys[i] = normaliseText(s.Tool) + "\x00" + normaliseText(s.Step)
	}
	return strings.Join(keys, "\x01")
}

func comparePlans(a, b memory.Record, sameFP bool) (Comparison, error) {
	var pa, pb memory.PlanGraphPayload
	if err := decodeBoth(a, b, &pa, &pb); err != nil {
		return Comparison{}, err
	}
	sameGraph := graphKey(pa) == graphKey(pb)
	sameIntent := normaliseText(pa.Intent) == normaliseText(pb.Intent)
	switch {
	case sameFP && sameGraph:
		return Comparison{Duplicate, "same fingerprint (plan id and version) and graph"}, nil
	case sameFP:
		return Comparison{Conflict, "same fingerprint (plan id and version), other graph"}, nil
	case sameIntent && sameGraph:
		return Comparison{Duplicate, "same intent and graph"}, nil
	case sameIntent:
		// A plan per distinct structure (substrate RFC §9).
		return Comparison{Apart, "another plan structure for the same intent"}, nil
	}
	return Comparison{Different, "other intent"}, nil
}

// graphKey is a plan's graph up to node ids: the ops in order and the
// edges between their positions.
func graphKey(p memory.PlanGraphPayload) string {
	at := map[string]int{}
	ops := make([]string, len(p.Nodes))
	for i, n := range p.Nodes {
		at[n.ID] = i
		ops[i] = normaliseText(n.Op)
	}
	edges := make([]string, len(p.Edges))
	for i, e := range p.Edges {
		edges[i] = fmt.Sprintf("%d>%d:%s", at[e.From], at[e.To], e.Kind)
	}
	slices.Sort(edges)
	return strings.Join(ops, "\x00") + "\x01" + strings.Join(edges, "\x00")
}

func decodeBoth(a, b memory.Record, pa, pb any) error {
	if err := json.Unmarshal(a.Payload, pa); err != nil {
		return fmt.Errorf("decode record %s: %w", a.ID, err)
	}
	if err := json.Unmarshal(b.Payload, pb); err != nil {
		return fmt.Errorf("decode record %s: %w", b.ID, err)
	}
	return nil
}

// looseKey is a name up to case, spacing and separators: "prefers_language",
// "Prefers-Language" and "prefers language" are one.
func looseKey(s string) string {
	return normaliseText(strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r == '.' {
			return ' '
		}
		return r
	}, s))
}

// DedupKeys are a record's content hash and structural fingerprint (nil
// for a type without one), as the dedup gate computes them and the
// provenance table stores them (write-path RFC §12.3.2, tiers 1 and 2).
func DedupKeys(rec memory.Record) (hash, fp []byte, err error) {
	if hash, err = contentHash(rec); err != nil {
		return nil, nil, &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: "/payload", Message: err.Error()}}}
	}
	return hash, fingerprint(rec), nil
}

// MergeInto runs [Tx.MergeInto] in a transaction of its own.
func (w *Writer) MergeInto(ctx context.Context, tenant string, into uuid.UUID, dups []uuid.UUID, ch Change) (memory.Record, error) {
	return inTx(ctx, w, func(ctx context.Context, tx *Tx) (memory.Record, error) {
		return tx.MergeInto(ctx, tenant, into, dups, ch)
	})
}
