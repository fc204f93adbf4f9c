package api

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/engram-dev/engram/memory"
)

// Summarize describes a payload in a line of at most width runes, the one
// summary the CLI's tables and the MCP tools show: a fact as "subject
// predicate = object when conditions", a procedure by its skill and first
// trigger, a plan by its intent, a task by its thread and state, an
// episode by its length, outcome and first events.
func Summarize(typ memory.Type, payload json.RawMessage, width int) string {
	var p struct {
		Subject   string          `json:"subject"`
		Predicate string          `json:"predicate"`
		Object    json.RawMessage `json:"object"`
		Validity  struct {
			Conditions map[string]any `json:"conditions"`
		} `json:"validity"`
		SkillName string `json:"skill_name"`
		Triggers  []struct {
			Signal string `json:"signal"`
		} `json:"triggers"`
		PlanID         string `json:"plan_id"`
		Intent         string `json:"intent"`
		ThreadID       string `json:"thread_id"`
		State          string `json:"state"`
		ContextSummary string `json:"context_summary"`
		Outcome        string `json:"outcome"`
		Timeline       []struct {
			EventKind string `json:"event_kind"`
			Summary   string `json:"summary"`
		} `json:"timeline"`
	}
	if json.Unmarshal(payload, &p) != nil {
		return ""
	}
	var s string
	switch typ {
	case memory.Semantic:
		s = p.Subject + " " + p.Predicate + " = " + scalar(p.Object)
		if len(p.Validity.Conditions) > 0 {
			var conds []string
			for k, v := range p.Validity.Conditions {
				conds = append(conds, fmt.Sprintf("%s=%v", k, v))
			}
			slices.Sort(conds)
			s += " when " + strings.Join(conds, ", ")
		}
	case memory.Competence:
		s = "procedure " + p.SkillName
		if len(p.Triggers) > 0 && p.Triggers[0].Signal != "" {
			s += " for " + strconv.Quote(p.Triggers[0].Signal)
		}
	case memory.PlanGraph:
		s = "plan " + p.PlanID
		if p.Intent != "" {
			s = "plan for " + p.Intent + " (" + p.PlanID + ")"
		}
	case memory.Working:
		s = "thread " + p.ThreadID + ": " + p.State
		if p.ContextSummary != "" {
			s += ": " + p.ContextSummary
		}
	case memory.Episodic:
		s = fmt.Sprintf("%d events", len(p.Timeline))
		if len(p.Timeline) == 1 {
			s = "1 event"
		}
		if p.Outcome != "" {
			s += ", " + p.Outcome
		}
		var first []string
		for _, e := range p.Timeline {
			if t := cmp.Or(e.Summary, e.EventKind); t != "" && len(first) < 3 {
				first = append(first, t)
			}
		}
		if len(first) > 0 {
			s += ": " + strings.Join(first, "; ")
		}
	}
	return OneLine(s, width)
}

// scalar shows a JSON value: a string without its quotes, anything else
// as compact JSON.
func scalar(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var out bytes.Buffer
	if json.Compact(&out, v) != nil {
		return string(v)
	}
	return out.String()
}

// OneLine fits s on one line of at most width runes, its runs of white
// space made one space.
func OneLine(s string, width int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > width {
		return string(r[:width-1]) + "…"
	}
	return s
}
