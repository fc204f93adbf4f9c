package eval

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
)

// SessionAgent carries out the sessions of a session world.
type SessionAgent interface {
	// Name names the agent in a report.
	Name() string
	// Solve carries out the session until it is over and says how.
	Solve(ctx context.Context, s *Session) (Attempt, error)
}

// resolver is how an agent goes about an error of a session.
type resolver func(ctx context.Context, s *Session, t *Trouble) error

// drive runs the session's task, handing each error met to resolve.
func drive(ctx context.Context, s *Session, resolve resolver) error {
	for !s.Over() {
		if t := s.Open(); t != nil {
			if err := resolve(ctx, s, t); err != nil {
				return err
			}
			if s.Open() == t && !s.Over() {
				// The resolver gave up with budget left: the error stays.
				s.failed = true
			}
			continue
		}
		c, ok := s.Next()
		if !ok {
			break
		}
		s.Do(c)
	}
	return nil
}

// trySession runs a call, again while it fails transiently.
func trySession(s *Session, c Call) SessionResult {
	r := s.Do(c)
	for n := 0; n < retries && r.Transient && !s.Over(); n++ {
		r = s.Do(c)
	}
	return r
}

// work follows each plan in turn while the error is open — its calls in
// order, then the command that failed once more if the fix looks done —
// then explores the fix's alternatives. It returns the index of the plan
// that resolved the error with every one of its calls succeeding (-1 for
// none) and the number of plans it followed.
func work(s *Session, t *Trouble, rng *rand.Rand, plans ...[]Call) (worked, followed int) {
	worked = -1
	var tried []Call
	for i, p := range plans {
		if t.Resolved || s.Over() {
			break
		}
		followed = i + 1
		clean := true
		for _, c := range p {
			if t.Resolved || s.Over() {
				break
			}
			tried = append(tried, c)
			if trySession(s, c).Failed {
				clean = false
			}
		}
		if !t.Resolved && t.Fixed() && !s.Over() {
			trySession(s, t.Trigger)
		}
		if t.Resolved {
			if clean {
				worked = i
			}
			return worked, followed
		}
	}
	exploreFix(s, t, rng, tried)
	return worked, followed
}

// exploreFix tries the current fix step's alternatives in a seeded random
// order, skipping those tried, runs the failing command again once the fix
// is done, and goes on until the error is resolved or the session over.
func exploreFix(s *Session, t *Trouble, rng *rand.Rand, tried []Call) {
	for !t.Resolved && !s.Over() {
		if t.Fixed() {
			trySession(s, t.Trigger)
			continue
		}
		slot, acted := t.progress, false
		for _, i := range rng.Perm(len(s.Candidates())) {
			cands := s.Candidates()
			if s.Over() || t.progress != slot || i >= len(cands) {
				break
			}
			if containsCall(tried, cands[i]) {
				continue
			}
			tried = append(tried, cands[i])
			trySession(s, cands[i])
			acted = true
		}
		if !acted {
			tried = nil // every alternative failed, some transiently: again
		}
	}
}

func containsCall(cs []Call, c Call) bool {
	for _, d := range cs {
		if d.Same(c) {
			return true
		}
	}
	return false
}

// look runs one of the error's looks, chosen by rng: what an agent
// without a procedure does first.
func lookAround(s *Session, rng *rand.Rand) {
	if looks := s.Looks(); len(looks) > 0 {
		trySession(s, looks[rng.IntN(len(looks))])
	}
}

func sessionRNG(seed uint64, s *Session, t *Trouble) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(3_000_000+s.Index*8+slicesIndex(s.Troubles, t))))
}

func slicesIndex(ts []*Trouble, t *Trouble) int {
	for i, u := range ts {
		if u == t {
			return i
		}
	}
	return 0
}

// SessionNoMemory is the control without memory: at each error it looks,
// then explores. With a Client it streams its sessions (the exploring
// agent whose runs the replay metric records).
type SessionNoMemory struct {
	Seed    uint64
	Client  *Client
	AgentID string
}

// Name implements [SessionAgent].
func (SessionNoMemory) Name() string { return noMemoryAgent }

// Solve implements [SessionAgent].
func (a SessionNoMemory) Solve(ctx context.Context, s *Session) (Attempt, error) {
	err := drive(ctx, s, func(_ context.Context, s *Session, t *Trouble) error {
		rng := sessionRNG(a.Seed, s, t)
		lookAround(s, rng)
		work(s, t, rng)
		t.Source = FromExplore
		return nil
	})
	if err != nil || a.Client == nil {
		return Attempt{Source: FromExplore}, err
	}
	agent := cmp.Or(a.AgentID, "eval-explorer")
	at := Attempt{Source: FromExplore, Thread: sessionThread(agent, s)}
	return at, a.Client.Stream(ctx, SessionEvents(agent, s))
}

// SessionEngram is the agent that learns through engram, using only its
// documented retrieval contract: at each error it asks POST /v1/retrieve
// with the error as text and signal and its environment as conditions,
// follows the competence items whose signature matches
// (why.signature_match), their steps' arguments (args_schema.arguments)
// filled from why.bindings, skipping any with a placeholder left unbound,
// explores what is left, reports feedback on what it followed, and streams
// the session.
type SessionEngram struct {
	Client  *Client
	Seed    uint64
	AgentID string
}

// Name implements [SessionAgent].
func (SessionEngram) Name() string { return engramAgent }

// maxPlans is how many matching procedures an agent follows at one error
// before it explores.
const maxPlans = 3

// Solve implements [SessionAgent].
func (a SessionEngram) Solve(ctx context.Context, s *Session) (Attempt, error) {
	at := Attempt{Source: FromExplore, Retrieved: true}
	err := drive(ctx, s, func(ctx context.Context, s *Session, t *Trouble) error {
		rng := sessionRNG(a.Seed, s, t)
		task := api.Task{Text: t.Message, Signals: []string{t.Message}, Conditions: envConditions(s.Env)}
		res, err := a.Client.Retrieve(ctx, api.RetrieveRequest{Task: task})
		if err != nil {
			return err
		}
		ids, plans := offered(res)
		judged, source := true, FromCompetence
		if len(plans) == 0 {
			// Nothing learned applies in this environment: a procedure of
			// the same error learned in another is a start, not judged.
			task.Conditions = nil
			other, err := a.Client.Retrieve(ctx, api.RetrieveRequest{Task: task})
			if err != nil {
				return err
			}
			_, plans = offered(other)
			judged, source = false, FromAdapted
		}
		t.Retrieved = true
		if len(plans) == 0 {
			lookAround(s, rng)
			work(s, t, rng)
			t.Source = FromExplore
			return nil
		}
		worked, followed := work(s, t, rng, plans...)
		t.Source, t.Followed, t.Useful = source, true, worked >= 0
		if at.Source == FromExplore || source == FromCompetence {
			at.Source = source
		}
		at.Followed = true
		if !judged {
			return nil
		}
		for i := range followed {
			outcome := "used_failure"
			if i == worked {
				outcome = "used_success"
			}
			if err := a.Client.Feedback(ctx, api.FeedbackRequest{RetrievalID: res.RetrievalID.String(),
				RecordIDs: []string{ids[i].String()}, Outcome: outcome}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Attempt{}, err
	}
	agent := cmp.Or(a.AgentID, "eval-engram")
	at.Thread = sessionThread(agent, s)
	at.Useful = at.Followed && s.Solved()
	return at, a.Client.Stream(ctx, SessionEvents(agent, s))
}

// offered are the procedures of a retrieval an agent may follow: the
// competence items whose signature matches the task's error, in the order
// retrieval ranks them, their steps bound from why.bindings; items with a
// placeholder left unbound are skipped.
func offered(res api.RetrieveResult) ([]uuid.UUID, [][]Call) {
	var ids []uuid.UUID
	var plans [][]Call
	for _, it := range layer(res, api.LayerCompetence) {
		var p memory.CompetencePayload
		if !it.Why.SignatureMatch || json.Unmarshal(it.Record.Payload, &p) != nil || len(p.Recipe) == 0 {
			continue
		}
		var calls []Call
		ok := true
		for _, st := range p.Recipe {
			c := Call{Tool: st.Tool, Args: st.ArgsSchema["arguments"]}.Bind(it.Why.Bindings)
			if c.Tool == "" || c.Unbound() {
				ok = false
				break
			}
			calls = append(calls, c)
		}
		if ok {
			ids, plans = append(ids, it.Record.ID), append(plans, calls)
		}
		if len(plans) == maxPlans {
			break
		}
	}
	return ids, plans
}

func envConditions(env map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range env {
		out[k] = v
	}
	return out
}

func sessionThread(agent string, s *Session) string {
	return fmt.Sprintf("%s-%04d", agent, s.Index)
}

// SessionEvents are a session as the agent streams it: the request, each
// call and its output, an error event after the output of a call that met
// an error, and the outcome, in the session's environment.
func SessionEvents(agent string, s *Session) []memory.Event {
	thread := sessionThread(agent, s)
	env := envConditions(s.Env)
	ev := func(kind memory.EventKind) memory.Event {
		return memory.Event{Kind: kind, AgentID: agent, ThreadID: thread, Environment: env, Tags: []string{"intent:" + s.Intent}}
	}
	first := ev(memory.UserInput)
	first.Text = s.Request
	out := []memory.Event{first}
	for i, st := range s.Steps {
		id := fmt.Sprintf("c%d", i)
		args, _ := json.Marshal(st.Call.Args)
		result, _ := json.Marshal(st.Output)
		call, output := ev(memory.ToolCall), ev(memory.ToolOutput)
		call.Tool = &memory.EventTool{Name: st.Call.Tool, CallID: id, Arguments: args}
		output.Tool = &memory.EventTool{Name: st.Call.Tool, CallID: id, Result: result}
		out = append(out, call, output)
		if st.Error != "" {
			e := ev(memory.ErrorEvent)
			e.Error = &memory.EventError{Message: st.Error, Tool: st.Call.Tool}
			out = append(out, e)
		}
	}
	end := ev(memory.Outcome)
	end.Outcome = &memory.EventOutcome{Status: "failure"}
	if s.Solved() {
		end.Outcome.Status = "success"
	}
	return append(out, end)
}
