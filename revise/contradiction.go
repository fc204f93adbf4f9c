package revise

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// contradiction is what the contradiction gate found for a fact: the live
// facts with its scope, subject and predicate that hold another object
// where their validity overlaps its own — same conditions, or conditions
// that meet without one refining the other — and their time boxes meet
// (structural contradiction, write-path RFC §12.2.4, without a language
// model).
type contradiction struct {
	conflicts []memory.Record
	// maxAdjusted is the highest adjusted confidence among them.
	maxAdjusted float64
	// sameConditions: one of them has exactly the newcomer's validity, so
	// the two cannot both be active (substrate RFC §7).
	sameConditions bool
	// related: a live fact shares the newcomer's subject and predicate,
	// contradicting or not (the approval gate's novelty).
	related bool
}

func (c contradiction) ids() []uuid.UUID {
	out := make([]uuid.UUID, len(c.conflicts))
	for i, r := range c.conflicts {
		out[i] = r.ID
	}
	return out
}

// findContradictions is the contradiction gate's search.
func (t *Tx) findContradictions(ctx context.Context, tenant string, rec memory.Record) (contradiction, error) {
	var c contradiction
	var p memory.SemanticPayload
	if err := json.Unmarshal(rec.Payload, &p); err != nil {
		return c, fmt.Errorf("decode fact: %w", err)
	}
	live, read, err := t.liveOf(ctx, tenant, store.FactKey{Scope: rec.Scope, Subject: p.Subject, Predicate: p.Predicate})
	if err != nil {
		return c, err
	}
	var facts []memory.Record
	if read {
		for _, f := range live {
			facts = append(facts, f.Record)
		}
	} else if facts, err = t.liveFacts(ctx, tenant, rec.Scope, p.Subject, p.Predicate); err != nil {
		return c, err
	}
	c.related = len(facts) > 0
	for _, f := range facts {
		var fp memory.SemanticPayload
		if err := json.Unmarshal(f.Payload, &fp); err != nil {
			return c, fmt.Errorf("decode fact %s: %w", f.ID, err)
		}
		if jsonEqual(fp.Object, p.Object) || !overlap(fp.Validity, p.Validity) || specialises(fp.Validity, p.Validity) {
			continue
		}
		c.conflicts = append(c.conflicts, f)
		if sameValidity(fp.Validity, p.Validity) {
			c.sameConditions = true
		}
	}
	if len(c.conflicts) == 0 {
		return c, nil
	}
	stamps := map[uuid.UUID]json.RawMessage{}
	if read {
		for _, f := range live {
			if f.Stamp != nil {
				stamps[f.Record.ID] = f.Stamp
			}
		}
	} else if stamps, err = store.Stamps(ctx, t.tx, tenant, c.ids()); err != nil {
		return c, err
	}
	for _, f := range c.conflicts {
		var s Stamp
		adj := 0.0
		if raw, ok := stamps[f.ID]; ok && json.Unmarshal(raw, &s) == nil {
			adj = s.AdjustedConfidence
		} else {
			ev, _ := t.checkEvidence(ctx, tenant, f)
			adj = t.w.adjusted(f.Confidence, ev, false)
		}
		c.maxAdjusted = max(c.maxAdjusted, adj)
	}
	return c, nil
}

// overlap reports whether two validities can hold at once: their
// conditions are not disjoint and their time boxes meet.
func overlap(a, b memory.Validity) bool {
	if a.Conditions.Disjoint(b.Conditions) {
		return false
	}
	start := func(v memory.Validity) time.Time {
		if v.Start != nil {
			return *v.Start
		}
		return time.Time{}
	}
	end := func(v memory.Validity) time.Time {
		if v.End != nil {
			return *v.End
		}
		return time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return !start(a).After(end(b)) && !start(b).After(end(a))
}

// specialises reports whether one validity's conditions strictly contain
// the other's: a fact for a narrower context refines a broader one (an
// exception to a default, substrate RFC §7), it does not contradict it.
func specialises(a, b memory.Validity) bool {
	sub := func(x, y memory.Conditions) bool { // x ⊂ y
		if len(x) >= len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonEqualAny(v, w) {
				return false
			}
		}
		return true
	}
	return sub(a.Conditions, b.Conditions) || sub(b.Conditions, a.Conditions)
}

func jsonEqualAny(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func sameValidity(a, b memory.Validity) bool {
	ja, _ := json.Marshal(memory.Validity{Conditions: a.Conditions, Start: a.Start, End: a.End})
	jb, _ := json.Marshal(memory.Validity{Conditions: b.Conditions, Start: b.Start, End: b.End})
	return string(ja) == string(jb)
}

// replace admits rec in place of the facts it contradicts (contradiction
// policy supersede, or evidence when rec clearly outweighs them): they
// leave the active set, superseded by it, audited with why.
func (t *Tx) replace(ctx context.Context, tenant string, rec memory.Record, inherited bool, ch Change, ev evidence, c contradiction, why string) (Admission, error) {
	ids := c.ids()
	olds, err := t.lockMany(ctx, tenant, ids)
	if err != nil {
		return Admission{}, err
	}
	for i := range olds {
		if olds[i].Payload, err = setRevision(olds[i].Payload, func(r *memory.Revision) { r.SupersededBy = rec.ID.String() }); err != nil {
			return Admission{}, err
		}
		if err := t.leave(ctx, tenant, &olds[i], memory.Superseded, ActionSupersede,
			ch.because(why, ch.Evidence)); err != nil {
			return Admission{}, err
		}
	}
	if rec.Payload, err = setRevision(rec.Payload, func(r *memory.Revision) { r.Supersedes = ids[0].String() }); err != nil {
		return Admission{}, err
	}
	if err := t.checkCycle(ctx, tenant, rec, ev, ids); err != nil {
		return Admission{}, err
	}
	if err := t.insertNew(ctx, tenant, &rec, inherited, ch, ev, ApprovalNotRequired, 0); err != nil {
		return Admission{}, err
	}
	for _, id := range ids {
		rel := memory.Relation{Predicate: memory.Supersedes, TargetID: id}
		if err := t.addRelation(ctx, tenant, rec.ID, rel); err != nil {
			return Admission{}, err
		}
		rec.Relations = append(rec.Relations, rel)
	}
	return Admission{Record: rec, Outcome: Created, Replaced: ids, Reasons: []string{why}}, nil
}

// contestWith admits rec contested, with the facts it contradicts
// (contradiction policies contest, fork and evidence), audited with why.
func (t *Tx) contestWith(ctx context.Context, tenant string, rec memory.Record, ch Change, c contradiction, why string) (Admission, error) {
	recs, err := t.Contest(ctx, tenant, c.ids(), &rec, ch.because(why, ch.Evidence))
	if err != nil {
		return Admission{}, err
	}
	return Admission{Record: recs[len(recs)-1], Outcome: Contested, Contested: slices.Clone(c.ids()), Reasons: []string{why}}, nil
}

// weighing is one side of a contradiction as the policy evidence weighs
// it: its distinct evidence sources and their weight
// ([Gates.factEvidence]).
type weighing struct {
	sources int
	weight  float64
}

func (g Gates) weigh(r memory.Record) weighing {
	_, w := g.factEvidence(r.Provenance.Sources)
	return weighing{sources: max(1, distinctSources(r.Provenance.Sources)), weight: w}
}

// strongest is the heaviest of recs (the zero weighing when there are
// none).
func (g Gates) strongest(recs []memory.Record) weighing {
	var out weighing
	for _, r := range recs {
		if w := g.weigh(r); w.weight > out.weight || out.sources == 0 {
			out = w
		}
	}
	return out
}

// against says what was weighed, for the audit: "3 sources of evidence
// (weight 2.75) against 1 (weight 0.92)".
func (a weighing) against(b weighing) string {
	return fmt.Sprintf("%d source(s) of evidence (weight %.2f) against %d (weight %.2f)", a.sources, a.weight, b.sources, b.weight)
}

// outweighs reports whether a's evidence clearly outweighs b's: at least
// ratio times its weight (with room for rounding, so that two equal
// observations against one make exactly twice the weight).
func outweighs(a, b weighing, ratio float64) bool {
	return a.weight >= ratio*b.weight*(1-1e-9)
}

func distinctSources(srcs []memory.Source) int {
	seen := map[[2]string]bool{}
	for _, s := range srcs {
		seen[[2]string{s.Kind, s.Ref}] = true
	}
	return len(seen)
}

// Revision policies a fact's payload may ask for (substrate RFC §15A.4's
// revision_policy): how it would be revised against the live facts it
// contradicts.
const (
	RevisionReplace = "replace"
	RevisionFork    = "fork"
	RevisionContest = "contest"
)

// derivedOnly reports whether srcs cite evidence, none of it from outside
// memory and the agent (§12.11.4's diversity rule): other records and
// reasoning only.
func derivedOnly(srcs []memory.Source) bool {
	return len(srcs) > 0 && !observed(srcs)
}

// observed reports whether srcs cite evidence from outside memory and the
// agent.
func observed(srcs []memory.Source) bool {
	return slices.ContainsFunc(srcs, func(s memory.Source) bool { return slices.Contains(external, s.Kind) })
}

// byEvidence is the contradiction policy evidence for a newcomer rec that
// contradicts the live facts of c (substrate RFC §7's revision rules,
// decided by the evidence itself): clearly outweighing the strongest of
// them, it supersedes them all; clearly outweighed by it, it is refused
// with the contradiction report; comparable, they are all contested until
// more evidence arrives ([Tx.resolveContest]). A fact whose evidence is
// all derived within memory (records, reasoning) is refused against facts
// observed from outside it.
//
// The policy leaves the choice among the revisions the evidence allows to
// the fact's payload, when it names one (§15A.4, revision_policy): replace
// supersedes the facts it contradicts unless it is clearly outweighed
// (an update: "the user switched to emacs"); contest contests them unless
// it is clearly outweighed; fork lets a fact whose conditions differ from
// theirs coexist with them as a conditional variant (the same conditions
// cannot: the evidence decides as without one). No payload overrides a
// refusal: clearly weaker evidence never revises a fact. done is false
// when rec is to be admitted as any new fact (a fork), with the reasons in
// the admission.
func (t *Tx) byEvidence(ctx context.Context, tenant string, rec memory.Record, inherited bool, ch Change, ev evidence, c contradiction) (done bool, a Admission, err error) {
	g := t.w.cfg.Gates
	ratio := *g.Contradiction.EvidenceRatio
	mine, theirs := g.weigh(rec), g.strongest(c.conflicts)
	var p memory.SemanticPayload
	if err := json.Unmarshal(rec.Payload, &p); err != nil {
		return true, Admission{}, fmt.Errorf("decode fact: %w", err)
	}
	weighed := fmt.Sprintf("%s (contradiction policy evidence, ratio %g)", mine.against(theirs), ratio)
	switch {
	case derivedOnly(rec.Provenance.Sources) && slices.ContainsFunc(c.conflicts, func(f memory.Record) bool { return observed(f.Provenance.Sources) }):
		// What memory and the agent derived — a language model's reading
		// of an episode, say — does not revise what was observed from
		// outside them, however many such sources it cites: they are not
		// independent of the observation (write-path RFC §12.11.4).
		return true, Admission{}, reject(GateContradiction, string(ReasonContradiction), c.ids(),
			"contradicts %d live fact(s) observed from outside memory with evidence derived within it (%s): %s",
			len(c.conflicts), strings.Join([]string{SourceRecord, SourceReasoning}, ", "), weighed)
	case outweighs(theirs, mine, ratio):
		return true, Admission{}, reject(GateContradiction, string(ReasonContradiction), c.ids(),
			"contradicts %d live fact(s) with clearly more evidence: %s", len(c.conflicts), weighed)
	case p.RevisionPolicy == RevisionReplace:
		a, err = t.replace(ctx, tenant, rec, inherited, ch, ev, c,
			"superseded by a contradicting fact that asks to replace it, with evidence not clearly weaker: "+weighed)
		return true, a, err
	case p.RevisionPolicy == RevisionContest:
		a, err = t.contestWith(ctx, tenant, rec, ch, c, "a new observation that asks to contest this fact contradicts it: "+weighed)
		return true, a, err
	case p.RevisionPolicy == RevisionFork && !c.sameConditions:
		return false, Admission{Reasons: []string{fmt.Sprintf("coexists as a conditional variant of %d fact(s) with other conditions (revision policy fork)", len(c.conflicts))}}, nil
	case outweighs(mine, theirs, ratio):
		a, err = t.replace(ctx, tenant, rec, inherited, ch, ev, c, "superseded by a contradicting fact with clearly more evidence: "+weighed)
		return true, a, err
	}
	a, err = t.contestWith(ctx, tenant, rec, ch, c, "a new observation contradicts this fact with comparable evidence: "+weighed)
	return true, a, err
}
