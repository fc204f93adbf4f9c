package retrieve

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/schemas"
)

// Request asks what memory helps with a task, within a trust context
// (substrate RFC §15.8), and how much of it to return: the body of POST
// /v1/retrieve.
type Request = api.RetrieveRequest

// Task describes what the agent is about to do.
type Task = api.Task

// Trust is who is asking (substrate RFC §13, §15.9).
type Trust = api.Trust

// Budget caps the answer; zero fields take the configured defaults.
type Budget = api.Budget

// Limits on a request, so that one call cannot ask for unbounded work.
const (
	MaxTextBytes   = 8 << 10
	MaxSignals     = 32
	MaxSignalBytes = 2 << 10
	MaxConditions  = 64
	MaxItems       = 200
	MaxTokens      = 200_000
	MaxLayerItems  = 100
)

// check validates r, naming every bad field with a JSON pointer.
func check(r Request) error {
	var bad []schemas.Violation
	add := func(ptr, format string, args ...any) {
		bad = append(bad, schemas.Violation{Pointer: ptr, Message: fmt.Sprintf(format, args...)})
	}
	t := r.Task
	if strings.TrimSpace(t.Text) == "" && strings.TrimSpace(t.Intent) == "" && len(t.Signals) == 0 && len(t.Tools) == 0 && t.ThreadID == "" {
		add("/task", "is empty: give text, an intent, signals, tools or a thread_id")
	}
	text := func(ptr, s string, limit int) {
		switch {
		case !utf8.ValidString(s):
			add(ptr, "is not valid UTF-8")
		case len(s) > limit:
			add(ptr, "is longer than %d bytes", limit)
		}
	}
	text("/task/text", t.Text, MaxTextBytes)
	text("/task/intent", t.Intent, MaxSignalBytes)
	text("/task/thread_id", t.ThreadID, 200)
	text("/task/agent_id", t.AgentID, 200)
	text("/task/scope", t.Scope, 200)
	if len(t.Signals) > MaxSignals {
		add("/task/signals", "has more than %d signals", MaxSignals)
	}
	for i, s := range t.Signals {
		if strings.TrimSpace(s) == "" {
			add(fmt.Sprintf("/task/signals/%d", i), "is empty")
		}
		text(fmt.Sprintf("/task/signals/%d", i), s, MaxSignalBytes)
	}
	if len(t.Tools) > MaxSignals {
		add("/task/tools", "has more than %d tools", MaxSignals)
	}
	for i, s := range t.Tools {
		text(fmt.Sprintf("/task/tools/%d", i), s, MaxSignalBytes)
	}
	if len(t.Conditions) > MaxConditions {
		add("/task/conditions", "has more than %d keys", MaxConditions)
	}
	for _, k := range slices.Sorted(maps.Keys(t.Conditions)) {
		switch v := t.Conditions[k].(type) {
		case string, bool, float64:
		case nil:
			add("/task/conditions/"+pointerEscape(k), "is null: a condition's value is a string, number or boolean")
		default:
			add("/task/conditions/"+pointerEscape(k), "is %s: a condition's value is a string, number or boolean", kindOf(v))
		}
	}
	if c := r.Trust.Clearance; c != "" && !c.Valid() {
		add("/trust/clearance", "%q is not a sensitivity level (public, low, medium, high, hyper)", c)
	}
	text("/trust/environment", r.Trust.Environment, 100)
	b := r.Budget
	if b.Items != nil && (*b.Items < 1 || *b.Items > MaxItems) {
		add("/budget/items", "must be between 1 and %d", MaxItems)
	}
	if b.Tokens != nil && (*b.Tokens < 1 || *b.Tokens > MaxTokens) {
		add("/budget/tokens", "must be between 1 and %d", MaxTokens)
	}
	for _, l := range slices.Sorted(maps.Keys(b.Layers)) {
		if !slices.Contains(Layers, l) {
			add("/budget/layers/"+pointerEscape(string(l)), "is not a layer (working, semantic, competence, plan, episodic)")
			continue
		}
		if n := b.Layers[l]; n < 1 || n > MaxLayerItems {
			add("/budget/layers/"+pointerEscape(string(l)), "must be between 1 and %d", MaxLayerItems)
		}
	}
	if len(bad) > 0 {
		return &schemas.ValidationError{Violations: bad}
	}
	return nil
}

// pointerEscape escapes a key for a JSON pointer (RFC 6901).
func pointerEscape(k string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
}

func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("a %T", v)
}
