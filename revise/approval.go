package revise

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// TierAuto is the tier of writes approved without review (write-path RFC
// §12.6.2); [TierAsync] and [TierSync] are reviewed.
const TierAuto Tier = "auto"

// Risk is a write's risk score R(w) (§12.6.2), its factors in [0, 1] and
// the tier it maps to.
type Risk struct {
	Score   float64            `json:"score"`
	Tier    Tier               `json:"tier"`
	Factors map[string]float64 `json:"factors"`
}

func (r *Risk) score() float64 {
	if r == nil {
		return 0
	}
	return r.Score
}

// layerRisk is each layer's risk factor: procedures highest, facts and
// plans high, episodes low (§12.6.2).
var layerRisk = map[memory.Type]float64{
	memory.Competence: 1, memory.PlanGraph: 0.9, memory.Semantic: 0.8, memory.Episodic: 0.3, memory.Working: 0,
}

// blastWindow is how far back the blast radius counts the agents that
// retrieved from the tenant; blastAgents of them is the widest radius.
const (
	blastWindow = 7 * 24 * time.Hour
	blastAgents = 10
)

// risk computes R(w) for a write the other gates admitted.
func (t *Tx) risk(ctx context.Context, tenant string, rec memory.Record, ev evidence, c contradiction) (*Risk, error) {
	g := t.w.cfg.Gates.Approval
	readers, err := store.RecentReaders(ctx, t.tx, tenant, t.w.clock().Add(-blastWindow))
	if err != nil {
		return nil, err
	}
	f := map[string]float64{
		"layer":        layerRisk[rec.Type],
		"evidence":     1 - ev.Mean,
		"confidence":   1 - t.w.adjusted(rec.Confidence, ev, false),
		"blast_radius": min(1, float64(readers)/blastAgents),
		"novelty":      1,
	}
	if len(c.conflicts) > 0 {
		f["contradiction"] = 1
	} else {
		f["contradiction"] = 0
	}
	if c.related {
		f["novelty"] = 0
	}
	w := g.Weights
	score := w.Layer*f["layer"] + w.Contradiction*f["contradiction"] + w.Evidence*f["evidence"] +
		w.Confidence*f["confidence"] + w.BlastRadius*f["blast_radius"] + w.Novelty*f["novelty"]
	tier := TierAuto
	switch {
	case score >= *g.Block:
		tier = TierSync
	case score >= *g.Review:
		tier = TierAsync
	}
	return &Risk{Score: score, Tier: tier, Factors: f}, nil
}

// queue submits rec for review (§12.6.4): a draft, out of retrieval until a
// reviewer approves it, with a review carrying the risk, the reasons and,
// for a contradiction, the proposal to supersede the fact it contradicts.
// A sync-tier write is held as sync only where its caller can wait (a
// write of its own, [Writer.Admit]); inside a larger transaction it is
// reviewed asynchronously.
func (t *Tx) queue(ctx context.Context, tenant string, rec memory.Record, ch Change, a Admission, proposal []uuid.UUID) (Admission, error) {
	tier := TierAsync
	if a.Risk != nil && a.Risk.Tier == TierSync && t.canWait {
		tier = TierSync
	}
	req := ReviewRequest{Tier: tier, Risk: a.Risk.score(), Reasons: a.Reasons, SLA: t.w.cfg.Gates.Reviews.SLAFor(tier)}
	if a.Risk != nil {
		req.Factors = a.Risk.Factors
	}
	if len(proposal) > 0 {
		req.Proposal = &Proposal{Supersedes: proposal[0]}
	}
	draft, rv, err := t.SubmitForReview(ctx, tenant, rec, ch, req)
	if err != nil {
		return Admission{}, err
	}
	a.Record, a.Outcome, a.Review = draft, Queued, &rv
	return a, nil
}
