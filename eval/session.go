package eval

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// EnvKey is an environment key of a session world and its values.
type EnvKey struct {
	Name   string
	Values []string
}

// SessionWorld is a world of the session families (b and c): an agent
// carries out a task of 20–60 commands — looking around, writing files by
// heredoc, building and testing — and meets several errors on the way,
// each a problem of its own that it resolves a few commands later, when
// the command that failed runs again without error. The problems, their
// fixes and the task's commands are generated from the seed; the
// [Surface] decides only how a command and its output look.
//
// As in [World], a problem's fix may depend on an environment key, 10% of
// correct steps fail transiently, the fixes of some problems change at
// Config.DriftAt, and each problem has an environment it meets only in
// deployment, with values (package names, paths) acquisition never used.
type SessionWorld struct {
	Config  Config
	Surface Surface
	// Stream sets families of one seed apart: each draws its own problems
	// and sessions.
	Stream   uint64
	Keys     []EnvKey
	Problems []*SessionProblem
}

// SessionProblem is an error of a session world and how to fix it.
type SessionProblem struct {
	ID int
	// Kind names the kind of error (its tool and how it fails).
	Kind string
	// Key is the environment key the fix depends on ("" for none).
	Key string
	// Slots are the steps of the fix, each the alternatives (canonical
	// commands) an agent may try. Correct picks one per slot for each
	// value of Key before drift, Drifted after.
	Slots            [][]string
	Correct, Drifted map[string][]int
	// HeldOut is the environment the problem meets only in deployment.
	HeldOut map[string]string
	kind    kind
}

// NewSessionWorld generates the family's session world: Config.Problems
// kinds of error (at most as many as there are), each with a fix of its
// own, in the family's surface and environments.
func NewSessionWorld(cfg Config, f Family) *SessionWorld {
	cfg = cfg.withDefaults()
	if cfg.Problems > len(kinds) {
		cfg.Problems = len(kinds)
	}
	w := &SessionWorld{Config: cfg, Surface: f.Surface, Keys: f.Keys, Stream: f.Stream}
	keys := f.Keys
	rng := rand.New(rand.NewPCG(cfg.Seed, 2+w.Stream<<32))
	envs := w.environments()
	nDrift := int(float64(cfg.Problems)*cfg.DriftShare + 0.5)
	off := rng.IntN(len(envs))
	for i, ki := range rng.Perm(len(kinds))[:cfg.Problems] {
		k := kinds[ki]
		p := &SessionProblem{ID: i, Kind: k.name, kind: k, HeldOut: maps.Clone(envs[(i+off)%len(envs)])}
		values := []string{""}
		if ki := k.keys[rng.IntN(len(k.keys))]; ki >= 0 && ki < len(keys) {
			p.Key, values = keys[ki].Name, keys[ki].Values
		}
		for _, alts := range k.steps {
			var slot []string
			for _, j := range rng.Perm(len(alts))[:4] {
				slot = append(slot, alts[j])
			}
			p.Slots = append(p.Slots, slot)
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

// environments lists every environment of the world's keys, in order.
func (w *SessionWorld) environments() []map[string]string {
	out := []map[string]string{{}}
	for _, k := range w.Keys {
		var next []map[string]string
		for _, env := range out {
			for _, v := range k.Values {
				e := maps.Clone(env)
				e[k.Name] = v
				next = append(next, e)
			}
		}
		out = next
	}
	return out
}

// Words a session's task and its commands are made of.
var (
	sessionChores = []string{"add YAML config loading to", "add a health check to", "wire structured logging into",
		"add a CSV export to", "port the retry logic of", "add request tracing to"}
	sessionFiles = []string{"src/config.py", "src/app/__main__.py", "src/export.py", "src/health.py", "tests/test_config.py", "src/retry.py"}
	sessionWords = []string{"TODO", "load_settings", "retry", "timeout", "logger", "FIXME"}
)

// scripted is a command of the task and what it prints when it succeeds.
type scripted struct {
	command string
	stdout  string
	exit    int
	// trouble is the index of the error this command meets, -1 for none.
	trouble int
}

// Trouble is an error met in a session: its problem, the instance's values,
// and how its resolution went.
type Trouble struct {
	Problem *SessionProblem
	Vars    map[string]string
	// Message is the error as the agent reports it; Stderr the tool's
	// output.
	Message, Stderr string
	// Trigger is the call that meets the error, and resolves it when it
	// runs again without error once the fix is done.
	Trigger Call
	// Drifted: the problem's fix had drifted.
	Drifted bool
	// Met: the error happened; Resolved: it was resolved.
	Met, Resolved bool
	// Actions is the number of actions taken since the error.
	Actions int
	// How the agent went about it (see [Attempt]).
	Source                      string
	Retrieved, Followed, Useful bool

	triggerCmd string
	correct    []int
	progress   int
	max        int
}

// Fixed reports whether every step of the fix is done: the trigger now
// runs without error.
func (t *Trouble) Fixed() bool { return t.progress == len(t.correct) }

func (t *Trouble) step(i int) string {
	return bindString(t.Problem.Slots[i][t.correct[i]], t.Vars)
}

// SessionStep is one call of a session and its result.
type SessionStep struct {
	Call   Call
	Output any
	// Error is the message of the error this call met ("" for none).
	Error string
	// Failed, Transient, Advanced: see [Result]. Resolved: the call was
	// the command that had failed, now without error. Look: a read-only
	// command.
	Failed, Transient, Advanced, Resolved, Look bool
}

// SessionResult is what one call did.
type SessionResult struct {
	Output any
	// Error is the message of an error the call met for the first time:
	// a problem to resolve.
	Error                                 string
	Failed, Transient, Advanced, Resolved bool
}

// Session is one run of a session world: a task in an environment, its
// commands, the errors it meets and the calls taken.
type Session struct {
	Index int
	// Deployment: the session belongs to the frozen deployment phase.
	Deployment bool
	Env        map[string]string
	// Request is the task as the user asked it; Intent its label.
	Request, Intent string
	Troubles        []*Trouble
	Steps           []SessionStep

	surface Surface
	script  []scripted
	pos     int
	open    *Trouble
	failed  bool
	flaky   float64
	rng     *rand.Rand
	known   map[string]known
}

// known is a command the session knows the effect of, besides its
// script and its errors' fixes: a look or a write.
type known struct {
	command, stdout string
	exit            int
}

// maxSessionSteps ends a session that runs away.
const maxSessionSteps = 400

// Start opens the i-th session of the run: acquisition sessions draw an
// environment and 2–4 problems not held out in it; deployment ones take
// the environments in turn, each with the problems held out in it (at most
// three) and values acquisition never used.
func (w *SessionWorld) Start(i int) *Session {
	cfg := w.Config
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(1000+i)+w.Stream<<32))
	envs := w.environments()
	s := &Session{Index: i, Deployment: i >= cfg.Episodes, surface: w.Surface, flaky: cfg.Flaky,
		rng: rand.New(rand.NewPCG(cfg.Seed, uint64(1_000_000+i)+w.Stream<<32)), known: map[string]known{}}
	var probs []*SessionProblem
	if !s.Deployment {
		s.Env = maps.Clone(envs[rng.IntN(len(envs))])
		for _, p := range w.Problems {
			if !maps.Equal(p.HeldOut, s.Env) {
				probs = append(probs, p)
			}
		}
		n := min(2+rng.IntN(3), len(probs))
		perm := rng.Perm(len(probs))[:n]
		picked := make([]*SessionProblem, n)
		for j, k := range perm {
			picked[j] = probs[k]
		}
		probs = picked
	} else {
		s.Env = maps.Clone(envs[(i-cfg.Episodes)%len(envs)])
		for _, p := range w.Problems {
			if maps.Equal(p.HeldOut, s.Env) {
				probs = append(probs, p)
			}
		}
		rng.Shuffle(len(probs), func(a, b int) { probs[a], probs[b] = probs[b], probs[a] })
		probs = probs[:min(3, len(probs))]
	}
	svc := services[rng.IntN(len(services))]
	chore := sessionChores[rng.IntN(len(sessionChores))]
	s.Request = fmt.Sprintf("%s the %s service", chore, svc)
	s.Intent = strings.ReplaceAll(strings.Fields(chore)[0]+" "+svc, " ", "_")
	for _, p := range probs {
		key := ""
		if p.Key != "" {
			key = s.Env[p.Key]
		}
		correct := p.Correct[key]
		if cfg.DriftAt > 0 && i >= cfg.DriftAt && p.Drifted[key] != nil {
			correct = p.Drifted[key]
		}
		vars := p.kind.draw(rng, s.Deployment)
		t := &Trouble{Problem: p, Vars: vars, Message: bindString(p.kind.message, vars), Stderr: bindString(p.kind.stderr, vars),
			Drifted: !slices.Equal(correct, p.Correct[key]), triggerCmd: bindString(p.kind.trigger, vars), correct: correct,
			max: int(math.Ceil(cfg.Budget*float64(len(correct)))) + 2}
		if t.Stderr == "" {
			t.Stderr = t.Message
		}
		t.Trigger = w.Surface.Call(t.triggerCmd)
		s.Troubles = append(s.Troubles, t)
	}
	// The task: a segment of looks and writes before each error's
	// command, and one after the last.
	for j := range len(s.Troubles) + 1 {
		for range 3 + rng.IntN(5) {
			s.script = append(s.script, filler(rng, svc))
		}
		if j < len(s.Troubles) {
			s.script = append(s.script, scripted{command: s.Troubles[j].triggerCmd, trouble: j})
		}
	}
	s.lookAt(svc)
	s.script = append(s.script, scripted{command: "git add -A", trouble: -1},
		scripted{command: fmt.Sprintf("git commit -m %q", s.Request), stdout: "[main 3f2a9c1] " + s.Request + "\n 3 files changed", trouble: -1})
	return s
}

// filler is a command of the task around its errors: a look (some of
// which find nothing) or a write.
func filler(rng *rand.Rand, svc string) scripted {
	file := sessionFiles[rng.IntN(len(sessionFiles))]
	switch rng.IntN(9) {
	case 0:
		return scripted{command: "ls", stdout: "Makefile\nREADME.md\nrequirements.txt\nsrc\ntests", trouble: -1}
	case 1:
		return scripted{command: "ls src", stdout: "app\nconfig.py\nexport.py\nhealth.py", trouble: -1}
	case 2:
		return scripted{command: "cat " + file, stdout: "import os\n\n\ndef load_settings(path):\n    return {}\n", trouble: -1}
	case 3:
		return scripted{command: "git status", stdout: "On branch main\nChanges not staged for commit:\n\tmodified:   " + file, trouble: -1}
	case 4:
		return scripted{command: "git diff --stat", stdout: " " + file + " | 12 ++++++++----\n 1 file changed, 8 insertions(+), 4 deletions(-)", trouble: -1}
	case 5, 6:
		word := sessionWords[rng.IntN(len(sessionWords))]
		if rng.IntN(2) == 0 {
			// grep finding nothing: exit 1, no output, not an error.
			return scripted{command: fmt.Sprintf("grep -rn %q src", word), exit: 1, trouble: -1}
		}
		return scripted{command: fmt.Sprintf("grep -rn %q src", word), stdout: fmt.Sprintf("%s:12:    # %s: %s", file, word, svc), trouble: -1}
	case 7:
		return scripted{command: "mkdir -p src/" + svc, trouble: -1}
	}
	body := fmt.Sprintf("import logging\n\nlog = logging.getLogger(%q)\n\n\ndef load_settings(path):\n    with open(path) as f:\n        return f.read()", svc)
	return scripted{command: fmt.Sprintf("cat <<'EOF' > %s\n%s\nEOF", file, body), trouble: -1}
}

// bindString replaces the variables {name} of s by their values.
func bindString(s string, vars map[string]string) string {
	for name, val := range vars {
		s = strings.ReplaceAll(s, "{"+name+"}", val)
	}
	return s
}

// Open is the error being resolved; nil when none is.
func (s *Session) Open() *Trouble { return s.open }

// Next is the task's next call, when no error is open and the session is
// not over.
func (s *Session) Next() (Call, bool) {
	if s.Over() || s.open != nil || s.pos >= len(s.script) {
		return Call{}, false
	}
	return s.surface.Call(s.script[s.pos].command), true
}

// Over reports whether the session has ended: done, or failed because an
// error was not resolved within its budget.
func (s *Session) Over() bool {
	return s.failed || (s.open == nil && s.pos >= len(s.script))
}

// Solved reports whether the task was carried out, every error resolved.
func (s *Session) Solved() bool { return !s.failed && s.open == nil && s.pos >= len(s.script) }

// Drifted reports whether one of the session's errors met a drifted fix.
func (s *Session) Drifted() bool {
	for _, t := range s.Troubles {
		if t.Met && t.Drifted {
			return true
		}
	}
	return false
}

// Candidates are the alternatives of the open error's current fix step,
// bound to the instance: what an agent without memory knows it could try.
func (s *Session) Candidates() []Call {
	t := s.open
	if t == nil || t.Fixed() {
		return nil
	}
	var out []Call
	for _, a := range t.Problem.Slots[t.progress] {
		out = append(out, s.surface.Call(bindString(a, t.Vars)))
	}
	return out
}

// Looks are read-only commands an agent may run to look around an open
// error before acting: a search for one of its values (which may find
// nothing), the working tree's status, a listing.
func (s *Session) Looks() []Call {
	if s.open == nil {
		return nil
	}
	var out []Call
	for _, k := range looks(s.open) {
		out = append(out, s.surface.Call(k.command))
	}
	return out
}

func looks(t *Trouble) []known {
	var out []known
	for _, name := range slices.Sorted(maps.Keys(t.Vars)) {
		out = append(out, known{command: fmt.Sprintf("grep -rn %q src", t.Vars[name]), exit: 1})
		break
	}
	return append(out, known{command: "git status", stdout: "On branch main\nnothing to commit, working tree clean"},
		known{command: "ls", stdout: "Makefile\nREADME.md\nrequirements.txt\nsrc\ntests"},
		known{command: "cat requirements.txt", stdout: "requests>=2.31\nPyYAML>=6.0\n"})
}

// lookAt registers what the session's looks print: those of its errors
// and every look its task's commands may make.
func (s *Session) lookAt(svc string) {
	add := func(k known) { s.known[s.surface.Call(k.command).String()] = k }
	for _, t := range s.Troubles {
		for _, k := range looks(t) {
			add(k)
		}
	}
	for _, f := range sessionFiles {
		add(known{command: "cat " + f, stdout: "import os\n\n\ndef load_settings(path):\n    return {}\n"})
	}
	for _, w := range sessionWords {
		add(known{command: fmt.Sprintf("grep -rn %q src", w), exit: 1})
	}
	add(known{command: "ls src", stdout: "app\nconfig.py\nexport.py\nhealth.py"})
	add(known{command: "git diff --stat", stdout: ""})
	add(known{command: "mkdir -p src/" + svc})
}

// Do runs a call. The task's next command runs (and meets its error, the
// first time); with an error open, the next correct step of its fix
// advances it unless it fails transiently, a step already done succeeds
// again, and the command that failed resolves it once the fix is done; a
// look prints what it sees; anything else fails the way its program
// fails.
func (s *Session) Do(c Call) SessionResult {
	if s.Over() {
		return SessionResult{Failed: true, Output: "error: the session is over"}
	}
	t := s.open
	r := s.exec(c)
	step := SessionStep{Call: c, Output: r.Output, Error: r.Error, Failed: r.Failed, Transient: r.Transient, Advanced: r.Advanced,
		Resolved: r.Resolved}
	if k, ok := s.known[c.String()]; ok && !r.Failed && !strings.Contains(k.command, "<<") {
		step.Look = true
	}
	s.Steps = append(s.Steps, step)
	if t != nil {
		t.Actions++
		if !t.Resolved && t.Actions >= t.max {
			s.failed = true
		}
	}
	if len(s.Steps) >= maxSessionSteps {
		s.failed = true
	}
	return r
}

func (s *Session) exec(c Call) SessionResult {
	out := func(command string, exit int, stdout, stderr string) SessionResult {
		return SessionResult{Output: s.surface.Output(command, exit, stdout, stderr), Failed: exit != 0 && !strings.HasPrefix(command, "grep ")}
	}
	if t := s.open; t != nil {
		if c.Same(t.Trigger) {
			if !t.Fixed() {
				return out(t.triggerCmd, t.Problem.kind.exit, "", t.Stderr)
			}
			t.Resolved, s.open = true, nil
			s.pos++
			r := out(t.triggerCmd, 0, "ok", "")
			r.Resolved = true
			return r
		}
		for i := range t.progress {
			if c.Same(s.surface.Call(t.step(i))) {
				return out(t.step(i), 0, "", "")
			}
		}
		if !t.Fixed() && c.Same(s.surface.Call(t.step(t.progress))) {
			cmd := t.step(t.progress)
			if s.rng.Float64() < s.flaky {
				r := out(cmd, 75, "", transients[s.rng.IntN(len(transients))])
				r.Transient = true
				return r
			}
			t.progress++
			r := out(cmd, 0, "", "")
			r.Advanced = true
			return r
		}
		for _, slot := range t.Problem.Slots {
			for _, a := range slot {
				cmd := bindString(a, t.Vars)
				if c.Same(s.surface.Call(cmd)) {
					if strings.HasPrefix(cmd, "cat <<") {
						return out(cmd, 0, "", "") // a write that does not help
					}
					exit, stderr := failure(cmd)
					return out(cmd, exit, "", stderr)
				}
			}
		}
	} else if s.pos < len(s.script) {
		sc := s.script[s.pos]
		if c.Same(s.surface.Call(sc.command)) {
			if sc.trouble >= 0 && !s.Troubles[sc.trouble].Met {
				t := s.Troubles[sc.trouble]
				t.Met, s.open = true, t
				r := out(sc.command, t.Problem.kind.exit, "", t.Stderr)
				r.Error = t.Message
				return r
			}
			s.pos++
			return out(sc.command, sc.exit, sc.stdout, "")
		}
	}
	if k, ok := s.known[c.String()]; ok {
		return out(k.command, k.exit, k.stdout, "")
	}
	for _, sc := range s.script {
		if c.Same(s.surface.Call(sc.command)) && sc.trouble < 0 {
			return out(sc.command, sc.exit, sc.stdout, "")
		}
	}
	if writes(c) {
		return SessionResult{Output: s.surface.Output("", 0, "", "")}
	}
	b, _ := json.Marshal(c.Args)
	return SessionResult{Failed: true, Output: s.surface.Output("", 1, "", fmt.Sprintf("%s: unknown invocation %s", c.Tool, b))}
}

// writes reports whether a call writes a file: a heredoc or write_file,
// which succeeds whatever it writes.
func writes(c Call) bool {
	if c.Tool == "write_file" {
		return true
	}
	args, _ := c.Args.(map[string]any)
	cmd, _ := args["command"].(string)
	return strings.HasPrefix(cmd, "cat <<")
}
