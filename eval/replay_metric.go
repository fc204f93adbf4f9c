package eval

import (
	"context"
	"fmt"

	"github.com/engram-dev/engram/api"
)

// ReplayMetric is the offline replay metric on recorded sessions: an
// exploring agent's acquisition sessions are streamed into an engramd that
// consolidates; its held-out (deployment) sessions are not. After each
// held-out error it resolved, is the agent's next successful command —
// the call that advanced the fix — the first step of what each memory
// offers first (hit@1) or among the first three offers (hit@3)?
//
//   - engram: the competence items whose signature matches, bound from
//     why.bindings (as [SessionEngram] follows them);
//   - raw episodes: the fix's first call after the most similar past
//     errors (shared words), values substituted;
//   - frequency table: the most frequent first calls of the error's
//     template (quoted strings, paths, words with digits masked).
type ReplayMetric struct {
	// Errors is the number of held-out errors scored.
	Errors int
	// Hits are each memory's, by agent name.
	Engram, Raw, Table Hits
}

// Hits counts the errors whose next command was offered first (At1) or
// among the first three (At3).
type Hits struct{ At1, At3 int }

// Rates are the hits as shares of n errors.
func (h Hits) Rates(n int) (at1, at3 float64) {
	return ratio(h.At1, n), ratio(h.At3, n)
}

// MeasureReplay records the world's sessions with an exploring agent and
// scores the three memories on its held-out errors; d is an engramd that
// consolidates.
func MeasureReplay(ctx context.Context, w *SessionWorld, d *Daemon) (ReplayMetric, error) {
	cfg := w.Config
	explorer := SessionNoMemory{Seed: cfg.Seed, Client: d.Client, AgentID: "eval-recorder"}
	var journal []pastError
	table := &FrequencyTable{}
	for i := range cfg.Episodes {
		s := w.Start(i)
		at, err := explorer.Solve(ctx, s)
		if err != nil {
			return ReplayMetric{}, fmt.Errorf("record session %d: %w", i, err)
		}
		journal = append(journal, pastErrors(s)...)
		table.learn(s)
		if err := d.Settle(ctx, at.Thread); err != nil {
			return ReplayMetric{}, err
		}
		if (i+1)%cfg.ConsolidateEvery == 0 {
			if err := d.Learn(ctx); err != nil {
				return ReplayMetric{}, err
			}
		}
	}
	if err := d.Learn(ctx); err != nil {
		return ReplayMetric{}, err
	}
	if err := d.Freeze(ctx); err != nil {
		return ReplayMetric{}, err
	}
	var m ReplayMetric
	held := SessionNoMemory{Seed: cfg.Seed}
	for i := cfg.Episodes; i < cfg.Episodes+max(cfg.Deployment, 0); i++ {
		s := w.Start(i)
		if _, err := held.Solve(ctx, s); err != nil {
			return m, err
		}
		for _, e := range resolvedErrors(s) {
			m.Errors++
			res, err := d.Client.Retrieve(ctx, api.RetrieveRequest{Task: api.Task{Text: e.message, Signals: []string{e.message},
				Conditions: envConditions(s.Env)}})
			if err != nil {
				return m, err
			}
			_, plans := offered(res)
			m.Engram.add(firstCalls(plans), e.next)
			var raw [][]Call
			for _, j := range similarTop(journal, e.message, 3) {
				if p := journal[j]; len(p.fix) > 0 {
					raw = append(raw, substituteCalls(p.fix[:1], valuePairs(p.message, e.message)))
				}
			}
			m.Raw.add(firstCalls(raw), e.next)
			m.Table.add(firstCalls(table.top(e.message, 3)), e.next)
		}
	}
	return m, nil
}

// heldError is an error of a held-out session and the call that advanced
// its fix first.
type heldError struct {
	message string
	next    Call
}

// resolvedErrors are the errors of a session that were resolved, each with
// the first call that advanced its fix.
func resolvedErrors(s *Session) []heldError {
	var out []heldError
	var cur *heldError
	for _, st := range s.Steps {
		switch {
		case st.Error != "":
			cur = &heldError{message: st.Error}
		case cur != nil && st.Advanced && cur.next.Tool == "":
			cur.next = st.Call
		case cur != nil && st.Resolved:
			if cur.next.Tool != "" {
				out = append(out, *cur)
			}
			cur = nil
		}
	}
	return out
}

func firstCalls(plans [][]Call) []Call {
	var out []Call
	for _, p := range plans {
		if len(p) > 0 && !containsCall(out, p[0]) {
			out = append(out, p[0])
		}
	}
	return out
}

func (h *Hits) add(offers []Call, next Call) {
	for i, c := range offers[:min(3, len(offers))] {
		if c.Same(next) {
			if i == 0 {
				h.At1++
			}
			h.At3++
			return
		}
	}
}
