package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/engram-dev/engram/eval"
)

// DefaultTestDatabaseURL is where a run makes its daemons' schemas when
// neither --database-url nor EVAL_DATABASE_URL nor TEST_DATABASE_URL say:
// the scratch database `make db` creates.
const DefaultTestDatabaseURL = "postgres://postgres@127.0.0.1:5432/engram_test?sslmode=disable"

// worldFlags are the flags that choose a world and its protocol.
type worldFlags struct {
	cfg      eval.Config
	schedule string
	engramd  string
}

func (w *worldFlags) register(fs *flag.FlagSet, def eval.Config) {
	fs.Uint64Var(&w.cfg.Seed, "seed", def.Seed, "seed of the world, its task stream and the agents' exploration")
	fs.IntVar(&w.cfg.Problems, "problems", def.Problems, "number of problems (errors and plan-shaped tasks)")
	fs.IntVar(&w.cfg.Episodes, "episodes", def.Episodes, "episodes of the acquisition stream")
	fs.IntVar(&w.cfg.Deployment, "deployment", def.Deployment, "episodes of the frozen deployment phase (held-out instances); -1 for none")
	fs.IntVar(&w.cfg.DriftAt, "drift", def.DriftAt, "episode from which the drifted problems' fixes change; -1 for no drift (default: the midpoint)")
	fs.Float64Var(&w.cfg.DriftShare, "drift-share", def.DriftShare, "share of problems that drift")
	fs.Float64Var(&w.cfg.Tasks, "tasks", def.Tasks, "share of problems that are plan-shaped tasks; -1 for none")
	fs.Float64Var(&w.cfg.Flaky, "flaky", def.Flaky, "chance that a correct step fails transiently")
	fs.Float64Var(&w.cfg.Budget, "budget", def.Budget, "actions an episode may take per step of its fix (plus one to look around)")
	fs.IntVar(&w.cfg.ConsolidateEvery, "every", def.ConsolidateEvery, "episodes between waits for engramd's scheduled consolidation")
	fs.IntVar(&w.cfg.Window, "window", def.Window, "episodes per point of the learning curve")
	fs.StringVar(&w.schedule, "schedule", "@every 1s", "the consolidate job's schedule in the learning engramd")
	fs.StringVar(&w.engramd, "engramd", "", "engramd binary (default: next to engram-eval, else on PATH)")
}

// newFlags is a command's flag set with the world's flags, their
// defaults def.
func newFlags(command string, stderr io.Writer, def eval.Config) (*flag.FlagSet, *worldFlags) {
	fs := flag.NewFlagSet("engram-eval "+command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	wf := &worldFlags{}
	wf.register(fs, def)
	return fs, wf
}

// parse parses args, which take flags only.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// config is the world's configuration with the midpoint drift default.
func (w *worldFlags) config() eval.Config {
	cfg := w.cfg
	switch {
	case cfg.DriftAt == 0:
		cfg.DriftAt = cfg.Episodes / 2
	case cfg.DriftAt < 0:
		cfg.DriftAt = 0
	}
	return cfg
}

// engramdPath finds the engramd binary: the flag, then next to this
// executable (bin/), then PATH.
func engramdPath(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "engramd")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("engramd")
	if err != nil {
		return "", errors.New("no engramd binary: build it (make build) or pass --engramd")
	}
	return p, nil
}

// DefaultWorld is the world `make eval` runs: 20 problems, 4 environments,
// 10% flaky steps, drift at the midpoint; about 40 acquisition episodes a
// problem, so that each meets its environments often enough to learn, and
// 10 held-out deployment episodes each.
var DefaultWorld = eval.Config{Seed: 1, Problems: 20, Episodes: 800, Deployment: 200, DriftShare: 0.5, Tasks: 0.25,
	Flaky: 0.1, Budget: 2, ConsolidateEvery: 4, Window: 20}

// runEval serves `engram-eval run`: the three agents on one world, each
// learning agent with an engramd of its own, then the report.
func runEval(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs, wf := newFlags("run", stderr, DefaultWorld)
	dbURL := fs.String("database-url", cmp.Or(getenv("EVAL_DATABASE_URL"), getenv("TEST_DATABASE_URL"), DefaultTestDatabaseURL),
		"PostgreSQL database the daemons get schemas in (EVAL_DATABASE_URL, TEST_DATABASE_URL)")
	out := fs.String("out", "docs/eval", "directory the report (report.md), the chart (curve.svg) and its data (curve.json) go to")
	keep := fs.Bool("keep", false, "keep the daemons' schemas (eval_engram_…, eval_raw_…) to look at afterwards")
	verbose := fs.Bool("v", false, "show the daemons' logs")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg := wf.config()
	bin, err := engramdPath(wf.engramd)
	if err != nil {
		return err
	}
	var logs io.Writer
	if *verbose {
		logs = stderr
	}
	world := eval.NewWorld(cfg)
	cfg = world.Config
	fmt.Fprintf(stderr, "engram-eval: %d problems, %d acquisition episodes (drift at %d), %d deployment episodes, seed %d\n",
		cfg.Problems, cfg.Episodes, cfg.DriftAt, max(cfg.Deployment, 0), cfg.Seed)

	// Schemas of this run's own: two runs on one database (make eval while
	// make test runs) must not drop each other's.
	run := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	if *keep {
		fmt.Fprintf(stderr, "engram-eval: keeping schemas eval_engram_%s and eval_raw_%s\n", run, run)
	}
	start := time.Now()
	prog := newProgress(stderr, cfg.Episodes+max(cfg.Deployment, 0), "engram", "raw episodes", "no memory")
	defer prog.stop()
	type result struct {
		rep eval.Report
		err error
	}
	results := make([]result, 3)
	var wg sync.WaitGroup
	learner := func(i int, schedule, schema string, agent func(*eval.Daemon) eval.Agent) {
		d, err := eval.StartDaemon(ctx, eval.DaemonConfig{Bin: bin, DatabaseURL: *dbURL, Schema: schema,
			Consolidate: schedule, Log: logs, Keep: *keep})
		if err != nil {
			results[i].err = err
			return
		}
		defer func() {
			if err := d.Stop(context.Background()); err != nil && results[i].err == nil {
				results[i].err = err
			}
		}()
		results[i].rep, results[i].err = eval.Run(ctx, eval.NewWorld(cfg), agent(d), d, prog.observer(i))
	}
	wg.Go(func() {
		learner(0, wf.schedule, "eval_engram_"+run, func(d *eval.Daemon) eval.Agent { return eval.Engram{Client: d.Client, Seed: cfg.Seed} })
	})
	wg.Go(func() {
		learner(1, "off", "eval_raw_"+run, func(d *eval.Daemon) eval.Agent { return &eval.Replay{Client: d.Client, Seed: cfg.Seed} })
	})
	wg.Go(func() {
		results[2].rep, results[2].err = eval.Run(ctx, eval.NewWorld(cfg), eval.NoMemory{Seed: cfg.Seed}, nil, prog.observer(2))
	})
	wg.Wait()
	prog.stop()
	var reports []eval.Report
	for _, r := range results {
		if r.err != nil {
			return fmt.Errorf("%s: %w", cmp.Or(r.rep.Agent, "agent"), r.err)
		}
		reports = append(reports, r.rep)
	}
	fmt.Fprintf(stderr, "engram-eval: ran in %s\n", time.Since(start).Round(time.Second))
	return writeReport(*out, reports, commandLine(cfg, wf.schedule), time.Now(), stdout)
}
