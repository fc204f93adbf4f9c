package revise

import (
	"context"
	"math"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
)

// evidence is what the evidence gate learned of a write's evidence.
type evidence struct {
	// Mean and Best are the mean and the highest authority of its sources
	// (the unstated authority when it cites none).
	Mean, Best float64
	// Verified is the factual score V_fact (write-path RFC §12.2.3) as the
	// write path computes it without a verifier model: the noisy-or of
	// its distinct sources' authorities ([Gates.factEvidence]), so that
	// another source, however weak, never lowers it — the mean does.
	Verified float64
	// Records are the records it cites as evidence (kind record).
	Records []uuid.UUID
}

// external source kinds: evidence from outside memory and the agent
// (§12.11.4's diversity rule).
var external = []string{"human", "tool_call", "outcome", "artifact", "event", "observation"}

// checkEvidence is the evidence gate (write-path RFC §12.2.3, without a
// language model): each source kind has an authority; facts and procedures
// whose evidence is only the writing agent's own reasoning are refused
// (§12.11.3); with the diversity rule on, facts, procedures and plans need
// one source from outside memory and the agent (§12.11.4); a cited record
// must be one of the tenant's. A record cited already by admitted — the
// sources of the version a revision replaces, checked when they were
// cited — stays admitted after decay has forgotten it (substrate RFC §11:
// deletion does not imply ignorance): a procedure keeps citing the
// episodes it was learned from long after they are purged, and a use
// observed later must not be refused for it.
func (t *Tx) checkEvidence(ctx context.Context, tenant string, rec memory.Record, admitted ...memory.Source) (evidence, error) {
	g := t.w.cfg.Gates
	srcs := rec.Provenance.Sources
	ev := t.w.evidenceOf(rec)
	for _, s := range srcs {
		if s.Kind == SourceRecord {
			id, err := uuid.Parse(strings.TrimPrefix(s.Ref, "record://"))
			if err != nil || !strings.HasPrefix(s.Ref, "record://") {
				return ev, reject(GateEvidence, ReasonUnknownEvidence, nil, "evidence %q of kind record must be record://<id>", s.Ref)
			}
			ev.Records = append(ev.Records, id)
		}
	}
	durable := rec.Type == memory.Semantic || rec.Type == memory.Competence || rec.Type == memory.PlanGraph
	if (rec.Type == memory.Semantic || rec.Type == memory.Competence) && len(srcs) > 0 &&
		!slices.ContainsFunc(srcs, func(s memory.Source) bool { return s.Kind != SourceReasoning }) {
		return ev, reject(GateEvidence, ReasonSelfEvidence, nil,
			"%s needs evidence beyond the writing agent's own reasoning (write-path RFC §12.11.3)", rec.Type.ARecord())
	}
	if durable && g.Evidence.RequireExternal &&
		!slices.ContainsFunc(srcs, func(s memory.Source) bool { return slices.Contains(external, s.Kind) }) {
		return ev, reject(GateEvidence, ReasonNoExternal, nil,
			"%s needs one source from outside memory (%s): the evidence-diversity rule is on", rec.Type.ARecord(), strings.Join(external, ", "))
	}
	if len(ev.Records) > 0 {
		found, err := t.existingIDs(ctx, tenant, ev.Records)
		if err != nil {
			return ev, err
		}
		for _, id := range ev.Records {
			if !slices.Contains(found, id) && !slices.ContainsFunc(admitted, func(s memory.Source) bool {
				return s.Kind == SourceRecord && s.Ref == "record://"+id.String()
			}) {
				return ev, reject(GateEvidence, ReasonUnknownEvidence, []uuid.UUID{id}, "the evidence cites record %s, which is not one of the tenant's", id)
			}
		}
	}
	return ev, nil
}

// evidenceOf is what rec's sources are worth by the authority table: their
// mean and best authority and the factual score (the unstated authority
// when it cites none). It reads nothing: [Tx.checkEvidence] checks the
// sources too.
func (w *Writer) evidenceOf(rec memory.Record) evidence {
	g := w.cfg.Gates
	srcs := rec.Provenance.Sources
	ev := evidence{Mean: *g.Evidence.Unstated, Best: *g.Evidence.Unstated}
	if len(srcs) > 0 {
		sum, best := 0.0, 0.0
		for _, s := range srcs {
			a := g.Evidence.Authority[s.Kind]
			sum += a
			best = max(best, a)
		}
		ev.Mean, ev.Best = sum/float64(len(srcs)), best
	}
	ev.Verified, _ = g.factEvidence(srcs)
	return ev
}

// adjusted is a write's adjusted confidence (§12.4.4): its stated
// confidence, the verification score (the noisy-or of its evidence's
// authorities, [evidence.Verified]: no model verifies the claim), the best
// evidence's authority and human approval, weighted. Adding evidence never
// lowers it.
func (w *Writer) adjusted(confidence float64, ev evidence, approved bool) float64 {
	b := w.cfg.Gates.Evidence.Weights
	c := b.Agent*confidence + b.Verified*ev.Verified + b.Authority*ev.Best
	if approved {
		c += b.Approved
	}
	return min(1, max(0, c))
}

// MaxEvidenceConfidence caps the confidence evidence alone gives a fact:
// no count of observations makes it certain.
const MaxEvidenceConfidence = 0.99

// factEvidence is what a fact's evidence is worth (substrate RFC §7:
// "confidence follows evidence count and source authority"): each
// distinct source (kind and ref; the same source cited twice counts once)
// is an independent chance a of the fact being true, a its kind's
// authority, so together they give the noisy-or
//
//	confidence = min(1 − ∏(1 − aᵢ), [MaxEvidenceConfidence])
//
// monotone — another source never lowers it — and capped. A fact that
// cites no source stands on the writer's word, one source of the unstated
// authority. weight is the same quantity on an additive scale,
// −ln(1 − confidence) = Σ −ln(1 − aᵢ) up to the cap: n sources of one
// authority weigh n times one, so that weights compare by ratio ("3
// observations against 1" is a ratio of 3). The contradiction policy
// evidence and the resolution of contests weigh facts by it.
func (g Gates) factEvidence(srcs []memory.Source) (confidence, weight float64) {
	doubt := 1.0
	seen := map[memory.Source]bool{}
	for _, s := range srcs {
		k := memory.Source{Kind: s.Kind, Ref: s.Ref}
		if seen[k] {
			continue
		}
		seen[k] = true
		doubt *= 1 - min(1, max(0, g.Evidence.Authority[s.Kind]))
	}
	if len(seen) == 0 {
		doubt = 1 - *g.Evidence.Unstated
	}
	confidence = min(1-doubt, MaxEvidenceConfidence)
	return confidence, -math.Log(1 - confidence)
}
