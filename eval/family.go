package eval

import (
	"context"
	"fmt"
	"sync"
)

// Family is a family of worlds that differ in surface form: how problems
// and their instances are generated and how actions and errors render
// into events. Each runs the same protocol (acquisition with
// consolidation, memory frozen, deployment on held-out instances and
// environments) with the same agents, which know nothing of how the
// world is built. Family (a) is the world of world.go; the others are
// session worlds (session.go) with a [Surface] of their own.
type Family struct {
	// Name is the family's letter (a, b, c).
	Name string
	// Title says what the family's experience looks like.
	Title string
	// Config is the family's world, its seed set per run.
	Config Config
	// Surface and Keys make a session world; a nil Surface is the world
	// of world.go.
	Surface Surface
	Keys    []EnvKey
	// Stream sets the family's session worlds apart from another's of
	// the same seed.
	Stream uint64
}

// SessionConfig is the default world of the session families: 10 kinds
// of error, 200 acquisition sessions of 2–4 errors each (a scheduled
// consolidation pass waited for every 8), drift at the
// half, 40 deployment sessions; three actions per step of a fix, plus
// one to look and one to run the failing command again.
var SessionConfig = Config{Problems: 10, Episodes: 200, Deployment: 40, DriftAt: 100, DriftShare: 0.5, Flaky: 0.1, Budget: 3,
	ConsolidateEvery: 8, Window: 20}

// Families are the families `make eval` runs; family (a)'s Config is
// left to the caller (today's world).
var Families = []Family{
	{Name: "a", Title: "today's world: tool calls with object arguments, one error or request an episode"},
	{Name: "b", Title: "shell-only agent: one bash tool, 20–60 commands a session, several errors, heredoc writes and looks",
		Config: SessionConfig, Surface: Shell{},
		Keys: []EnvKey{{"os", []string{"ubuntu", "macos"}}, {"python", []string{"3.11", "3.12"}}}},
	{Name: "c", Title: "structured tool calls: arguments of several shapes (objects, word arrays, one string), real tools' errors",
		Config: SessionConfig, Surface: Structured{}, Stream: 1,
		Keys: []EnvKey{{"platform", []string{"linux", "darwin"}}, {"toolchain", []string{"v1", "v2"}}}},
}

// FamilyByName is the family of that name.
func FamilyByName(name string) (Family, bool) {
	for _, f := range Families {
		if f.Name == name {
			return f, true
		}
	}
	return Family{}, false
}

// Starter starts an engramd for one agent of a run: role names it
// (engram, raw, recorder), schedule is its consolidation schedule ("off"
// for none).
type Starter func(ctx context.Context, role, schedule string) (*Daemon, error)

// FamilyRun is one seed of a family: each agent's report and, for a
// family whose offline replay metric is measured, its figures.
type FamilyRun struct {
	Family string
	Seed   uint64
	// Reports are engram's, raw episodes', no memory's and, in session
	// worlds, the frequency table's.
	Reports []Report
	Replay  *ReplayMetric
}

// RunOptions are how [Family.Run] runs.
type RunOptions struct {
	// Schedule is the learning engramd's consolidation schedule.
	Schedule string
	// Replay measures the offline replay metric (session worlds only).
	Replay bool
	// Observe, when not nil, sees each agent's outcomes as they happen
	// (agent by its index in FamilyRun.Reports).
	Observe func(agent int) func(Outcome)
}

// Agents are the names of the agents a family runs, in the order of its
// reports.
func (f Family) Agents() []string {
	if f.Surface == nil {
		return []string{engramAgent, rawAgent, noMemoryAgent}
	}
	return []string{engramAgent, rawAgent, noMemoryAgent, tableAgent}
}

// Run runs the family's world of cfg (Config with the seed set) for each
// agent, the learning ones with an engramd of their own, concurrently.
func (f Family) Run(ctx context.Context, cfg Config, start Starter, opt RunOptions) (FamilyRun, error) {
	run := FamilyRun{Family: f.Name, Seed: cfg.Seed}
	observe := func(i int) func(Outcome) {
		if opt.Observe == nil {
			return nil
		}
		return opt.Observe(i)
	}
	n := len(f.Agents())
	reports, errs := make([]Report, n), make([]error, n+1)
	var wg sync.WaitGroup
	learner := func(i int, role, schedule string, body func(d *Daemon) (Report, error)) {
		d, err := start(ctx, role, schedule)
		if err != nil {
			errs[i] = err
			return
		}
		defer func() {
			if err := d.Stop(context.Background()); err != nil && errs[i] == nil {
				errs[i] = err
			}
		}()
		reports[i], errs[i] = body(d)
		if errs[i] == nil && schedule != "off" {
			reports[i].FailedPasses, errs[i] = d.FailedPasses(ctx)
		}
	}
	if f.Surface == nil {
		w := func() *World { return NewWorld(cfg) }
		wg.Go(func() {
			learner(0, "engram", opt.Schedule, func(d *Daemon) (Report, error) {
				return Run(ctx, w(), Engram{Client: d.Client, Seed: cfg.Seed}, d, observe(0))
			})
		})
		wg.Go(func() {
			learner(1, "raw", "off", func(d *Daemon) (Report, error) {
				return Run(ctx, w(), &Replay{Client: d.Client, Seed: cfg.Seed}, d, observe(1))
			})
		})
		wg.Go(func() { reports[2], errs[2] = Run(ctx, w(), NoMemory{Seed: cfg.Seed}, nil, observe(2)) })
	} else {
		w := func() *SessionWorld { return NewSessionWorld(cfg, f) }
		wg.Go(func() {
			learner(0, "engram", opt.Schedule, func(d *Daemon) (Report, error) {
				return RunSessions(ctx, w(), SessionEngram{Client: d.Client, Seed: cfg.Seed}, d, observe(0))
			})
		})
		wg.Go(func() {
			reports[1], errs[1] = RunSessions(ctx, w(), &SessionReplay{Seed: cfg.Seed}, nil, observe(1))
			if errs[1] == nil {
				reports[2], errs[2] = RunSessions(ctx, w(), SessionNoMemory{Seed: cfg.Seed}, nil, observe(2))
			}
			if errs[2] == nil {
				reports[3], errs[3] = RunSessions(ctx, w(), &FrequencyTable{Seed: cfg.Seed}, nil, observe(3))
			}
		})
		if opt.Replay {
			wg.Go(func() {
				d, err := start(ctx, "recorder", opt.Schedule)
				if err != nil {
					errs[n] = err
					return
				}
				defer func() { _ = d.Stop(context.Background()) }() // the replay's figure is measured
				var m ReplayMetric
				if m, errs[n] = MeasureReplay(ctx, w(), d); errs[n] == nil {
					run.Replay = &m
				}
			})
		}
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			who := "replay metric"
			if i < n {
				who = f.Agents()[i]
			}
			return run, fmt.Errorf("family %s, seed %d, %s: %w", f.Name, cfg.Seed, who, err)
		}
	}
	run.Reports = reports
	return run, nil
}
