package consolidate

import (
	"context"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/store"
)

// SetFeaturesVersion makes c learn and read episode features as the
// learning code of version v would: as a build whose learning changed.
func SetFeaturesVersion(c *Consolidator, v int) { c.learner = learnerOf(v, c.cfg.Probes) }

// Learned is what a pass from scratch learns of a tenant's window — its
// procedures and its plans, before they are written — reading and keeping
// the episodes' features as a pass does.
func (c *Consolidator) Learned(ctx context.Context, run Run, tenant string) ([]Procedure, []Plan, error) {
	h, err := c.history(ctx, run, tenant, nil)
	if err != nil {
		return nil, nil, err
	}
	for _, ce := range h.closed {
		h.fresh[ce.ID] = true
	}
	return c.learnAll(problemGroups(h), traceGroups(h))
}

// LearnedFromEvents is [Consolidator.Learned] without episode features:
// every episode read from its events, as passes did before features were
// kept, nothing stored.
func (c *Consolidator) LearnedFromEvents(ctx context.Context, tenant string) ([]Procedure, []Plan, error) {
	window, err := store.TenantClosedEpisodes(ctx, c.cfg.DB, tenant, c.cfg.MaxEpisodes, "")
	if err != nil {
		return nil, nil, err
	}
	ids := make([]uuid.UUID, len(window))
	fresh := map[uuid.UUID]bool{}
	for i, w := range window {
		ids[i], fresh[w.ID] = w.ID, true
	}
	evs, err := c.episodeEvents(ctx, tenant, ids)
	if err != nil {
		return nil, nil, err
	}
	byEpisode := map[uuid.UUID][]store.EpisodeEvent{}
	for _, ev := range evs {
		byEpisode[ev.Episode] = append(byEpisode[ev.Episode], ev)
	}
	var problems []Episode
	traces := make([]Trace, len(window))
	for i, w := range window {
		problems = append(problems, readProblems(w.ClosedEpisode, byEpisode[w.ID])...)
		traces[i] = readTrace(w.ClosedEpisode, byEpisode[w.ID])
	}
	return c.learnAll(groupProblems(problems, fresh), groupTraces(traces, fresh))
}

func (c *Consolidator) learnAll(problems [][]Episode, traces [][]Trace) ([]Procedure, []Plan, error) {
	var procs []Procedure
	for _, g := range problems {
		procs = append(procs, c.Learn(g)...)
	}
	var plans []Plan
	for _, g := range traces {
		plans = append(plans, c.LearnPlans(g)...)
	}
	return procs, plans, nil
}

// WithoutFeatures are procs and plans without what features add to their
// episodes (the reduced steps, the graph, the triggers read): what they
// are when learned without features.
func WithoutFeatures(procs []Procedure, plans []Plan) ([]Procedure, []Plan) {
	bare := func(eps []Episode) []Episode {
		if eps == nil {
			return nil
		}
		out := make([]Episode, len(eps))
		for i, ep := range eps {
			ep.reduced, ep.reducedKnown, ep.line = nil, false, nil
			out[i] = ep
		}
		return out
	}
	bareTraces := func(trs []Trace) []Trace {
		if trs == nil {
			return nil
		}
		out := make([]Trace, len(trs))
		for i, tr := range trs {
			tr.graph, tr.inputLine = nil, nil
			out[i] = tr
		}
		return out
	}
	outProcs := make([]Procedure, len(procs))
	for i, p := range procs {
		p.Support, p.Failed, p.Followed = bare(p.Support), bare(p.Failed), bare(p.Followed)
		outProcs[i] = p
	}
	outPlans := make([]Plan, len(plans))
	for i, p := range plans {
		p.Support, p.Failed = bareTraces(p.Support), bareTraces(p.Failed)
		outPlans[i] = p
	}
	return outProcs, outPlans
}
