package eval

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
)

// Sources of an episode's actions: what the agent followed.
const (
	FromCompetence = "competence"
	FromPlan       = "plan"
	FromEpisode    = "episode"
	FromExplore    = "explore"
	// FromAdapted is a procedure or plan of the task's problem learned
	// in another environment, followed where nothing learned applies.
	FromAdapted = "adapted"
)

// Agent solves episodes of the world.
type Agent interface {
	// Name names the agent in a report.
	Name() string
	// Solve acts on the episode until it is over and says how.
	Solve(ctx context.Context, ep *Episode) (Attempt, error)
}

// Attempt is how an agent went about an episode.
type Attempt struct {
	// Source is what the agent followed (one of the From constants).
	Source string
	// Thread is the thread its events went to ("" when it streams none).
	Thread string
	// Retrieved: it asked engram first. Followed: it followed a record
	// it retrieved; Useful: that record worked.
	Retrieved, Followed, Useful bool
}

// retries is how often an agent tries a transiently failing action again.
const retries = 2

// try runs an action, again while it fails transiently.
func try(ep *Episode, a Action) Result {
	r := ep.Do(a)
	for n := 0; n < retries && r.Transient && !ep.Over(); n++ {
		r = ep.Do(a)
	}
	return r
}

// look is what an agent without a procedure does first: it lists the
// directory of the error, a read-only distractor that costs a step.
func look(ep *Episode) {
	try(ep, Action{Tool: "shell", Args: map[string]any{"command": "ls " + ep.Instance.Vars["path"]}})
}

// explore tries the current step's alternatives in a seeded random order,
// skipping those already tried, until one advances the fix or the episode
// is over.
func explore(ep *Episode, rng *rand.Rand, tried []Action) {
	slot := ep.Slot()
	cands := ep.Candidates()
	for _, i := range rng.Perm(len(cands)) {
		if ep.Over() || ep.Slot() != slot {
			return
		}
		if contains(tried, cands[i]) {
			continue
		}
		try(ep, cands[i])
	}
}

func contains(as []Action, a Action) bool {
	for _, b := range as {
		if b.Same(a) {
			return true
		}
	}
	return false
}

// follow runs steps[i] for the fix's i-th step, in order, exploring a step
// whose action is missing, unbound or wrong (after trying alts[i], the same
// step of the runners-up). It reports whether every step it followed
// advanced the fix.
func follow(ep *Episode, rng *rand.Rand, steps []Action, alts [][]Action) bool {
	clean := true
	for !ep.Over() {
		slot := ep.Slot()
		var tried []Action
		if slot < len(steps) && !steps[slot].Unbound() {
			tried = append(tried, steps[slot])
			if try(ep, steps[slot]).Advanced {
				continue
			}
			clean = false
		}
		if slot < len(alts) {
			for _, a := range alts[slot] {
				if ep.Over() || ep.Slot() != slot {
					break
				}
				if !a.Unbound() && !contains(tried, a) {
					tried = append(tried, a)
					try(ep, a)
				}
			}
		}
		if ep.Slot() == slot {
			explore(ep, rng, tried)
		}
	}
	return clean
}

func episodeRNG(seed uint64, ep *Episode) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(2_000_000+ep.Index)))
}

// NoMemory is the control without memory: it looks, then explores.
type NoMemory struct{ Seed uint64 }

// Name implements [Agent].
func (NoMemory) Name() string { return "no memory" }

// Solve implements [Agent].
func (a NoMemory) Solve(_ context.Context, ep *Episode) (Attempt, error) {
	rng := episodeRNG(a.Seed, ep)
	look(ep)
	follow(ep, rng, nil, nil)
	return Attempt{Source: FromExplore}, nil
}

// Engram is the agent that learns through engram: it asks before acting,
// follows the best procedure (or else plan) retrieved with its variables
// bound from the task, explores otherwise, streams every step and the
// outcome, and reports feedback on the records it followed.
type Engram struct {
	Client *Client
	Seed   uint64
	// AgentID names the agent in its events (default "eval-engram").
	AgentID string
}

// Name implements [Agent].
func (Engram) Name() string { return "engram" }

// Solve implements [Agent].
func (a Engram) Solve(ctx context.Context, ep *Episode) (Attempt, error) {
	in := ep.Instance
	res, err := a.Client.Retrieve(ctx, api.RetrieveRequest{Task: Task(in)})
	if err != nil {
		return Attempt{}, err
	}
	c := choose(res, in.Problem.Intent)
	judged := c.record != uuid.Nil
	if c.record == uuid.Nil {
		// Nothing learned applies in this environment. A procedure of the
		// same problem learned in another is still a start — most of its
		// steps are shared — but not one to judge: it was not offered for
		// this environment, so its outcome says nothing of it.
		t := Task(in)
		t.Conditions = nil
		other, err := a.Client.Retrieve(ctx, api.RetrieveRequest{Task: t})
		if err != nil {
			return Attempt{}, err
		}
		if c = choose(other, in.Problem.Intent); c.record != uuid.Nil {
			c.source = FromAdapted
		}
	}
	if c.record == uuid.Nil {
		look(ep)
	}
	clean := follow(ep, episodeRNG(a.Seed, ep), c.steps, c.alts)
	agent := cmp.Or(a.AgentID, "eval-engram")
	at := Attempt{Source: c.source, Thread: threadID(agent, ep), Retrieved: true, Followed: c.record != uuid.Nil,
		Useful: c.record != uuid.Nil && clean && ep.Solved()}
	if err := a.Client.Stream(ctx, Events(agent, ep)); err != nil {
		return Attempt{}, err
	}
	if judged {
		outcome := "used_success"
		if !at.Useful {
			outcome = "used_failure"
		}
		if err := a.Client.Feedback(ctx, api.FeedbackRequest{RetrievalID: res.RetrievalID.String(),
			RecordIDs: []string{c.record.String()}, Outcome: outcome}); err != nil {
			return Attempt{}, err
		}
	}
	return at, nil
}

// choice is what the engram agent follows: the steps of a record, and
// runners-up for a step that fails.
type choice struct {
	record uuid.UUID
	source string
	steps  []Action
	alts   [][]Action
}

// choose picks from a retrieval the best procedure retrieval says is the
// task's problem (its trigger has the signature of the task's error, or
// is its intent), with its variables bound from the task by retrieval:
// the agent knows nothing of how engram names them. The others of its
// problem are runners-up for a step that fails. Failing a procedure, a
// plan of the task's intent that needs no value the agent would have to
// guess.
func choose(res api.RetrieveResult, intent string) choice {
	var c choice
	for _, it := range layer(res, api.LayerCompetence) {
		var p memory.CompetencePayload
		if !it.Why.SignatureMatch || json.Unmarshal(it.Record.Payload, &p) != nil {
			continue
		}
		rs := recipe(p, it.Why.Bindings)
		if unbound(rs) {
			continue
		}
		if c.record == uuid.Nil {
			c = choice{record: it.Record.ID, source: FromCompetence, steps: rs}
			continue
		}
		for i, s := range rs {
			for len(c.alts) <= i {
				c.alts = append(c.alts, nil)
			}
			c.alts[i] = append(c.alts[i], s)
		}
	}
	if c.record != uuid.Nil {
		return c
	}
	for _, it := range layer(res, api.LayerPlan) {
		var p memory.PlanGraphPayload
		if !it.Why.IntentMatch || json.Unmarshal(it.Record.Payload, &p) != nil || p.Intent != intent {
			continue
		}
		if ps := planSteps(p); !unbound(ps) {
			return choice{record: it.Record.ID, source: FromPlan, steps: ps}
		}
	}
	return choice{source: FromExplore}
}

// Task is what an agent asks engram about an instance: the error as text
// and signal (a task's request as text only), its intent, and its
// environment as conditions.
func Task(in Instance) api.Task {
	t := api.Task{Text: in.Message(), Intent: in.Problem.Intent, Conditions: in.Conditions()}
	if !in.Problem.Task {
		t.Signals = []string{in.Message()}
	}
	return t
}

func layer(res api.RetrieveResult, name api.LayerName) []api.Item {
	for _, l := range res.Layers {
		if l.Name == name {
			return l.Items
		}
	}
	return nil
}

// recipe is a procedure's steps as actions, their variables bound by
// retrieval's bindings: the templated arguments of each step's
// args_schema, each {name} replaced by its binding. The agent need not
// know how engram names its variables.
func recipe(p memory.CompetencePayload, bindings map[string]string) []Action {
	var out []Action
	for _, s := range p.Recipe {
		args, _ := s.ArgsSchema["arguments"].(map[string]any)
		out = append(out, Action{Tool: s.Tool, Args: args}.Bind(bindings))
	}
	return out
}

// planSteps are a plan's nodes as actions, in order: the tool is the
// node's op's first word, the arguments its params.
func planSteps(p memory.PlanGraphPayload) []Action {
	var out []Action
	for _, n := range p.Nodes {
		tool, _, _ := strings.Cut(n.Op, " ")
		out = append(out, Action{Tool: tool, Args: n.Params})
	}
	return out
}

func unbound(as []Action) bool {
	for _, a := range as {
		if a.Unbound() {
			return true
		}
	}
	return len(as) == 0
}

// Replay is the raw-episode control, what a plain vector memory offers:
// it retrieves engram's episodic layer only, with consolidation off, and
// replays the successful calls of the most similar successful past
// episode, the path of the old error replaced by the new one; then it
// explores what is left.
//
// An episodic record holds its events by reference and its tool graph
// names tools but not arguments, so the calls themselves come from the
// agent's own journal of what it streamed, keyed by thread: engram ranks
// the episodes, the journal holds their trajectories.
type Replay struct {
	Client  *Client
	Seed    uint64
	AgentID string
	journal map[string]*Episode
}

// Name implements [Agent].
func (*Replay) Name() string { return "raw episodes" }

// Solve implements [Agent].
func (a *Replay) Solve(ctx context.Context, ep *Episode) (Attempt, error) {
	if a.journal == nil {
		a.journal = map[string]*Episode{}
	}
	agent := cmp.Or(a.AgentID, "eval-replay")
	in := ep.Instance
	res, err := a.Client.Retrieve(ctx, api.RetrieveRequest{Task: Task(in)})
	if err != nil {
		return Attempt{}, err
	}
	rng := episodeRNG(a.Seed, ep)
	var past *Episode
	for _, it := range layer(res, api.LayerEpisodic) {
		var p memory.EpisodicPayload
		if json.Unmarshal(it.Record.Payload, &p) == nil && p.Outcome == "success" && a.journal[it.Record.ThreadID] != nil {
			past = a.journal[it.Record.ThreadID]
			break
		}
	}
	at := Attempt{Source: FromExplore, Thread: threadID(agent, ep), Retrieved: true}
	if past == nil {
		look(ep)
	} else {
		at.Source, at.Followed = FromEpisode, true
		from, to := changedPath(past.Instance.Message(), in.Message())
		for _, s := range past.Steps {
			if ep.Over() {
				break
			}
			if !s.Result.Failed {
				try(ep, substitute(s.Action, from, to))
			}
		}
		// The episode worked if replaying it solved the task, before
		// any exploring.
		at.Useful = ep.Solved()
	}
	follow(ep, rng, nil, nil)
	a.journal[at.Thread] = ep
	if err := a.Client.Stream(ctx, Events(agent, ep)); err != nil {
		return Attempt{}, err
	}
	return at, nil
}

// changedPath compares two messages of one problem word by word and
// returns the first word that differs, in each, without their common
// suffix: the old path and the new.
func changedPath(old, cur string) (string, string) {
	ow, cw := strings.Fields(old), strings.Fields(cur)
	for i := range min(len(ow), len(cw)) {
		if ow[i] == cw[i] {
			continue
		}
		o, c := ow[i], cw[i]
		for len(o) > 0 && len(c) > 0 && o[len(o)-1] == c[len(c)-1] {
			o, c = o[:len(o)-1], c[:len(c)-1]
		}
		return o, c
	}
	return "", ""
}

func substitute(a Action, from, to string) Action {
	if from == "" {
		return a
	}
	out := Action{Tool: a.Tool, Args: map[string]any{}}
	for k, v := range a.Args {
		if s, ok := v.(string); ok {
			v = strings.ReplaceAll(s, from, to)
		}
		out.Args[k] = v
	}
	return out
}

func threadID(agent string, ep *Episode) string {
	return fmt.Sprintf("%s-%04d", agent, ep.Index)
}

// Events are an episode as the agent streams it: the task, the error, each
// call and its output, and the outcome, in the instance's environment and
// tagged with its intent.
func Events(agent string, ep *Episode) []memory.Event {
	in := ep.Instance
	thread := threadID(agent, ep)
	env := map[string]any{}
	for k, v := range in.Env {
		env[k] = v
	}
	ev := func(kind memory.EventKind) memory.Event {
		return memory.Event{Kind: kind, AgentID: agent, ThreadID: thread, Environment: env, Tags: []string{"intent:" + in.Problem.Intent}}
	}
	first := ev(memory.UserInput)
	first.Text = in.Message() // a task's request
	out := []memory.Event{first}
	if !in.Problem.Task {
		first.Text = "fix the task: " + strings.ReplaceAll(in.Problem.Intent, "_", " ")
		fail := ev(memory.ErrorEvent)
		fail.Error = &memory.EventError{Message: in.Message()}
		out = []memory.Event{first, fail}
	}
	for i, s := range ep.Steps {
		id := fmt.Sprintf("c%d", i)
		args, _ := json.Marshal(s.Action.Args)
		result, _ := json.Marshal(s.Result.Output)
		call, output := ev(memory.ToolCall), ev(memory.ToolOutput)
		call.Tool = &memory.EventTool{Name: s.Action.Tool, CallID: id, Arguments: args}
		output.Tool = &memory.EventTool{Name: s.Action.Tool, CallID: id, Result: result}
		out = append(out, call, output)
	}
	end := ev(memory.Outcome)
	end.Outcome = &memory.EventOutcome{Status: "failure"}
	if ep.Solved() {
		end.Outcome.Status = "success"
	}
	return append(out, end)
}
