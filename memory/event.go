package memory

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
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
	// NextActions, when set, are what the agent will do next, and
	// OpenQuestions what it asked the user and waits on: its thread's
	// working memory takes them (substrate RFC §6, §15A.7).
	NextActions   []string `json:"next_actions,omitempty"`
	OpenQuestions []string `json:"open_questions,omitempty"`
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

// EventFact is a fact the agent learned: a subject–predicate–object triple,
// the conditions under which it holds and, for a timeboxed fact, the time
// box (§7, §15A.8: validity global, conditional or timeboxed).
type EventFact struct {
	Subject    string          `json:"subject"`
	Predicate  string          `json:"predicate"`
	Object     json.RawMessage `json:"object"`
	Conditions Conditions      `json:"conditions,omitempty"`
	// ValidFrom and ValidTo bound when the fact holds (either may be left
	// out: open-ended); ValidTo is not before ValidFrom.
	ValidFrom  *time.Time `json:"valid_from,omitempty"`
	ValidTo    *time.Time `json:"valid_to,omitempty"`
	Confidence *float64   `json:"confidence,omitempty"`
	Evidence   []Source   `json:"evidence,omitempty"`
}

// Validity is the validity of the fact: timeboxed when it has a time box,
// else conditional when it has conditions, else global.
func (f EventFact) Validity() Validity {
	v := Validity{Mode: Global, Conditions: f.Conditions}
	switch {
	case f.ValidFrom != nil || f.ValidTo != nil:
		v.Mode = Timeboxed
		utc := func(t *time.Time) *time.Time {
			if t == nil {
				return nil
			}
			u := t.UTC()
			return &u
		}
		v.Start, v.End = utc(f.ValidFrom), utc(f.ValidTo)
	case len(f.Conditions) > 0:
		v.Mode = Conditional
	}
	return v
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
	if cut := truncate(s, 240); len(cut) < len(s) {
		return cut + "…"
	}
	return s
}

// Limits of what an event brings to its episode.
const (
	// MaxEventSearchBytes is how much of an event's text lexical search
	// indexes: its first 8 KiB, cut on a rune boundary.
	MaxEventSearchBytes = 8 << 10
	// MaxEpisodeTags bounds the tags an episode gathers from its events
	// (its own thread: and agent: tags count): later new tags are dropped.
	MaxEpisodeTags = 64
)

// SearchText is the text of the event that lexical search matches (issue 9:
// every word an agent reported, not only its timeline summary): its text,
// the tool's name, arguments and result, the error, the fact, the outcome,
// the environment's values and the tags, at most [MaxEventSearchBytes].
// JSON values contribute their strings and numbers, keys in sorted order.
func (e Event) SearchText() string {
	var b strings.Builder
	add := func(parts ...string) {
		for _, p := range parts {
			if p == "" || b.Len() >= MaxEventSearchBytes {
				continue
			}
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(p)
		}
	}
	addJSON := func(raw json.RawMessage) {
		if len(raw) == 0 {
			return
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if dec.Decode(&v) == nil {
			walkStrings(v, func(s string) { add(s) })
		}
	}
	add(e.Text)
	if e.Tool != nil {
		add(e.Tool.Name)
		addJSON(e.Tool.Arguments)
		addJSON(e.Tool.Result)
	}
	if e.Error != nil {
		add(e.Error.Message, e.Error.Code, e.Error.Tool)
	}
	if e.Fact != nil {
		add(e.Fact.Subject, e.Fact.Predicate)
		addJSON(e.Fact.Object)
	}
	if e.Outcome != nil {
		add(e.Outcome.Status, e.Outcome.Summary)
	}
	walkStrings(map[string]any(e.Environment), func(s string) { add(s) })
	add(e.Tags...)
	return truncate(b.String(), MaxEventSearchBytes)
}

// walkStrings calls f with every string and number in v, map keys in
// sorted order.
func walkStrings(v any, f func(string)) {
	switch x := v.(type) {
	case string:
		f(x)
	case json.Number:
		f(x.String())
	case float64:
		f(strconv.FormatFloat(x, 'g', -1, 64))
	case bool:
	case []any:
		for _, e := range x {
			walkStrings(e, f)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walkStrings(x[k], f)
		}
	}
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for i := n; i > 0; i-- {
		if s[i]&0xC0 != 0x80 {
			return s[:i]
		}
	}
	return ""
}
