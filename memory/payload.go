package memory

import (
	"encoding/json"
	"time"
)

// The five payloads (substrate RFC §15A.6–15A.10, with the struct variant's
// extra fields of the second appendix). Records carry their payload as raw
// JSON so that nothing a client sent is lost; these types are for the planes
// that need to read or build one.

// EpisodicPayload is what happened in one thread: an ordered, append-only
// timeline of event references (§5). A compressed episode (§5: old
// episodes already used as evidence) keeps only part of its timeline — its
// errors, its outcome and the events records cite — and says what it was
// in Summary; CompressedAt is when that happened, once.
type EpisodicPayload struct {
	Kind         Type             `json:"kind"`
	Timeline     []TimelineEntry  `json:"timeline"`
	Artifacts    []string         `json:"artifacts,omitempty"`
	ToolGraphRef string           `json:"tool_graph_ref,omitempty"`
	ToolGraph    []map[string]any `json:"tool_graph,omitempty"`
	Environment  map[string]any   `json:"environment,omitempty"`
	Outcome      string           `json:"outcome,omitempty"`
	Summary      string           `json:"summary,omitempty"`
	CompressedAt *time.Time       `json:"compressed_at,omitempty"`
}

// TimelineEntry is one event of an episode.
type TimelineEntry struct {
	T         time.Time `json:"t"`
	EventKind string    `json:"event_kind"`
	Ref       string    `json:"ref"`
	Summary   string    `json:"summary,omitempty"`
}

// WorkingPayload is the state of an ongoing task (§6).
type WorkingPayload struct {
	Kind              Type       `json:"kind"`
	ThreadID          string     `json:"thread_id"`
	State             string     `json:"state"`
	NextActions       []string   `json:"next_actions,omitempty"`
	OpenQuestions     []string   `json:"open_questions,omitempty"`
	ContextSummary    string     `json:"context_summary,omitempty"`
	TaskID            string     `json:"task_id,omitempty"`
	ActiveConstraints []any      `json:"active_constraints,omitempty"`
	LastUpdated       *time.Time `json:"last_updated,omitempty"`
}

// SemanticPayload is a revisable fact: subject, predicate, object and the
// conditions under which it holds (§7).
type SemanticPayload struct {
	Kind           Type            `json:"kind"`
	Subject        string          `json:"subject"`
	Predicate      string          `json:"predicate"`
	Object         json.RawMessage `json:"object"`
	Validity       Validity        `json:"validity"`
	Revision       *Revision       `json:"revision,omitempty"`
	Evidence       []Source        `json:"evidence,omitempty"`
	RevisionPolicy string          `json:"revision_policy,omitempty"`
}

// Validity says when a fact applies: always, under conditions, or within a
// time box.
type Validity struct {
	Mode       string     `json:"mode"`
	Conditions Conditions `json:"conditions,omitempty"`
	Start      *time.Time `json:"start,omitempty"`
	End        *time.Time `json:"end,omitempty"`
}

// Validity modes.
const (
	Global      = "global"
	Conditional = "conditional"
	Timeboxed   = "timeboxed"
)

// Revision mirrors a fact's revision state inside its payload, as the
// canonical schema has it (§15A.8).
type Revision struct {
	Supersedes   string `json:"supersedes,omitempty"`
	SupersededBy string `json:"superseded_by,omitempty"`
	Status       string `json:"status,omitempty"`
}

// CompetencePayload is a learned procedure: when it applies, its steps, what
// can go wrong and what to do then (§8).
type CompetencePayload struct {
	Kind          Type         `json:"kind"`
	SkillName     string       `json:"skill_name"`
	Triggers      []Trigger    `json:"triggers"`
	Recipe        []Step       `json:"recipe"`
	FailureModes  []string     `json:"failure_modes,omitempty"`
	Fallbacks     []string     `json:"fallbacks,omitempty"`
	Version       string       `json:"version,omitempty"`
	RequiredTools []string     `json:"required_tools,omitempty"`
	Performance   *Performance `json:"performance,omitempty"`
}

// Trigger is a signal (an error signature, an intent label) and the
// conditions under which a procedure applies to it.
type Trigger struct {
	Signal string `json:"signal"`
	// Template, when set, is the error template the signal is an
	// occurrence of, learned from the stream (package signature): its
	// words normalised, "<*>" where an instance value goes. A task's error
	// is this trigger's problem when it matches the template, and a
	// recipe variable bound from the k-th wildcard takes its word there.
	Template   string     `json:"template,omitempty"`
	Conditions Conditions `json:"conditions,omitempty"`
}

// Step is one step of a procedure.
type Step struct {
	Step       string         `json:"step"`
	Tool       string         `json:"tool,omitempty"`
	ArgsSchema map[string]any `json:"args_schema,omitempty"`
	Validation string         `json:"validation,omitempty"`
}

// Performance counts how often a procedure or plan worked.
type Performance struct {
	Successes     int        `json:"successes"`
	Failures      int        `json:"failures"`
	LastSuccessAt *time.Time `json:"last_success_at,omitempty"`
	LastFailureAt *time.Time `json:"last_failure_at,omitempty"`
	// Recent are its latest uses, oldest first, "s" a success and "f" a
	// failure, at most [MaxRecent]: whether observed in episodes or
	// reported by feedback, every use is counted here alike, and
	// [RetractionRule] judges them.
	Recent string `json:"recent,omitempty"`
}

// PlanGraphPayload is a reusable solution: actions as nodes, dependencies as
// edges (§9).
type PlanGraphPayload struct {
	Kind         Type           `json:"kind"`
	PlanID       string         `json:"plan_id"`
	Version      string         `json:"version"`
	Intent       string         `json:"intent,omitempty"`
	Constraints  map[string]any `json:"constraints,omitempty"`
	InputsSchema map[string]any `json:"inputs_schema,omitempty"`
	OutputSchema map[string]any `json:"outputs_schema,omitempty"`
	Nodes        []PlanNode     `json:"nodes"`
	Edges        []PlanEdge     `json:"edges"`
	Metrics      map[string]any `json:"metrics,omitempty"`
}

// PlanConditionsKey is the member of a plan's constraints (§15A.10) that
// holds the conditions it applies under, as a fact's validity conditions:
// {"constraints": {"conditions": {"platform": "web"}}}. A task whose
// conditions contradict them is not offered the plan, so that one intent
// may have several live plans, one for each set of conditions (§9:
// "selection driven by constraints").
const PlanConditionsKey = "conditions"

// Conditions are the conditions the plan applies under: its constraints'
// [PlanConditionsKey] object, none when it names none.
func (p PlanGraphPayload) Conditions() Conditions {
	m, _ := p.Constraints[PlanConditionsKey].(map[string]any)
	return Conditions(m)
}

// PlanNode is one action of a plan.
type PlanNode struct {
	ID     string         `json:"id"`
	Op     string         `json:"op"`
	Params map[string]any `json:"params,omitempty"`
	Guards map[string]any `json:"guards,omitempty"`
}

// PlanEdge is a data or control dependency between two nodes.
type PlanEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
	Kind string `json:"kind"`
}
