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
	"strings"
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

// runEval serves `engram-eval run`: each family of worlds over its seeds,
// the agents of each run concurrently, each learning agent with an
// engramd of its own; then the family table and the report.
func runEval(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs, wf := newFlags("run", stderr, DefaultWorld)
	dbURL := fs.String("database-url", cmp.Or(getenv("EVAL_DATABASE_URL"), getenv("TEST_DATABASE_URL"), DefaultTestDatabaseURL),
		"PostgreSQL database the daemons get schemas in (EVAL_DATABASE_URL, TEST_DATABASE_URL)")
	out := fs.String("out", "docs/eval", "directory the report (report.md), the chart (curve.svg) and its data (curve.json) go to")
	keep := fs.Bool("keep", false, "keep the daemons' schemas (eval_engram_…, eval_raw_…) to look at afterwards")
	verbose := fs.Bool("v", false, "show the daemons' logs")
	families := fs.String("family", "a,b,c", "families of worlds to run, comma-separated: a (today's world), b (shell-only), c (structured calls)")
	seeds := fs.Int("seeds", DefaultSeeds, "seeds per family: --seed, --seed+1, …")
	sessions := fs.Int("sessions", eval.SessionConfig.Episodes, "acquisition sessions of families b and c")
	heldOut := fs.Int("held-out", eval.SessionConfig.Deployment, "deployment sessions of families b and c")
	replay := fs.Bool("replay", true, "measure the offline replay metric on family b (one more engramd a seed)")
	parallel := fs.Int("parallel", 2, "runs (a family's seed) at once: their waits for engramd's scheduled passes overlap")
	if err := parse(fs, args); err != nil {
		return err
	}
	var fams []eval.Family
	for name := range strings.SplitSeq(*families, ",") {
		f, ok := eval.FamilyByName(strings.TrimSpace(name))
		if !ok {
			return fmt.Errorf("unknown family %q (a, b or c)", name)
		}
		fams = append(fams, f)
	}
	if *seeds < 1 {
		return errors.New("--seeds must be 1 or more")
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
	// Schemas of this run's own: two runs on one database (make eval while
	// make test runs) must not drop each other's.
	run := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	if *keep {
		fmt.Fprintf(stderr, "engram-eval: keeping schemas eval_*_%s\n", run)
	}
	start := time.Now()
	type job struct {
		f  eval.Family
		fc eval.Config
	}
	var jobs []job
	for _, f := range fams {
		for k := range *seeds {
			fc := eval.NewWorld(cfg).Config
			if f.Surface != nil {
				fc = f.Config
				fc.Episodes, fc.Deployment, fc.DriftAt, fc.Flaky = *sessions, *heldOut, *sessions/2, cfg.Flaky
			}
			fc.Seed = cfg.Seed + uint64(k)
			jobs = append(jobs, job{f, fc})
		}
	}
	runs, errs := make([]eval.FamilyRun, len(jobs)), make([]error, len(jobs))
	sem := make(chan struct{}, max(*parallel, 1))
	var wg sync.WaitGroup
	for i, j := range jobs {
		f, fc := j.f, j.fc
		sem <- struct{}{}
		fmt.Fprintf(stderr, "engram-eval: family (%s), seed %d: %d problems, %d acquisition episodes (drift at %d), %d deployment episodes\n",
			f.Name, fc.Seed, fc.Problems, fc.Episodes, fc.DriftAt, max(fc.Deployment, 0))
		wg.Go(func() {
			defer func() { <-sem }()
			starter := func(ctx context.Context, role, schedule string) (*eval.Daemon, error) {
				return eval.StartDaemon(ctx, eval.DaemonConfig{Bin: bin, DatabaseURL: *dbURL, Consolidate: schedule, Log: logs, Keep: *keep,
					Schema: fmt.Sprintf("eval_%s_%s%d_%s", role, f.Name, fc.Seed, run)})
			}
			prog := newProgress(stderr, fc.Episodes+max(fc.Deployment, 0), f.Agents()...)
			prog.label = fmt.Sprintf("(%s) seed %d: ", f.Name, fc.Seed)
			runs[i], errs[i] = f.Run(ctx, fc, starter, eval.RunOptions{Schedule: wf.schedule, Replay: *replay && f.Name == "b",
				Observe: prog.observer})
			prog.stop()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "engram-eval: ran in %s\n", time.Since(start).Round(time.Second))
	return writeReport(*out, runs, commandLine(cfg, wf.schedule, *families, *seeds, *sessions, *heldOut), time.Now(), stdout)
}

// DefaultSeeds is the number of seeds `make eval` runs per family.
const DefaultSeeds = 5
