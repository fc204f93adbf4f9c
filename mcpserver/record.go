package mcpserver

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/engram-dev/engram/memory"
)

// Record is a memory record as the tools answer it: the API's record, with
// ids as strings and a one-line summary.
type Record struct {
	ID          string    `json:"id"`
	Type        string    `json:"type" jsonschema:"episodic, working, semantic, competence or plan_graph"`
	Status      string    `json:"status" jsonschema:"active and contested records are retrievable; draft waits for review"`
	Version     int       `json:"version"`
	Summary     string    `json:"summary" jsonschema:"the record in one line"`
	Sensitivity string    `json:"sensitivity"`
	Confidence  float64   `json:"confidence"`
	Salience    float64   `json:"salience" jsonschema:"0 to 1: how alive the record is; being used and useful reinforces it"`
	Scope       string    `json:"scope,omitempty"`
	Tags        []string  `json:"tags,omitempty"`
	AgentID     string    `json:"agent_id,omitempty"`
	ThreadID    string    `json:"thread_id,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	Payload     Object    `json:"payload" jsonschema:"the typed content: a fact's subject, predicate and object; a procedure's triggers and recipe; an episode's timeline; ..."`
	Provenance  Object    `json:"provenance,omitempty" jsonschema:"where the record came from: its sources"`
	Lifecycle   Object    `json:"lifecycle,omitempty" jsonschema:"how it decays, when it expires and how it may be deleted"`
	Relations   Objects   `json:"relations,omitempty" jsonschema:"its relations to other records: supports, contradicts, derived_from, supersedes, ..."`
	Flags       Objects   `json:"flags,omitempty" jsonschema:"re-validation flags, such as derived_from_quarantined"`
}

// newRecord is rec as a tool answers it.
func newRecord(rec memory.Record) Record {
	return Record{
		ID: rec.ID.String(), Type: string(rec.Type), Status: string(rec.Status), Version: rec.Version,
		Summary:     summarize(rec.Type, rec.Payload),
		Sensitivity: string(rec.Sensitivity), Confidence: rec.Confidence, Salience: rec.Salience,
		Scope: rec.Scope, Tags: rec.Tags, AgentID: rec.AgentID, ThreadID: rec.ThreadID,
		CreatedAt: rec.CreatedAt, UpdatedAt: rec.UpdatedAt,
		Payload:    jsonValue(rec.Payload),
		Provenance: jsonValue(rec.Provenance),
		Lifecycle:  jsonValue(rec.Lifecycle),
		Relations:  nonEmpty(rec.Relations),
		Flags:      nonEmpty(rec.Flags),
	}
}

// nonEmpty is v as a JSON value, or nil when the slice is empty.
func nonEmpty[T any](v []T) any {
	if len(v) == 0 {
		return nil
	}
	return jsonValue(v)
}

// jsonValue is v decoded as generic JSON (maps, slices, strings, float64s,
// bools), so that it matches a schema that admits any value.
func jsonValue(v any) any {
	var b []byte
	switch x := v.(type) {
	case json.RawMessage:
		b = x
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil
		}
	}
	if len(b) == 0 {
		return nil
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

// summaryWidth caps a summary's runes.
const summaryWidth = 200

// summarize describes a payload in a line: a fact as "subject predicate =
// object [conditions]", a procedure by its skill and first trigger, a plan
// by its intent, a task by its thread and state, an episode by its outcome
// and first events.
func summarize(typ memory.Type, payload json.RawMessage) string {
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
		var parts []string
		if p.Outcome != "" {
			parts = append(parts, p.Outcome)
		}
		for i, e := range p.Timeline {
			if i == 3 {
				parts = append(parts, fmt.Sprintf("%d more events", len(p.Timeline)-3))
				break
			}
			parts = append(parts, cmp.Or(e.Summary, e.EventKind))
		}
		s = "episode: " + strings.Join(parts, "; ")
	}
	return shorten(s)
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

// shorten fits s on one line of at most summaryWidth runes.
func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > summaryWidth {
		return string(r[:summaryWidth-1]) + "…"
	}
	return s
}
