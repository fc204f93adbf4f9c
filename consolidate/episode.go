package consolidate

import (
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/signature"
	"github.com/engram-dev/engram/store"
)

// Episode is what consolidation reads of a closed episode: the problem
// that opened it, what the agent did about it, where, and how it ended.
type Episode struct {
	Tenant string
	ID     uuid.UUID
	// Thread is the episode's thread: one task, what support counts.
	Thread      string
	ClosedAt    time.Time
	Sensitivity memory.Sensitivity
	Scope       string
	// Success: the outcome that closed it was success.
	Success bool
	// Environment is the episode's environment with the scalar keys its
	// events reported, the first report of a key winning.
	Environment map[string]any
	// Trigger is the message of the error that opened the problem; empty
	// when no error did. Signature is its [Signature]; failing an error,
	// the intent label ("intent:<tag>") or the normalised first user input.
	Trigger   string
	Signature string
	// Ident is the check key of the command whose failure the trigger is
	// ([checkKey]; "" when it is known by none): the call that, run again,
	// tells whether the problem is fixed.
	Ident string
	// Template is the learned error template the trigger is an occurrence
	// of (the signature then), when it has wildcards; nil otherwise.
	Template signature.Template
	// Actions are the tool calls after the trigger (all of them, when
	// there is no error), with their results.
	Actions []Action
	// Errors are the messages of the errors after the trigger.
	Errors []string
	// reduced are the indexes among Actions of [Episode.tried]'s steps
	// under the pass's probes, when reducedKnown (features.go).
	reduced      []int
	reducedKnown bool
	// line is its trigger as templates read it, when its features read it.
	line *signature.Line
}

// tried are the steps a problem's actions reduce to when it failed: its
// own command run again to check the fix is a step of what was tried
// even though it failed (it is how the failure showed), so that a failed
// attempt that followed a procedure reduces to that procedure's steps.
func (ep Episode) tried(probes []string) []Action {
	return pick(ep.Actions, ep.triedSteps(probes))
}

// triedSteps is [Episode.tried] as indexes among its actions.
func (ep Episode) triedSteps(probes []string) []int {
	acts := ep.Actions
	if !ep.Success && ep.Ident != "" {
		acts = slices.Clone(acts)
		for i := range acts {
			if acts[i].Failed && checkKey(acts[i]) == ep.Ident {
				acts[i].Failed = false
			}
		}
	}
	return reduction(acts, probes)
}

// steps are what [Episode.tried] returns under probes: as the episode's
// features learned it, when they did (a consolidator reads only the
// features learned under its own probes), else computed.
func (ep Episode) steps(probes []string) []Action {
	if ep.reducedKnown {
		return pick(ep.Actions, ep.reduced)
	}
	return ep.tried(probes)
}

// values are the values of the problem's trigger a step may use.
func (ep Episode) values() []triggerValue { return triggerValues(ep.Trigger, ep.Template, ep.line) }

// The trigger against templates, read once with the episode's features
// when they were learned, else read now: the same answers (package
// signature's Line).

// mine adds its trigger to a miner of templates.
func (ep Episode) mine(m *signature.Miner) {
	if ep.line != nil {
		m.AddLine(*ep.line)
		return
	}
	m.Add(ep.Trigger)
}

// templateIn is the template of m its trigger is an occurrence of
// ([signature.Miner.Template]).
func (ep Episode) templateIn(m *signature.Miner) (signature.Template, bool) {
	if ep.line != nil {
		return m.TemplateOf(*ep.line)
	}
	return m.Template(ep.Trigger)
}

// occurs reports whether its trigger is an occurrence of tpl.
func (ep Episode) occurs(tpl signature.Template) bool {
	if ep.line != nil {
		return ep.line.Matches(tpl)
	}
	return matches(tpl, ep.Trigger)
}

// wildcardValues are its trigger's values at tpl's wildcards
// ([signature.Template.WildcardValues]).
func (ep Episode) wildcardValues(tpl signature.Template) []string {
	if ep.line != nil {
		return tpl.WildcardValuesOf(*ep.line)
	}
	return tpl.WildcardValues(ep.Trigger)
}

// fix is tpl specialised to its trigger's words where keep refuses a
// wildcard ([signature.Template.Fix]).
func (ep Episode) fix(tpl signature.Template, keep func(k int) bool) (signature.Template, map[int]int, bool) {
	if ep.line != nil {
		return tpl.FixLine(*ep.line, keep)
	}
	return tpl.Fix(ep.Trigger, keep)
}

// Action is one tool call and what it returned.
type Action struct {
	Tool string
	// Args are the call's arguments as an object: an array or a scalar is
	// {"args": …}.
	Args map[string]any
	// Wrapped: the call's arguments were a list or a scalar, which Args
	// holds as {"args": …}; a recipe gives them back as they were.
	Wrapped bool
	Result  json.RawMessage
	// Failed: its output looked like an error.
	Failed bool
}

// reErrorText recognises a tool output that reports an error.
var reErrorText = regexp.MustCompile(`(?im)^\s*(error|fatal|panic|traceback|exception)\b|\berror(\[\w+\])?:|\bfatal:|\bERR!|^\S*ld: |\b\w+(Error|Exception):`)

// readEpisode builds an [Episode] from its closed row and its events in
// timeline order.
func readEpisode(ce store.ClosedEpisode, evs []store.EpisodeEvent) Episode {
	ep := Episode{Tenant: ce.Tenant, ID: ce.ID, ClosedAt: ce.ClosedAt, Sensitivity: ce.Sensitivity, Scope: ce.Scope,
		Success: ce.Outcome == "success", Environment: map[string]any{}}
	addEnv(ep.Environment, ce.Environment)
	calls := pairing{}
	var firstInput, intent string
	// Failed calls before any opening error: whether one opened the
	// problem is known only once the episode has shown whether it was
	// fixed (see opens).
	var failures []failedCall
	for _, se := range evs {
		ep.Sensitivity = ep.Sensitivity.Max(se.Sensitivity)
		var ev memory.Event
		if json.Unmarshal(se.Event, &ev) != nil {
			continue
		}
		addEnv(ep.Environment, ev.Environment)
		for _, tag := range ev.Tags {
			if label, ok := strings.CutPrefix(tag, "intent:"); ok && intent == "" {
				intent = label
			}
		}
		switch ev.Kind {
		case memory.UserInput:
			if firstInput == "" {
				firstInput = ev.Text
			}
		case memory.ErrorEvent:
			if ev.Error != nil && ep.noteError(ev.Error.Message) {
				failures = nil // before the problem, like the actions
			}
			if len(ep.Actions) == 0 {
				clear(calls)
			}
		case memory.ToolCall:
			if ev.Tool != nil {
				ep.Actions = calls.call(ep.Actions, ev.Tool)
			}
		case memory.ToolOutput:
			if ev.Tool == nil {
				continue
			}
			i, failed := calls.output(ep.Actions, ev.Tool)
			switch {
			case !failed:
			case ep.Trigger == "" && i >= 0:
				failures = append(failures, failedCall{at: i, upto: len(ep.Actions), msg: errorText(ev.Tool.Result)})
			default:
				ep.noteError(errorText(ev.Tool.Result))
				if len(ep.Actions) == 0 {
					// The opening error cleared the actions before it:
					// the calls still waiting are not part of the fix
					// either.
					clear(calls)
				}
			}
		}
	}
	ep.judge(failures, intent != "")
	switch {
	case ep.Trigger != "":
		ep.Signature = signature.Of(ep.Trigger)
	case intent != "":
		ep.Signature = "intent:" + strings.ToLower(strings.TrimSpace(intent))
	case firstInput != "":
		ep.Signature = "task:" + signature.Normalise(firstInput)
	}
	return ep
}

// pairing pairs tool outputs with the calls they answer: by call id, or,
// for an output without one, with the latest call of the same tool still
// waiting. It maps a call id to the call's index in the actions.
type pairing map[string]int

// call appends the action of a tool call.
func (p pairing) call(actions []Action, t *memory.EventTool) []Action {
	if t.CallID != "" {
		p[t.CallID] = len(actions)
	}
	args, wrapped := argsOf(t.Arguments)
	a := Action{Tool: t.Name, Args: args, Wrapped: wrapped, Result: t.Result}
	a.Failed = len(a.Result) > 0 && failed(a, a.Result)
	return append(actions, a)
}

// output records a tool output on the call it answers, if any is among
// actions, and returns that call's index (-1 for none) and whether the
// output is an error.
func (p pairing) output(actions []Action, t *memory.EventTool) (int, bool) {
	i := p.target(actions, t)
	if i < 0 {
		return i, looksLikeError(t.Result)
	}
	actions[i].Result, actions[i].Failed = t.Result, failed(actions[i], t.Result)
	return i, actions[i].Failed
}

// target is the index among actions of the call a tool output answers, or
// -1 when none does.
func (p pairing) target(actions []Action, t *memory.EventTool) int {
	i, ok := p[t.CallID]
	if ok && t.CallID != "" && i < len(actions) {
		return i
	}
	for j := len(actions) - 1; j >= 0; j-- {
		if actions[j].Tool == t.Name && len(actions[j].Result) == 0 {
			return j
		}
	}
	return -1
}

// noteError records an error: the first opens the problem, and the actions
// taken before it are not part of the fix. It reports whether msg opened
// the problem.
func (ep *Episode) noteError(msg string) bool {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		return false
	}
	if ep.Trigger == "" {
		ep.Trigger = msg
		ep.Actions = nil
		return true
	}
	ep.Errors = append(ep.Errors, msg)
	return false
}

// failedCall is a call whose output was an error, before the problem
// was known: its index among the actions, the number of actions when the
// error came (the ones a problem it opened leaves out of the fix), and
// the error.
type failedCall struct {
	at, upto int
	msg      string
}

// judge decides which of the failed calls, if any, opened the problem.
// Without an intent, the first: it is the best guess of what the episode
// was about. When the runtime named the task (an intent tag), the episode
// is about that task, and a failed call is one of its problems only if
// the episode fixed it (see fixed); the others are errors met on the way —
// a wrong attempt, a flaky step. An agent exploring a task, whose wrong
// tries fail with one generic message ("error: that did not help"), had
// every task it explored filed under that message, and no procedure of
// the task was learned.
func (ep *Episode) judge(failures []failedCall, named bool) {
	for k, f := range failures {
		if strings.TrimSpace(f.msg) == "" || named && !fixed(ep.Actions[f.at], ep.Actions[f.upto:]) {
			continue
		}
		ep.Trigger, ep.Actions = strings.TrimSpace(f.msg), ep.Actions[f.upto:]
		for _, later := range failures[k+1:] {
			ep.Errors = append(ep.Errors, later.msg)
		}
		return
	}
	for _, f := range failures {
		if msg := strings.TrimSpace(f.msg); msg != "" {
			ep.Errors = append(ep.Errors, msg)
		}
	}
}

// fixed reports whether a call that failed was made again among the
// later actions and worked, after something else was done: a build that
// failed and passed once the cache was cleared. The error was a problem
// the steps between fixed. Run again at once, it was a flaky step; never
// run again, a wrong attempt.
func fixed(failed Action, later []Action) bool {
	between := false
	for _, a := range later {
		same := a.Tool == failed.Tool && reflect.DeepEqual(a.Args, failed.Args)
		switch {
		case same && !a.Failed:
			return between
		case !same:
			between = true
		}
	}
	return false
}

// addEnv copies the scalar keys of src that dst does not have yet.
func addEnv(dst, src map[string]any) {
	for k, v := range src {
		if _, ok := dst[k]; ok {
			continue
		}
		switch v.(type) {
		case string, float64, bool, json.Number:
			dst[k] = v
		}
	}
}

// argsOf is a call's arguments as an object, and whether they were
// something else (a list or a scalar, held as {"args": …}).
func argsOf(raw json.RawMessage) (map[string]any, bool) {
	if len(raw) == 0 {
		return map[string]any{}, false
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return map[string]any{}, false
	}
	if m, ok := v.(map[string]any); ok {
		return m, false
	}
	return map[string]any{"args": v}, true
}

// looksLikeError reports whether a tool result reports a failure: a
// non-zero exit code, an error field, or error text.
func looksLikeError(raw json.RawMessage) bool {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch x := v.(type) {
	case string:
		return reErrorText.MatchString(x)
	case map[string]any:
		for _, k := range []string{"exit_code", "exitCode", "exit_status", "returncode"} {
			if n, ok := x[k].(float64); ok {
				return n != 0
			}
		}
		if e, ok := x["error"]; ok && e != nil && e != "" && e != false {
			return true
		}
		for _, k := range []string{"stderr", "output", "stdout"} {
			if s, ok := x[k].(string); ok && reErrorText.MatchString(s) {
				return true
			}
		}
	}
	return false
}

// failed reports whether a call's result reports a failure: it looks like
// an error, and it is not a search that found nothing (grep exits 1 with
// no output: an answer, not an error).
func failed(a Action, raw json.RawMessage) bool {
	return looksLikeError(raw) && !foundNothing(a, raw)
}

// foundNothing reports whether a result is a search's "no match": a
// search program's exit code 1 and no output.
func foundNothing(a Action, raw json.RawMessage) bool {
	if code, ok := exitCode(raw); !ok || code != 1 {
		return false
	}
	var x map[string]any
	_ = json.Unmarshal(raw, &x)
	for _, k := range []string{"stdout", "stderr", "output", "error"} {
		if s, ok := x[k].(string); ok && strings.TrimSpace(s) != "" {
			return false
		}
	}
	id := identity(a)
	prog, _, _ := strings.Cut(id, " ")
	return slices.Contains(searchProgs, id) || slices.Contains(searchProgs, prog)
}

// errorText is the message of a result that reports an error.
func errorText(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		for _, k := range []string{"error", "stderr", "output", "stdout"} {
			if s, ok := x[k].(string); ok && s != "" {
				return s
			}
		}
	}
	return string(raw)
}

// firstLine is the first non-empty line of a result, for a step's
// validation.
func firstLine(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	s := ""
	switch x := v.(type) {
	case string:
		s = x
	case map[string]any:
		for _, k := range []string{"stdout", "output", "result"} {
			if t, ok := x[k].(string); ok && t != "" {
				s = t
				break
			}
		}
	}
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 160 {
				l = l[:160]
			}
			return l
		}
	}
	return ""
}

// exitCode is a result's exit code, when it states one.
func exitCode(raw json.RawMessage) (int, bool) {
	var x map[string]any
	if json.Unmarshal(raw, &x) != nil {
		return 0, false
	}
	for _, k := range []string{"exit_code", "exitCode", "exit_status", "returncode"} {
		if n, ok := x[k].(float64); ok {
			return int(n), true
		}
	}
	return 0, false
}
