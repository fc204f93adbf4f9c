package memory

import (
	"encoding/json"
	"time"
)

// EventKind is what an event reports (substrate RFC §15.4).
type EventKind string

// Event kinds.
const (
	UserInput   EventKind = "user_input"
	ToolCall    EventKind = "tool_call"
	ToolOutput  EventKind = "tool_output"
	Observation EventKind = "observation"
	ErrorEvent  EventKind = "error"
	Outcome     EventKind = "outcome"
	FactEvent   EventKind = "fact"
)

// Event is what an agent runtime reports while it works; its JSON Schema is
// schemas/event.schema.json. The ingestion plane stages events; the policy
// plane turns them into records.
type Event struct {
	Kind           EventKind      `json:"kind"`
	AgentID        string         `json:"agent_id"`
	ThreadID       string         `json:"thread_id"`
	Time           time.Time      `json:"time"`
	Environment    map[string]any `json:"environment,omitempty"`
	Text           string         `json:"text,omitempty"`
	Tool           *EventTool     `json:"tool,omitempty"`
	Error          *EventError    `json:"error,omitempty"`
	Fact           *EventFact     `json:"fact,omitempty"`
	Outcome        *EventOutcome  `json:"outcome,omitempty"`
	Tags           []string       `json:"tags,omitempty"`
	Scope          string         `json:"scope,omitempty"`
	IdempotencyKey string         `json:"idempotency_key,omitempty"`
}

// EventTool is a tool call or its output.
type EventTool struct {
	Name      string          `json:"name"`
	CallID    string          `json:"call_id,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
}

// EventError is an error the agent met.
type EventError struct {
	Message string `json:"message"`
	Code    string `json:"code,omitempty"`
	Tool    string `json:"tool,omitempty"`
}

// EventFact is a fact the agent learned: a subject–predicate–object triple
// and the conditions under which it holds (§7).
type EventFact struct {
	Subject    string          `json:"subject"`
	Predicate  string          `json:"predicate"`
	Object     json.RawMessage `json:"object"`
	Conditions Conditions      `json:"conditions,omitempty"`
	Confidence *float64        `json:"confidence,omitempty"`
	Evidence   []Source        `json:"evidence,omitempty"`
}

// EventOutcome ends a thread's episode.
type EventOutcome struct {
	Status  string `json:"status"`
	Summary string `json:"summary,omitempty"`
}

// Summary is a short human description of the event for its timeline entry.
func (e Event) Summary() string {
	var s string
	switch {
	case e.Tool != nil:
		s = e.Tool.Name
	case e.Error != nil:
		s = e.Error.Message
	case e.Fact != nil:
		s = e.Fact.Subject + " " + e.Fact.Predicate + " " + string(e.Fact.Object)
	case e.Outcome != nil:
		s = e.Outcome.Status
		if e.Outcome.Summary != "" {
			s += ": " + e.Outcome.Summary
		}
	default:
		s = e.Text
	}
	const max = 240
	if len(s) > max {
		// Cut on a rune boundary.
		for i := max; i > 0; i-- {
			if s[i]&0xC0 != 0x80 {
				return s[:i] + "…"
			}
		}
	}
	return s
}
