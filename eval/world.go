// Package eval is a simulated agent world that measures whether agents
// using engram get better with experience (substrate RFC §2, §14; write-path
// RFC §12.12.5: memory correctness impact, measured by ablation).
//
// The world is deterministic for a seed (world.go). It holds problems —
// errors to fix and plan-shaped tasks, each with an intent — whose correct
// steps depend on the environment (os, toolchain version) and take
// per-instance arguments (a path, a package name). Correct steps are flaky
// (a configurable share fail transiently and succeed when tried again);
// each step has decoy alternatives that fail; past a drift point the
// correct steps of some problems change; and each problem has an
// environment it meets only in the frozen deployment phase.
//
// Agents (agent.go) solve instances episode after episode, talking to
// engram only through its public HTTP API (client.go), each learning agent
// to an engramd process of its own (daemon.go) that consolidates on its
// own scheduler. Run (run.go) is the protocol; Measure (metrics.go) its
// figures and the targets; WriteMarkdown and WriteSVG (report.go,
// svg.go) the report. cmd/engram-eval runs it all (make eval, make demo).
package eval

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"strings"
)

// Config is a world and its protocol. Zero fields take the defaults.
type Config struct {
	// Seed makes the world, its task stream, its flaky steps and the
	// agents' exploration reproducible.
	Seed uint64
	// Problems is the number of problems (default 4).
	Problems int
	// Episodes is the length of the acquisition stream (default 40).
	Episodes int
	// Deployment is the number of episodes of the frozen deployment phase
	// after acquisition: held-out instances of the same problems, each in
	// the one environment its problem never met in acquisition (default
	// a quarter of Episodes).
	Deployment int
	// Tasks is the share of problems that are plan-shaped tasks — a
	// request with no error, solved by a longer graph of steps — rather
	// than errors to fix (default 0.25).
	Tasks float64
	// DriftAt is the episode from which the drifted problems' procedures
	// change; 0 means no drift.
	DriftAt int
	// DriftShare is the share of problems that drift (default 0.5).
	DriftShare float64
	// Flaky is the chance that a correct step fails transiently (default
	// 0.1).
	Flaky float64
	// Budget is the number of actions an episode may take for each step
	// of its fix, plus one to look around, before it fails (default 2):
	// room to retry a flaky step or explore.
	Budget float64
	// ConsolidateEvery runs consolidation after every so many episodes
	// (default 4), for the agents that learn.
	ConsolidateEvery int
	// Window is the number of episodes a success rate is measured over
	// (default 10).
	Window int
}

func (c Config) withDefaults() Config {
	if c.Problems == 0 {
		c.Problems = 4
	}
	if c.Episodes == 0 {
		c.Episodes = 40
	}
	if c.Deployment == 0 {
		c.Deployment = c.Episodes / 4
	}
	if c.Tasks == 0 {
		c.Tasks = 0.25
	}
	if c.DriftShare == 0 {
		c.DriftShare = 0.5
	}
	if c.Flaky == 0 {
		c.Flaky = 0.1
	}
	if c.Budget == 0 {
		c.Budget = 2
	}
	if c.ConsolidateEvery == 0 {
		c.ConsolidateEvery = 4
	}
	if c.Window == 0 {
		c.Window = 10
	}
	return c
}

// Action is a tool call: a tool and its arguments, whose string values may
// hold variables ({path}, {package}) until bound to an instance.
type Action struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args"`
}

// Bind replaces the variables {name} in the action's string arguments by
// the values of vars; a variable vars does not name stays as it is.
func (a Action) Bind(vars map[string]string) Action {
	out := Action{Tool: a.Tool, Args: make(map[string]any, len(a.Args))}
	for k, v := range a.Args {
		out.Args[k] = bindDeep(v, vars)
	}
	return out
}

// reVariable is a variable in a templated argument.
var reVariable = regexp.MustCompile(`\{[A-Za-z_][A-Za-z_0-9]*\}`)

// Unbound reports whether the action still holds a variable.
func (a Action) Unbound() bool { return hasVariable(a.Args) }

// Same reports whether two actions are the same call.
func (a Action) Same(b Action) bool { return a.Tool == b.Tool && sameArgs(a.Args, b.Args) }

// hasVariable reports whether arguments still hold a variable.
func hasVariable(args any) bool {
	b, _ := json.Marshal(args)
	return reVariable.Match(b)
}

// sameArgs reports whether two calls' arguments are the same, compared
// through JSON so that []string and []any compare alike.
func sameArgs(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	var u, v any
	_ = json.Unmarshal(x, &u)
	_ = json.Unmarshal(y, &v)
	return reflect.DeepEqual(u, v)
}

// Environments are the values of the environment keys a procedure may
// depend on: 2 × 2 environments.
var Environments = map[string][]string{"os": {"linux", "darwin"}, "toolchain": {"v1", "v2"}}

// Problem is an error met in some task, and how to fix it; or a
// plan-shaped task, a request with no error and a longer solution.
type Problem struct {
	ID int
	// Task: the problem is a request to carry out, not an error.
	Task bool
	// Message is the error, with {path} and {package} where an
	// instance's values go; or a task's request.
	Message string
	// Intent labels the task (an intent: tag, the plan layer's key).
	Intent string
	// Key is the environment key the fix depends on ("" for none).
	Key string
	// Slots are the steps of a fix: each the alternatives an agent may
	// try, of one tool. Correct picks one alternative per slot for each
	// value of Key (before drift) and Drifted after drift.
	Slots   [][]Action
	Correct map[string][]int
	Drifted map[string][]int
	// HeldOut is the environment the problem never meets in
	// acquisition: its deployment instances all have it.
	HeldOut map[string]string
}

// Instance is one occurrence of a problem: an environment and the
// arguments that vary.
type Instance struct {
	Problem *Problem
	Env     map[string]string
	Vars    map[string]string
}

// Message is the instance's error, or its task's request.
func (in Instance) Message() string {
	return Action{Args: map[string]any{"m": in.Problem.Message}}.Bind(in.Vars).Args["m"].(string)
}

// Conditions are the instance's environment as retrieval conditions.
func (in Instance) Conditions() map[string]any {
	out := map[string]any{}
	for k, v := range in.Env {
		out[k] = v
	}
	return out
}

// World is a seeded set of problems.
type World struct {
	Config   Config
	Problems []*Problem
}

// Words the generator builds problems and arguments from.
var (
	programs = []string{"ld", "npm", "pip", "cargo", "docker", "git", "gradle", "terraform"}
	troubles = []string{"cache mismatch", "lockfile conflict", "stale manifest", "checksum failure", "permission denied",
		"corrupt index", "missing symbol", "version skew", "dangling layer", "broken symlink"}
	roots    = []string{"srv", "home/ci", "var/tmp", "opt/work", "tmp"}
	nouns    = []string{"app", "web", "core", "edge", "lab", "kit", "hub", "api"}
	managers = []string{"apt", "brew", "pip", "npm"}
	verbs    = []string{"install", "reinstall", "upgrade"}
	// Each fix names the path once: consolidation gives every varying
	// word a variable of its own ({path}, {path2}), even when two words
	// held the same value, and an agent knows only the one path.
	fixes = []string{"rm -rf {path}/cache", "chmod -R u+w {path}/cache", "touch {path}/.stamp", "git -C {path} clean -fdx",
		"rm -f {path}/index", "truncate -s 0 {path}/lock"}
	builds = []string{"make build", "make clean build", "ninja -C build", "cargo build --release", "gradle assemble", "docker build ."}
	// Plan-shaped tasks: a chore on a service, carried out in stages,
	// each stage with alternatives of its own.
	chores   = []string{"release", "back up", "migrate", "rotate the keys of", "scale out", "rebuild the index of"}
	services = []string{"billing", "search", "auth", "mailer", "ledger", "reports", "gateway", "catalog"}
	stages   = [][]string{
		{"make test", "go test ./...", "npm test", "pytest -q"},
		{"make dist", "docker build -t svc .", "helm package chart", "tar czf dist.tgz build"},
		{"kubectl apply -f deploy.yaml", "helm upgrade svc ./chart", "systemctl restart svc", "terraform apply -auto-approve"},
		{"curl -fsS localhost/healthz", "kubectl rollout status deploy/svc", "svc check --all", "tail -n 50 /var/log/svc.log"},
	}
)

// environments lists every environment, in a fixed order: each
// combination of the values of Environments.
func environments() []map[string]string {
	out := []map[string]string{{}}
	for _, k := range slices.Sorted(maps.Keys(Environments)) {
		var next []map[string]string
		for _, env := range out {
			for _, v := range Environments[k] {
				e := maps.Clone(env)
				e[k] = v
				next = append(next, e)
			}
		}
		out = next
	}
	return out
}

// NewWorld generates the problems of a configuration.
func NewWorld(cfg Config) *World {
	cfg = cfg.withDefaults()
	rng := rand.New(rand.NewPCG(cfg.Seed, 1))
	w := &World{Config: cfg}
	pairs := rng.Perm(len(programs) * len(troubles))
	chorePairs := rng.Perm(len(chores) * len(services))
	nDrift := int(float64(cfg.Problems)*cfg.DriftShare + 0.5)
	nTasks := int(float64(cfg.Problems)*max(cfg.Tasks, 0) + 0.5)
	envs := environments()
	for i := range cfg.Problems {
		p := &Problem{ID: i, Key: []string{"os", "toolchain", ""}[i%3], HeldOut: envs[rng.IntN(len(envs))]}
		if i >= cfg.Problems-nTasks {
			// The last problems are tasks: so that which problems
			// drift (the first ones) mixes both kinds.
			pt := chorePairs[i%len(chorePairs)]
			chore, svc := chores[pt%len(chores)], services[pt/len(chores)]
			p.Task, p.Message = true, fmt.Sprintf("%s the %s service", chore, svc)
			p.Intent = strings.ReplaceAll(chore+" "+svc, " ", "_")
			for _, st := range stages {
				p.Slots = append(p.Slots, shellSlot(rng, st))
			}
		} else {
			pt := pairs[i%len(pairs)]
			prog, trouble := programs[pt%len(programs)], troubles[pt/len(programs)]
			// The error names the instance's path and, quoted, its
			// package: what a procedure's variables are bound from.
			p.Message = fmt.Sprintf("%s: %s in {path}/obj.o (package '{package}')", prog, trouble)
			p.Intent = strings.ReplaceAll("repair "+prog+" "+trouble, " ", "_")
			// A path fix, a package step and a build, each with four
			// alternatives; a two-step fix leaves out the package.
			p.Slots = append(p.Slots, shellSlot(rng, fixes))
			if rng.IntN(2) == 0 {
				p.Slots = append(p.Slots, pkgSlot(rng))
			}
			p.Slots = append(p.Slots, shellSlot(rng, builds))
		}
		values := []string{""}
		if p.Key != "" {
			values = Environments[p.Key]
		}
		sizes := make([]int, len(p.Slots))
		for j, slot := range p.Slots {
			sizes[j] = len(slot)
		}
		p.Correct, p.Drifted = pickFixes(rng, sizes, values, i < nDrift && cfg.DriftAt > 0)
		w.Problems = append(w.Problems, p)
	}
	return w
}

// pickFixes picks, for each value of a problem's key, the alternative of each
// of its slots (sizes: each slot's number of alternatives) that fixes it:
// two values share every step but one, which tells them apart. With
// drift, another slot than that one changes to an alternative no value
// used, so that every value's fix changes.
func pickFixes(rng *rand.Rand, sizes []int, values []string, drift bool) (correct, drifted map[string][]int) {
	correct, drifted = map[string][]int{}, map[string][]int{}
	split := rng.IntN(len(sizes))
	for j, v := range values {
		pick := make([]int, len(sizes))
		pick[split] = j
		correct[v] = pick
	}
	if drift {
		d := (split + 1) % len(sizes)
		for v, pick := range correct {
			np := slices.Clone(pick)
			np[d] = sizes[d] - 1
			drifted[v] = np
		}
	}
	return correct, drifted
}

func shellSlot(rng *rand.Rand, from []string) []Action {
	var out []Action
	for _, i := range rng.Perm(len(from))[:4] {
		out = append(out, Action{Tool: "shell", Args: map[string]any{"command": from[i]}})
	}
	return out
}

func pkgSlot(rng *rand.Rand) []Action {
	var out []Action
	for _, i := range rng.Perm(len(managers) * len(verbs))[:4] {
		out = append(out, Action{Tool: "pkg", Args: map[string]any{
			"manager": managers[i%len(managers)], "action": verbs[i/len(managers)], "package": "{package}"}})
	}
	return out
}

// Instance draws the i-th task of the run: a problem, an environment and
// fresh arguments. Acquisition (i < Config.Episodes) draws the problem at
// random and an environment other than the problem's held-out one;
// deployment takes the problems in turn, each in its held-out
// environment.
func (w *World) Instance(i int) Instance {
	rng := rand.New(rand.NewPCG(w.Config.Seed, uint64(1000+i)))
	var p *Problem
	var env map[string]string
	if i < w.Config.Episodes {
		p = w.Problems[rng.IntN(len(w.Problems))]
		others := slices.DeleteFunc(environments(), func(e map[string]string) bool { return maps.Equal(e, p.HeldOut) })
		env = others[rng.IntN(len(others))]
	} else {
		p = w.Problems[(i-w.Config.Episodes)%len(w.Problems)]
		env = maps.Clone(p.HeldOut)
	}
	tag := fmt.Sprintf("%04x%02x", rng.IntN(1<<16), i%256)
	return Instance{Problem: p, Env: env, Vars: map[string]string{
		"path":    fmt.Sprintf("/%s/%s-%s", roots[rng.IntN(len(roots))], nouns[rng.IntN(len(nouns))], tag),
		"package": fmt.Sprintf("lib%s-%s", nouns[rng.IntN(len(nouns))], tag),
	}}
}

// Result is what one action did.
type Result struct {
	// Output is the tool's result as the agent sees it.
	Output any
	// Advanced says the action was the next correct step; Failed that it
	// reported an error; Transient that the error goes away when the
	// action is tried again.
	Advanced, Failed, Transient bool
}

// Step is one action of an episode and its result.
type Step struct {
	Action Action
	Result Result
}

// Episode is one instance being solved: the world's state and the steps
// taken.
type Episode struct {
	Index    int
	Instance Instance
	// Drifted: the problem's fix has drifted.
	Drifted  bool
	Steps    []Step
	correct  []int
	progress int
	max      int
	flaky    float64
	rng      *rand.Rand
}

// Start opens the i-th episode of the run (acquisition, then deployment).
// The flaky draws depend on the seed and i only, so every agent meets the
// same world.
func (w *World) Start(i int) *Episode {
	in := w.Instance(i)
	p := in.Problem
	key := ""
	if p.Key != "" {
		key = in.Env[p.Key]
	}
	correct := p.Correct[key]
	if w.Config.DriftAt > 0 && i >= w.Config.DriftAt && p.Drifted[key] != nil {
		correct = p.Drifted[key]
	}
	return &Episode{Index: i, Instance: in, Drifted: !slices.Equal(correct, p.Correct[key]), correct: correct,
		max: int(math.Ceil(w.Config.Budget*float64(len(correct)))) + 1, flaky: w.Config.Flaky,
		rng: rand.New(rand.NewPCG(w.Config.Seed, uint64(1_000_000+i)))}
}

// Solved reports whether every step of the fix is done.
func (e *Episode) Solved() bool { return e.progress == len(e.correct) }

// Over reports whether the episode has ended: solved or out of steps.
func (e *Episode) Over() bool { return e.Solved() || len(e.Steps) >= e.max }

// Slot is the index of the step the fix is at.
func (e *Episode) Slot() int { return e.progress }

// Slots is the number of steps of the fix.
func (e *Episode) Slots() int { return len(e.correct) }

// Candidates are the alternatives of the current step, bound to the
// instance: what an agent without memory knows it could try.
func (e *Episode) Candidates() []Action {
	if e.Solved() {
		return nil
	}
	var out []Action
	for _, a := range e.Instance.Problem.Slots[e.progress] {
		out = append(out, a.Bind(e.Instance.Vars))
	}
	return out
}

// Do runs an action. The next correct step advances the fix unless it
// fails transiently; a read-only look (ls) lists the directory; anything
// else fails.
func (e *Episode) Do(a Action) Result {
	var r Result
	switch {
	case e.Over():
		return Result{Failed: true, Output: "error: the episode is over"}
	case a.Same(e.Instance.Problem.Slots[e.progress][e.correct[e.progress]].Bind(e.Instance.Vars)):
		if e.rng.Float64() < e.flaky {
			r = Result{Failed: true, Transient: true, Output: map[string]any{"exit_code": 75, "stderr": "error: connection reset (transient), try again"}}
		} else {
			e.progress++
			r = Result{Advanced: true, Output: map[string]any{"exit_code": 0}}
		}
	case a.Tool == "shell" && strings.HasPrefix(fmt.Sprint(a.Args["command"]), "ls "):
		r = Result{Output: "3 entries"}
	default:
		r = Result{Failed: true, Output: map[string]any{"exit_code": 1, "stderr": "error: that did not help"}}
	}
	e.Steps = append(e.Steps, Step{Action: a, Result: r})
	return r
}
