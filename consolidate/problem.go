package consolidate

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/signature"
	"github.com/engram-dev/engram/store"
)

// MaxRecipeWindow bounds a problem's recipe: the last so many actions
// before the one that resolved it. An agent resolves most errors a few
// commands after it meets them; a window of a whole run is the run, not a
// fix.
const MaxRecipeWindow = 16

// readProblems reads the problems of a closed episode (substrate RFC §8,
// §15A.9): the errors its agent resolved, not the episode as a whole. An
// error opens a problem, known by what failed: the call whose output was
// the error, or, for an error the runtime reported on its own, the call
// it reported it for. The problem is resolved when a later call of the
// same command succeeds (the build that failed passes), and its recipe is
// the actions from the error to that call, the call included. A call that
// fails again with the same error restarts the problem: the steps before
// it did not fix it; one that fails with another error resolved the first
// and opens the next. A call run again at once is a flaky step, no
// problem. An error the runtime reported before any call (the task's
// problem statement) is resolved by the episode's outcome, with every
// action after it — the first-error rule, where nothing better is known.
//
// An episode with neither a statement nor another problem is its task
// (intent label or first input) as a problem, with all its actions.
// Problems left open in a failed episode are failed problems; in a
// successful one, errors never resolved were wrong tries and teach
// nothing here.
func readProblems(ce store.ClosedEpisode, evs []store.EpisodeEvent) []Episode {
	return readEvents(ce, evs).finish(ce.Outcome == "success")
}

// readEvents reads an episode's events into a problem reader, ready to
// finish: its base holds the episode's environment and sensitivity, its
// row's and its events'.
func readEvents(ce store.ClosedEpisode, evs []store.EpisodeEvent) *problemReader {
	r := &problemReader{base: Episode{Tenant: ce.Tenant, ID: ce.ID, Thread: ce.Thread, ClosedAt: ce.ClosedAt,
		Sensitivity: ce.Sensitivity, Scope: ce.Scope, Environment: map[string]any{}}, calls: pairing{}}
	addEnv(r.base.Environment, ce.Environment)
	for _, se := range evs {
		r.base.Sensitivity = r.base.Sensitivity.Max(se.Sensitivity)
		var ev memory.Event
		if json.Unmarshal(se.Event, &ev) != nil {
			continue
		}
		r.event(ev)
	}
	return r
}

// problemReader reads one episode's events into its problems.
type problemReader struct {
	base    Episode
	calls   pairing
	actions []Action
	open    []*openProblem
	out     []Episode
	// statement is the error reported before any call, if any.
	statement         *openProblem
	intent, firstText string
	errors            []noted
}

// noted is an error met at a point of the episode (the number of actions
// taken by then).
type noted struct {
	at  int
	msg string
}

// openProblem is an error not resolved yet.
type openProblem struct {
	msg string
	// ident is the check key of the command that failed ([checkKey]); ""
	// when the error is known by no command.
	ident string
	// start is where its window starts among the actions (restarted by a
	// call that failed the same way again), first where it started first;
	// failedAt is the failed call, -1 for none.
	start, first, failedAt int
}

func (r *problemReader) event(ev memory.Event) {
	addEnv(r.base.Environment, ev.Environment)
	for _, tag := range ev.Tags {
		if label, ok := strings.CutPrefix(tag, "intent:"); ok && r.intent == "" {
			r.intent = strings.ToLower(strings.TrimSpace(label))
		}
	}
	switch ev.Kind {
	case memory.UserInput:
		if r.firstText == "" {
			r.firstText = ev.Text
		}
	case memory.ErrorEvent:
		if ev.Error != nil {
			r.reported(strings.TrimSpace(ev.Error.Message))
		}
	case memory.ToolCall:
		if ev.Tool == nil {
			break
		}
		r.actions = r.calls.call(r.actions, ev.Tool)
		if i := len(r.actions) - 1; len(r.actions[i].Result) > 0 {
			r.result(i)
		}
	case memory.ToolOutput:
		if ev.Tool == nil {
			break
		}
		if i, _ := r.calls.output(r.actions, ev.Tool); i >= 0 {
			r.result(i)
		}
	}
}

// reported takes an error event: the statement of the task's problem when
// no call came before it; else an error of the last call, when that call
// failed or waits for its output — its message, as the runtime put it,
// names the problem — or an error known by no command.
func (r *problemReader) reported(msg string) {
	if msg == "" {
		return
	}
	r.errors = append(r.errors, noted{at: len(r.actions), msg: msg})
	n := len(r.actions)
	if n == 0 {
		if r.statement == nil {
			r.statement = &openProblem{msg: msg, failedAt: -1}
		}
		return
	}
	last := r.actions[n-1]
	for _, p := range r.open {
		if p.failedAt == n-1 {
			p.msg = msg
			return
		}
	}
	ident := ""
	if len(last.Result) == 0 || last.Failed {
		ident = checkKey(last)
	}
	r.open = append(r.open, &openProblem{msg: msg, ident: ident, start: n, first: n, failedAt: -1})
}

// result takes the result of call i: a failure opens (or restarts) a
// problem of its command, a success resolves the problems of its command.
func (r *problemReader) result(i int) {
	a := r.actions[i]
	id := checkKey(a)
	if !a.Failed {
		r.resolve(id, i, i+1)
		return
	}
	msg := strings.TrimSpace(errorText(a.Result))
	if msg == "" {
		return
	}
	r.errors = append(r.errors, noted{at: i + 1, msg: msg})
	sig := signature.Of(msg)
	for _, p := range r.open {
		if p.ident == id && p.ident != "" && signature.Of(p.msg) == sig {
			p.start, p.failedAt = i+1, i // the steps before did not fix it
			return
		}
	}
	// Another error of the same command: the steps before fixed the
	// first, and the call that showed it is the check that they did (its
	// own result is the next problem's, not this one's).
	r.resolve(id, i, i+1)
	r.open = append(r.open, &openProblem{msg: msg, ident: id, start: i + 1, first: i + 1, failedAt: i})
}

// resolve closes the open problems of command id at call i, their
// recipes the actions from their start up to end.
func (r *problemReader) resolve(id string, i, end int) {
	if id == "" {
		return
	}
	r.open = slices.DeleteFunc(r.open, func(p *openProblem) bool {
		if p.ident != id {
			return false
		}
		if i > p.start { // else run again at once: a flaky step
			acts := slices.Clone(r.actions[max(p.start, end-MaxRecipeWindow):end])
			if last := &acts[len(acts)-1]; last.Failed {
				last.Failed, last.Result = false, nil
			}
			r.out = append(r.out, r.problem(p, true, acts))
		}
		return true
	})
}

// problem is an error as a problem, resolved or failed, with its actions.
func (r *problemReader) problem(p *openProblem, success bool, actions []Action) Episode {
	ep := r.base
	ep.Trigger, ep.Success, ep.Ident = p.msg, success, p.ident
	ep.Signature = signature.Of(p.msg)
	ep.Actions = actions
	for _, e := range r.errors {
		if e.at > p.start && e.at <= p.start+len(actions) && e.msg != p.msg {
			ep.Errors = append(ep.Errors, e.msg)
		}
	}
	return ep
}

// finish ends the episode: the problem statement (or the task) resolved
// or failed by the outcome, and what stayed open failed if the episode
// did.
func (r *problemReader) finish(success bool) []Episode {
	if !success {
		for _, p := range r.open {
			// Failed: everything tried since the error is what did not fix it.
			r.out = append(r.out, r.problem(p, false, slices.Clone(r.actions[p.first:])))
		}
	}
	switch {
	case r.statement != nil:
		p := r.statement
		r.out = append(r.out, r.problem(p, success, slices.Clone(r.actions[p.start:])))
	case len(r.out) == 0 && len(r.actions) > 0:
		task := r.base
		task.Success, task.Actions = success, slices.Clone(r.actions)
		switch {
		case r.intent != "":
			task.Signature = "intent:" + r.intent
		case r.firstText != "":
			task.Signature = "task:" + signature.Normalise(r.firstText)
		}
		for _, e := range r.errors {
			task.Errors = append(task.Errors, e.msg)
		}
		if task.Signature != "" {
			r.out = append(r.out, task)
		}
	}
	for i := range r.out {
		r.out[i].Environment = r.base.Environment
		r.out[i].Sensitivity = r.base.Sensitivity
	}
	return r.out
}

// checkKey is what a call checks, the key a problem is known by: for a
// shell call, its command's identity and first operand ([commandKey]);
// for another tool, the call itself (the tool and its arguments). A
// later call with the same key is the check run again: when it works,
// the problem is resolved.
func checkKey(a Action) string {
	if slices.Contains(shellTools, a.Tool) {
		if cmd := commandLine(a.Args); cmd != "" {
			return commandKey(cmd)
		}
	}
	b, _ := json.Marshal(a.Args)
	return a.Tool + " " + string(b)
}

// identity is what a call does, whatever its arguments (the identity of
// a step): for a shell call, its command's ([commandIdentity]); for
// another tool, the tool and the verb its arguments name first (an
// "action", "command" or "subcommand" argument, or the first word of an
// argument list: pkg ["install tokio-28"] is "pkg install").
func identity(a Action) string {
	if slices.Contains(shellTools, a.Tool) {
		if cmd := commandLine(a.Args); cmd != "" {
			return commandIdentity(cmd)
		}
	}
	for _, k := range []string{"action", "command", "subcommand", "cmd", "op", "method", "args", "arguments"} {
		v, ok := a.Args[k]
		if !ok {
			continue
		}
		if verb := firstWord(v); verb != "" {
			return a.Tool + " " + verb
		}
	}
	return a.Tool
}

// firstWord is the first word of a string argument, or of the first
// string of a list, when it is a word (not a path, a flag or a value).
func firstWord(v any) string {
	switch x := v.(type) {
	case string:
		f := strings.Fields(x)
		if len(f) > 0 && isVerb(f[0]) {
			return f[0]
		}
	case []any:
		if len(x) > 0 {
			return firstWord(x[0])
		}
	}
	return ""
}

// isVerb reports whether a word can name what a command does: letters,
// with inner dashes or underscores.
func isVerb(w string) bool {
	if len(w) > 32 || w == "" {
		return false
	}
	for i, r := range w {
		switch {
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		case (r == '-' || r == '_') && i > 0:
		default:
			return false
		}
	}
	return true
}

// commandLine is a shell call's command line: its command argument, or
// its argument list joined.
func commandLine(args map[string]any) string {
	for _, k := range []string{"command", "cmd", "script", "args", "arguments", "input"} {
		switch v := args[k].(type) {
		case string:
			return v
		case []any:
			parts := make([]string, 0, len(v))
			for _, e := range v {
				if s, ok := e.(string); ok {
					parts = append(parts, s)
				}
			}
			return strings.Join(parts, " ")
		}
	}
	return ""
}
