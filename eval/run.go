package eval

import (
	"context"
	"fmt"
	"strings"
)

// Memory is the engram a run's agent learns in, as the protocol uses it
// between episodes; [*Daemon] is one.
type Memory interface {
	// Settle returns once the thread's episode is memory (its events
	// classified, its episode closed).
	Settle(ctx context.Context, thread string) error
	// Learn returns once consolidation, on its own schedule, has run over
	// the episodes settled so far (at once for a memory that does not
	// consolidate).
	Learn(ctx context.Context) error
	// Freeze pauses consolidation for the deployment phase.
	Freeze(ctx context.Context) error
	// Counts are the active records by type.
	Counts(ctx context.Context) (map[string]int, error)
}

// Phases of the protocol.
const (
	// Acquisition is the stream an agent learns from: consolidation runs,
	// and past Config.DriftAt some problems' fixes change.
	Acquisition = "acquisition"
	// Deployment is the frozen phase after it: held-out instances of the
	// same problems (new arguments, an environment the problem never met
	// in acquisition), consolidation paused.
	Deployment = "deployment"
)

// Outcome is one episode as an agent lived it.
type Outcome struct {
	// Episode is the episode's index in the whole run: acquisition
	// episodes first, then deployment's.
	Episode int
	Problem int
	Phase   string
	// Drifted: the problem's fix had drifted when the episode ran.
	Drifted bool
	Success bool
	// Steps is the number of actions taken.
	Steps int
	// Source is what the agent followed (FromCompetence, …).
	Source string
	// Retrieved: the agent asked engram before acting. Followed: it
	// followed a record it retrieved; Useful: that record worked (the
	// agent reported used_success).
	Retrieved, Followed, Useful bool
}

// Report is an agent's run: acquisition, then deployment.
type Report struct {
	Agent    string
	Config   Config
	Outcomes []Outcome
	// Records counts the active records of the agent's tenant by type at
	// the end of acquisition (empty for an agent without memory).
	Records map[string]int
	// Errors are, in a session world, the outcome of each error met, in
	// order: Success is that it was resolved, Steps the actions it took.
	Errors []Outcome `json:",omitempty"`
	// FailedPasses is the number of consolidation passes of the agent's
	// memory that failed (read from engramd's /metrics after the run).
	FailedPasses int
}

// Run runs an agent over the world: the acquisition stream, letting
// memory consolidate after every Config.ConsolidateEvery episodes, then
// memory frozen and the deployment episodes. mem is nil for an agent
// without memory. observe, when not nil, sees each outcome as it happens.
func Run(ctx context.Context, w *World, agent Agent, mem Memory, observe func(Outcome)) (Report, error) {
	return protocol(ctx, w.Config, agent.Name(), mem, observe, func(ctx context.Context, i int, phase string) (episode, error) {
		ep := w.Start(i)
		at, err := agent.Solve(ctx, ep)
		return episode{thread: at.Thread, outcome: Outcome{Episode: i, Problem: ep.Instance.Problem.ID, Phase: phase,
			Drifted: ep.Drifted, Success: ep.Solved(), Steps: len(ep.Steps), Source: at.Source, Retrieved: at.Retrieved,
			Followed: at.Followed, Useful: at.Useful}}, err
	})
}

// RunSessions is [Run] for a session world: the same protocol, with the
// outcome of each error met besides each session's (Report.Errors).
func RunSessions(ctx context.Context, w *SessionWorld, agent SessionAgent, mem Memory, observe func(Outcome)) (Report, error) {
	return protocol(ctx, w.Config, agent.Name(), mem, observe, func(ctx context.Context, i int, phase string) (episode, error) {
		s := w.Start(i)
		at, err := agent.Solve(ctx, s)
		e := episode{thread: at.Thread, outcome: Outcome{Episode: i, Problem: s.Troubles[0].Problem.ID, Phase: phase,
			Drifted: s.Drifted(), Success: s.Solved(), Steps: len(s.Steps), Source: at.Source, Retrieved: at.Retrieved,
			Followed: at.Followed, Useful: at.Useful}}
		for _, t := range s.Troubles {
			if t.Met {
				e.errors = append(e.errors, Outcome{Episode: i, Problem: t.Problem.ID, Phase: phase, Drifted: t.Drifted,
					Success: t.Resolved, Steps: t.Actions, Source: t.Source, Retrieved: t.Retrieved, Followed: t.Followed, Useful: t.Useful})
			}
		}
		return e, err
	})
}

// episode is what the protocol keeps of one episode.
type episode struct {
	outcome Outcome
	errors  []Outcome
	thread  string
}

// protocol runs the episodes of cfg: acquisition, letting memory
// consolidate after every Config.ConsolidateEvery episodes, then memory
// frozen and deployment.
func protocol(ctx context.Context, cfg Config, agent string, mem Memory, observe func(Outcome),
	solve func(ctx context.Context, i int, phase string) (episode, error)) (Report, error) {
	rep := Report{Agent: agent, Config: cfg}
	for i := range cfg.Episodes + max(cfg.Deployment, 0) {
		phase := Acquisition
		if i >= cfg.Episodes {
			phase = Deployment
		}
		if i == cfg.Episodes && mem != nil {
			counts, err := mem.Counts(ctx)
			if err != nil {
				return rep, fmt.Errorf("count records: %w", err)
			}
			rep.Records = counts
			if err := mem.Freeze(ctx); err != nil {
				return rep, fmt.Errorf("freeze memory: %w", err)
			}
		}
		e, err := solve(ctx, i, phase)
		if err != nil {
			return rep, fmt.Errorf("episode %d: %w", i, err)
		}
		rep.Outcomes = append(rep.Outcomes, e.outcome)
		rep.Errors = append(rep.Errors, e.errors...)
		if observe != nil {
			observe(e.outcome)
		}
		if mem == nil || e.thread == "" {
			continue
		}
		if err := mem.Settle(ctx, e.thread); err != nil {
			return rep, fmt.Errorf("settle episode %d: %w", i, err)
		}
		if phase == Acquisition && (i+1)%cfg.ConsolidateEvery == 0 {
			if err := mem.Learn(ctx); err != nil {
				return rep, fmt.Errorf("consolidate after episode %d: %w", i, err)
			}
		}
	}
	return rep, nil
}

// SuccessRate is the share of successful episodes among [from, to).
func (r Report) SuccessRate(from, to int) float64 {
	n, ok := 0, 0
	for _, o := range r.window(from, to) {
		n++
		if o.Success {
			ok++
		}
	}
	if n == 0 {
		return 0
	}
	return float64(ok) / float64(n)
}

// StepsPerSuccess is the mean number of actions of the successful
// episodes among [from, to).
func (r Report) StepsPerSuccess(from, to int) float64 {
	n, steps := 0, 0
	for _, o := range r.window(from, to) {
		if o.Success {
			n++
			steps += o.Steps
		}
	}
	if n == 0 {
		return 0
	}
	return float64(steps) / float64(n)
}

// Sources counts the episodes among [from, to) by what the agent followed.
func (r Report) Sources(from, to int) map[string]int {
	out := map[string]int{}
	for _, o := range r.window(from, to) {
		out[o.Source]++
	}
	return out
}

func (r Report) window(from, to int) []Outcome {
	from, to = max(from, 0), min(to, len(r.Outcomes))
	if from >= to {
		return nil
	}
	return r.Outcomes[from:to]
}

// Curve is the success rate per window of Config.Window episodes.
func (r Report) Curve() []float64 {
	var out []float64
	for from := 0; from < len(r.Outcomes); from += r.Config.Window {
		out = append(out, r.SuccessRate(from, from+r.Config.Window))
	}
	return out
}

// String is the report in one line: the curve, and success and steps per
// success before and after drift and in deployment.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-12s curve", r.Agent)
	for _, v := range r.Curve() {
		fmt.Fprintf(&b, " %.2f", v)
	}
	n, d := min(r.Config.Episodes, len(r.Outcomes)), r.Config.DriftAt
	if d <= 0 || d > n {
		d = n
	}
	fmt.Fprintf(&b, " | before drift %.2f (%.1f steps)", r.SuccessRate(0, d), r.StepsPerSuccess(0, d))
	if d < n {
		fmt.Fprintf(&b, " | after drift %.2f (%.1f steps)", r.SuccessRate(d, n), r.StepsPerSuccess(d, n))
	}
	if len(r.Outcomes) > n {
		fmt.Fprintf(&b, " | deployment %.2f (%.1f steps)", r.SuccessRate(n, len(r.Outcomes)), r.StepsPerSuccess(n, len(r.Outcomes)))
	}
	fmt.Fprintf(&b, " | sources %v", r.Sources(0, len(r.Outcomes)))
	return b.String()
}
