package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/engram-dev/engram/eval"
	"github.com/engram-dev/engram/memory"
)

// DefaultDatabaseURL is the database `make run` uses, which the demo
// shares: what it learns stays there in a schema of its own
// ([DefaultDemoSchema]), under a tenant of its own.
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/engram?sslmode=disable"

// DefaultDemoSchema is the demo's schema. Its own schema gives the demo's
// engramd job leadership of its own (leadership is held per database and
// schema): sharing make run's, the demo waited for make run's daemon to
// consolidate every 30 s while its own one-second schedule never ran.
const DefaultDemoSchema = "engram_demo"

// DemoWorld is the short world of `make demo`: six problems, a minute or
// so of episodes, no drift, no deployment phase.
var DemoWorld = eval.Config{Seed: 1, Problems: 6, Episodes: 72, Deployment: -1, DriftAt: -1, DriftShare: 0.5, Tasks: 0.34,
	Flaky: 0.1, Budget: 2, ConsolidateEvery: 3, Window: 12}

// runDemo serves `engram-eval demo`: engramd started as `make run` starts
// it, the engram agent working through a short world with its learning
// curve drawn as it goes, then one learned procedure and one plan graph.
func runDemo(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs, wf := newFlags("demo", stderr, DemoWorld)
	dbURL := fs.String("database-url", cmp.Or(getenv("DATABASE_URL"), DefaultDatabaseURL), "PostgreSQL database (DATABASE_URL), as make run uses")
	listen := fs.String("listen", "", "engramd's listen address (default: a free local port)")
	schema := fs.String("schema", DefaultDemoSchema, "the schema of the database the demo keeps its memory in, apart from make run's")
	stay := fs.Bool("stay", isTerminal(os.Stdin), "keep engramd running at the end, until Ctrl-C (default: when run from a terminal)")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg := wf.config()
	bin, err := engramdPath(wf.engramd)
	if err != nil {
		return err
	}
	tenant := "demo-" + time.Now().UTC().Format("20060102-150405")
	fmt.Fprintf(stdout, "Starting engramd (consolidation %s) for tenant %s, in schema %s of the database:\n"+
		"a schema of its own, so a make run up on the same database changes nothing…\n", wf.schedule, tenant, *schema)
	d, err := eval.StartDaemon(ctx, eval.DaemonConfig{Bin: bin, DatabaseURL: *dbURL, Schema: *schema, Keep: true, Reuse: true,
		Consolidate: wf.schedule, Tenant: tenant, Listen: *listen})
	if err != nil {
		return err
	}
	defer func() { _ = d.Stop(context.Background()) }() // the demo has printed what it learned

	world := eval.NewWorld(cfg)
	cfg = world.Config
	fmt.Fprintf(stdout, "An agent meets %d problems (%d episodes, %d%% of correct steps flaky); it asks engram before acting,\n"+
		"streams what it does, and engram consolidates on its schedule. Success rate per %d episodes:\n\n",
		cfg.Problems, cfg.Episodes, int(cfg.Flaky*100+0.5), cfg.Window)
	none, err := eval.Run(ctx, world, eval.NoMemory{Seed: cfg.Seed}, nil, nil)
	if err != nil {
		return err
	}
	live := &liveCurve{w: stdout, terminal: isTerminal(stdout), window: cfg.Window, total: cfg.Episodes}
	rep, err := eval.Run(ctx, eval.NewWorld(cfg), eval.Engram{Client: d.Client, Seed: cfg.Seed, AgentID: "demo-agent"}, d, live.observe)
	if err != nil {
		return err
	}
	live.finish()
	fmt.Fprintf(stdout, "\n  engram     %s  %.2f overall, %.2f in the last window\n", eval.Sparkline(rep.Curve()),
		rep.SuccessRate(0, cfg.Episodes), rep.SuccessRate(cfg.Episodes-cfg.Window, cfg.Episodes))
	fmt.Fprintf(stdout, "  no memory  %s  %.2f overall, %.2f in the last window\n\n", eval.Sparkline(none.Curve()),
		none.SuccessRate(0, cfg.Episodes), none.SuccessRate(cfg.Episodes-cfg.Window, cfg.Episodes))

	if err := showLearned(ctx, d, stdout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Look further with the engram CLI (make build puts it in bin/):\n\n"+
		"  export ENGRAM_URL=%s ENGRAM_API_KEY=%s\n"+
		"  bin/engram procedures                    every learned procedure, its trigger and success rate\n"+
		"  bin/engram records list --type plan_graph\n"+
		"  bin/engram records get ID                a record; records history ID, records audit ID\n"+
		"  bin/engram recall \"%[3]s\" --signal \"%[3]s\"   what engram answers an agent meeting this error\n\n",
		d.Client.BaseURL, d.Client.Key, shellQuote(firstError(world)))
	if !*stay {
		fmt.Fprintf(stdout, "This engramd stops with the demo; its memory stays in schema %s. To serve it again for those\n"+
			"commands (in another shell; the demo's --stay keeps it up instead):\n\n"+
			"  DATABASE_URL='%s' ENGRAM_LISTEN=%s ENGRAM_API_KEYS='%s:%s' %s run\n\n",
			*schema, printableURL(d.URL), strings.TrimPrefix(d.Client.BaseURL, "http://"), tenant, d.Client.Key, binForShell(bin))
		if printableURL(d.URL) != d.URL {
			fmt.Fprintf(stdout, "(with your database password in place of xxxxx)\n\n")
		}
		return nil
	}
	fmt.Fprintf(stdout, "engramd keeps running for that; Ctrl-C stops it. (Its memory stays in schema %s, under tenant %s.)\n", *schema, tenant)
	d.Wait(ctx)
	return nil
}

// printableURL is a database URL as a command may show it: its password,
// if it has one, masked (the reader puts theirs back).
func printableURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); !ok {
		return s
	}
	return u.Redacted()
}

// binForShell is the engramd binary as a command names it: relative to
// the working directory when it is below it (bin/engramd).
func binForShell(bin string) string {
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, bin); err == nil && !strings.HasPrefix(rel, "..") {
			if !strings.Contains(rel, "/") {
				rel = "./" + rel
			}
			return rel
		}
	}
	return bin
}

// firstError is the error of the first episode of the stream that meets
// one.
func firstError(w *eval.World) string {
	for i := range w.Config.Episodes {
		if in := w.Instance(i); !in.Problem.Task {
			return in.Message()
		}
	}
	return ""
}

// liveCurve draws the learning curve as it grows: a progress bar, the
// sparkline of the windows so far and the current window's rate.
type liveCurve struct {
	w             io.Writer
	terminal      bool
	window, total int
	done, ok      int
	curve         []float64
}

func (l *liveCurve) observe(o eval.Outcome) {
	l.done++
	if o.Success {
		l.ok++
	}
	if l.done%l.window == 0 {
		l.curve = append(l.curve, float64(l.ok)/float64(l.window))
		l.ok = 0
	} else if !l.terminal {
		return // a log, not a screen: a line a window
	}
	line := fmt.Sprintf("  %s  %s", eval.ProgressBar(l.done, l.total, 24), eval.Sparkline(l.curve))
	if l.terminal {
		fmt.Fprintf(l.w, "\r\033[K%s", line)
	} else {
		fmt.Fprintln(l.w, line)
	}
}

func (l *liveCurve) finish() {
	if l.terminal {
		fmt.Fprintln(l.w)
	}
}

// showLearned prints the learned procedure with the most successes and
// the plan graph with the most nodes, in readable form.
func showLearned(ctx context.Context, d *eval.Daemon, w io.Writer) error {
	procs, err := d.Client.Records(ctx, url.Values{"type": {string(memory.Competence)}})
	if err != nil {
		return err
	}
	plans, err := d.Client.Records(ctx, url.Values{"type": {string(memory.PlanGraph)}})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "engram learned %s and %s.\n\n", count(len(procs), "procedure"), count(len(plans), "plan graph"))
	if p, ok := best(procs, func(r memory.Record) int {
		var c memory.CompetencePayload
		if json.Unmarshal(r.Payload, &c) != nil || c.Performance == nil {
			return 0
		}
		return c.Performance.Successes
	}); ok {
		if err := printProcedure(w, p); err != nil {
			return err
		}
	}
	if p, ok := best(plans, func(r memory.Record) int {
		var g memory.PlanGraphPayload
		if json.Unmarshal(r.Payload, &g) != nil {
			return 0
		}
		return len(g.Nodes)
	}); ok {
		if err := printPlan(w, p); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(w, "No plan graph yet: a plan needs two successful episodes of one intent with the same steps;\n"+
			"a longer run (--episodes) learns more.\n\n")
	}
	return nil
}

// count is n things, the thing in the plural unless n is 1.
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

func best(recs []memory.Record, score func(memory.Record) int) (memory.Record, bool) {
	if len(recs) == 0 {
		return memory.Record{}, false
	}
	return slices.MaxFunc(recs, func(a, b memory.Record) int { return score(a) - score(b) }), true
}

func printProcedure(w io.Writer, r memory.Record) error {
	var p memory.CompetencePayload
	if err := json.Unmarshal(r.Payload, &p); err != nil {
		return fmt.Errorf("decode procedure %s: %w", r.ID, err)
	}
	fmt.Fprintf(w, "A learned procedure: %s (record %s, confidence %.2f)\n", p.SkillName, r.ID, r.Confidence)
	for _, t := range p.Triggers {
		fmt.Fprintf(w, "  when      %s", t.Signal)
		if len(t.Conditions) > 0 {
			fmt.Fprintf(w, "   [%s]", conditions(t.Conditions))
		}
		fmt.Fprintln(w)
	}
	for i, s := range p.Recipe {
		fmt.Fprintf(w, "  step %d    %s", i+1, s.Step)
		if s.Validation != "" {
			fmt.Fprintf(w, "   (check: %s)", s.Validation)
		}
		fmt.Fprintln(w)
	}
	if perf := p.Performance; perf != nil {
		fmt.Fprintf(w, "  record    %d successes, %d failures, from %d episodes\n", perf.Successes, perf.Failures, len(r.Provenance.Sources))
	}
	fmt.Fprintln(w)
	return nil
}

func printPlan(w io.Writer, r memory.Record) error {
	var p memory.PlanGraphPayload
	if err := json.Unmarshal(r.Payload, &p); err != nil {
		return fmt.Errorf("decode plan %s: %w", r.ID, err)
	}
	fmt.Fprintf(w, "A plan graph: %s, version %s (record %s)\n", cmp.Or(p.Intent, p.PlanID), p.Version, r.ID)
	for _, n := range p.Nodes {
		tool, _, _ := strings.Cut(n.Op, " ")
		fmt.Fprintf(w, "  %-4s %s", n.ID, tool)
		for _, k := range slices.Sorted(maps.Keys(n.Params)) {
			if k == "command" {
				fmt.Fprintf(w, " %v", n.Params[k])
			} else {
				fmt.Fprintf(w, " %s=%v", k, n.Params[k])
			}
		}
		fmt.Fprintln(w)
	}
	var edges []string
	for _, e := range p.Edges {
		edges = append(edges, fmt.Sprintf("%s→%s (%s)", e.From, e.To, e.Kind))
	}
	if len(edges) > 0 {
		fmt.Fprintf(w, "  edges %s\n", strings.Join(edges, ", "))
	}
	fmt.Fprintln(w)
	return nil
}

func conditions(c memory.Conditions) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c)) {
		parts = append(parts, fmt.Sprintf("%s=%v", k, c[k]))
	}
	return strings.Join(parts, ", ")
}

// shellQuote makes s safe inside double quotes in a shell.
func shellQuote(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`").Replace(s)
}
