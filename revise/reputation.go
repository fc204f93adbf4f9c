package revise

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// ReputationConfig configures agent reputation (write-path RFC §12.11.5).
type ReputationConfig struct {
	// Off stops judging agents (their counts are kept).
	Off bool `yaml:"off"`
	// Threshold is θ_rep: an agent whose reputation is below it has every
	// write of facts, procedures and plans sent to review. 0.5 by default.
	Threshold *float64 `yaml:"threshold"`
	// MinWrites is how many writes an agent makes before it is judged:
	// 10 by default.
	MinWrites int `yaml:"min_writes"`
}

func (c ReputationConfig) withDefaults() ReputationConfig {
	if c.Threshold == nil {
		t := 0.5
		c.Threshold = &t
	}
	if c.MinWrites == 0 {
		c.MinWrites = 10
	}
	return c
}

func (c ReputationConfig) validate() error {
	if t := *c.Threshold; t < 0 || t > 1 {
		return &GatesError{Field: "reputation.threshold", Problem: "must be in [0, 1]"}
	}
	if c.MinWrites < 1 {
		return &GatesError{Field: "reputation.min_writes", Problem: "must be at least 1"}
	}
	return nil
}

// Score is an agent's reputation (§12.11.5: the share of its writes that
// were correct), estimated without a ground truth from what the write path
// and feedback saw: the share of its writes the gates accepted, times the
// share that did not contradict live facts, times the share of feedback on
// its records that was not a failure. judged is false below MinWrites.
func (c ReputationConfig) Score(r store.Reputation) (score float64, judged bool) {
	c = c.withDefaults()
	if r.Writes == 0 {
		return 1, false
	}
	acceptance := float64(r.Accepted) / float64(r.Writes)
	consistency := 1 - min(1, float64(r.Contradictions)/float64(r.Writes))
	served := 1.0
	if n := r.Successes + r.Failures; n > 0 {
		served = 1 - float64(r.Failures)/float64(n)
	}
	return acceptance * consistency * served, r.Writes >= int64(c.MinWrites)
}

// governed reports whether a record's layer is one the reputation and
// approval gates govern.
func governed(t memory.Type) bool {
	return t == memory.Semantic || t == memory.Competence || t == memory.PlanGraph
}

// lowReputation reports why an agent's writes go to review, or "" when
// they need not.
func (t *Tx) lowReputation(ctx context.Context, tenant string, rec memory.Record) (string, error) {
	c := t.w.cfg.Gates.Reputation
	if c.Off || rec.AgentID == "" || !governed(rec.Type) {
		return "", nil
	}
	r, err := t.storedReputation(ctx, tenant, rec.AgentID)
	if err != nil {
		return "", err
	}
	r = r.Plus(t.reputation[agentKey{tenant, rec.AgentID}]) // what this transaction counted so far
	score, judged := c.Score(r)
	if !judged || score >= *c.Threshold {
		return "", nil
	}
	return fmt.Sprintf("agent %s has a reputation of %.2f, below %.2f: its writes are reviewed", rec.AgentID, score, *c.Threshold), nil
}

// note counts a write of rec for its agent's reputation, on db at once.
func (w *Writer) note(ctx context.Context, db pg.DBTX, tenant string, rec memory.Record, d store.ReputationDelta) error {
	if rec.AgentID == "" || !governed(rec.Type) {
		return nil
	}
	d.Writes = 1
	return store.AddReputation(ctx, db, tenant, rec.AgentID, d, w.clock())
}

// agentKey is an agent of a tenant.
type agentKey struct{ tenant, agent string }

// noteLater counts a write of rec for its agent's reputation when the
// transaction commits. Adding to an agent's counts locks its row until
// the commit, so written write by write, one batch of an agent's facts
// held every other writer of that agent's facts (the ingest worker's
// other partitions) for the whole batch (issue 13); written last, in
// agent order, the row is held only for the commit. The reputation gate
// of the same transaction sees the counts already noted
// ([Tx.lowReputation]).
func (t *Tx) noteLater(tenant string, rec memory.Record, d store.ReputationDelta) {
	d.Writes = 1
	t.countLater(tenant, rec, d)
}

// countLater adds d to the counts of rec's agent when the transaction
// commits, as [Tx.noteLater] does, without counting a write: how memory
// the agent wrote served later.
func (t *Tx) countLater(tenant string, rec memory.Record, d store.ReputationDelta) {
	if rec.AgentID == "" || !governed(rec.Type) {
		return
	}
	if t.reputation == nil {
		t.reputation = map[agentKey]store.ReputationDelta{}
	}
	k := agentKey{tenant, rec.AgentID}
	t.reputation[k] = t.reputation[k].Plus(d)
}

// mergeReputation adds the counts a savepoint's transaction noted to t's.
func (t *Tx) mergeReputation(inner *Tx) {
	for c, n := range inner.charges {
		if t.charges == nil {
			t.charges = map[charge]int{}
		}
		t.charges[c] += n
	}
	for k, d := range inner.reputation {
		if t.reputation == nil {
			t.reputation = map[agentKey]store.ReputationDelta{}
		}
		t.reputation[k] = t.reputation[k].Plus(d)
	}
}

// writeReputation writes the counts noted, in tenant and agent order, so
// that two transactions counting for the same agents take their rows in
// the same order.
func (t *Tx) writeReputation(ctx context.Context) error {
	keys := slices.SortedFunc(maps.Keys(t.reputation), func(a, b agentKey) int {
		return cmp.Or(strings.Compare(a.tenant, b.tenant), strings.Compare(a.agent, b.agent))
	})
	for _, k := range keys {
		if err := store.AddReputation(ctx, t.tx, k.tenant, k.agent, t.reputation[k], t.w.clock()); err != nil {
			return err
		}
	}
	t.reputation = nil
	return nil
}

// Reputation is an agent's standing as the write path judges it.
type Reputation struct {
	store.Reputation
	Score float64 `json:"score"`
	// Judged: the agent has written enough to be judged; Reviewed: its
	// writes of facts, procedures and plans go to review.
	Judged   bool `json:"judged"`
	Reviewed bool `json:"reviewed"`
}

// Reputations returns the tenant's agents' standing.
func (w *Writer) Reputations(ctx context.Context, tenant string) ([]Reputation, error) {
	rows, err := store.ListReputation(ctx, w.db, tenant)
	if err != nil {
		return nil, err
	}
	c := w.cfg.Gates.Reputation
	out := make([]Reputation, len(rows))
	for i, r := range rows {
		score, judged := c.Score(r)
		out[i] = Reputation{Reputation: r, Score: score, Judged: judged, Reviewed: !c.Off && judged && score < *c.Threshold}
	}
	return out, nil
}
