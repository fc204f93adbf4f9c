package loadgen

import (
	"encoding/json"
	"fmt"
	"iter"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Event is one generated line of an agent trace (NDJSON, newline ended)
// with the thread and agent it belongs to.
type Event struct {
	Line          []byte
	Thread, Agent string
}

// Lines are every event of the run, stream by stream: what Run sends, for
// a floor to stage the same way.
func (c Config) Lines() iter.Seq[Event] {
	return func(yield func(Event) bool) {
		if c.check() != nil {
			return
		}
		for s := range c.Streams {
			for ev := range c.lines(s) {
				if !yield(ev) {
					return
				}
			}
		}
	}
}

// lines are stream s's events: every Streams-th event from s, each on a
// random thread, seeded by the stream so that a run is reproducible.
func (c Config) lines(s int) iter.Seq[Event] {
	return func(yield func(Event) bool) {
		rng := rand.New(rand.NewPCG(uint64(s), 42))
		for i := s; i < c.Events; i += c.Streams {
			thread := rng.IntN(c.Threads)
			agent := thread % c.Agents
			ev := Event{Thread: fmt.Sprintf("bench-%s-%d", c.Run, thread), Agent: fmt.Sprintf("bench-agent-%d", agent)}
			if c.Event != nil {
				ev.Line = append(c.Event(rng, i, ev.Thread, ev.Agent), '\n')
			} else {
				ev.Line = syntheticEvent(rng, ev.Thread, ev.Agent, thread, i)
			}
			if !yield(ev) {
				return
			}
		}
	}
}

var tools = []string{"shell", "git", "make", "go_test", "npm", "docker", "curl", "kubectl"}

// syntheticEvent is one line of an agent trace: mostly tool calls and
// their outputs, some observations, errors and facts.
func syntheticEvent(rng *rand.Rand, threadID, agentID string, thread, i int) []byte {
	ev := map[string]any{"agent_id": agentID, "thread_id": threadID, "tags": []string{"bench"}}
	tool := tools[rng.IntN(len(tools))]
	switch r := rng.IntN(100); {
	case r < 35:
		ev["kind"] = "tool_call"
		ev["tool"] = map[string]any{"name": tool, "call_id": strconv.Itoa(i), "arguments": map[string]any{"cmd": tool + " run --verbose ./...", "cwd": "/srv/app"}}
	case r < 70:
		ev["kind"] = "tool_output"
		ev["tool"] = map[string]any{"name": tool, "call_id": strconv.Itoa(i),
			"result": strings.Repeat("ok   github.com/acme/app/pkg 0.412s\n", 1+rng.IntN(8))}
	case r < 85:
		ev["kind"] = "observation"
		ev["text"] = fmt.Sprintf("the build of module %d finished in %d ms", rng.IntN(40), rng.IntN(9000))
	case r < 95:
		ev["kind"] = "error"
		ev["error"] = map[string]any{"message": fmt.Sprintf("exit status %d: undefined reference to `sym%d'", 1+rng.IntN(3), rng.IntN(50)), "tool": tool}
	case r < 99:
		ev["kind"] = "fact"
		ev["fact"] = map[string]any{"subject": fmt.Sprintf("repo-%d", thread%100), "predicate": "build_tool", "object": tool,
			"conditions": map[string]any{"os": "linux"}}
	default:
		ev["kind"] = "user_input"
		ev["text"] = "please also run the integration tests"
	}
	b, _ := json.Marshal(ev)
	return append(b, '\n')
}
