package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/client"
	"github.com/engram-dev/engram/memory"
)

// Tool names.
const (
	ToolRecall         = "recall"
	ToolRemember       = "remember"
	ToolFeedback       = "feedback"
	ToolGetRecord      = "get_record"
	ToolRecordHistory  = "record_history"
	ToolRecordAudit    = "record_audit"
	ToolListProcedures = "list_procedures"
	ToolProposeFact    = "propose_fact"
	ToolForget         = "forget"
)

// Annotation hints. Every tool's world is closed: engram's memory only.
var (
	no = new(false)

	// readOnly tools change nothing.
	readOnly = &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: no, IdempotentHint: true, OpenWorldHint: no}
)

// addTools adds the tools to s.
func (h *handlers) addTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{
		Name:  ToolRecall,
		Title: "Recall memory for a task",
		Description: "What engram's memory knows that helps with a task: the thread's working memory, facts, learned procedures " +
			"(with their steps), plans and past episodes, best first, each with its record id, type, a summary and why it matched. " +
			"Call it before a task; pass error messages as signals. Keep the retrieval_id for feedback.",
		InputSchema:  recallInputSchema,
		OutputSchema: schemaFor[RecallOutput](nil),
		// A retrieval is logged (for feedback) but changes no memory.
		Annotations: &mcp.ToolAnnotations{Title: "Recall memory for a task", ReadOnlyHint: true, DestructiveHint: no, OpenWorldHint: no},
	}, h.recall)
	mcp.AddTool(s, &mcp.Tool{
		Name:  ToolRemember,
		Title: "Remember events of a thread",
		Description: "Record what happened in a thread (task or conversation), in order: user input, tool calls and outputs, " +
			"observations, errors, facts and the outcome. engram keeps them as the thread's episode and learns procedures " +
			"from repeated experience. All events are stored or none: a refusal names the bad event.",
		InputSchema:  rememberInputSchema,
		OutputSchema: schemaFor[RememberOutput](nil),
		// Additive; a retry is absorbed only for events with an
		// idempotency_key.
		Annotations: &mcp.ToolAnnotations{Title: "Remember events", DestructiveHint: no, OpenWorldHint: no},
	}, h.remember)
	mcp.AddTool(s, &mcp.Tool{
		Name:  ToolFeedback,
		Title: "Report how recalled memory served",
		Description: "Report how the records of a recall served the task: used_success reinforces them, used_failure and unused " +
			"weaken them. Name record_ids to report on some of them only. The same report counts once.",
		InputSchema:  feedbackInputSchema,
		OutputSchema: schemaFor[FeedbackOutput](nil),
		Annotations:  &mcp.ToolAnnotations{Title: "Feedback on a recall", DestructiveHint: no, IdempotentHint: true, OpenWorldHint: no},
	}, h.feedback)
	mcp.AddTool(s, &mcp.Tool{
		Name:         ToolGetRecord,
		Title:        "Get a record",
		Description:  "A memory record by id, in full: its typed payload, status, version, salience and provenance. as_of reads it as it was then.",
		InputSchema:  schemaFor[GetRecordInput](nil),
		OutputSchema: schemaFor[Record](nil),
		Annotations:  readOnly,
	}, h.getRecord)
	mcp.AddTool(s, &mcp.Tool{
		Name:         ToolRecordHistory,
		Title:        "History of a record",
		Description:  "Every version of a record, oldest first, as it was stored at each revision.",
		InputSchema:  schemaFor[RecordInput](nil),
		OutputSchema: schemaFor[HistoryOutput](nil),
		Annotations:  readOnly,
	}, h.recordHistory)
	mcp.AddTool(s, &mcp.Tool{
		Name:         ToolRecordAudit,
		Title:        "Audit trail of a record",
		Description:  "Every audited action on a record, oldest first: who did what, when, why, and on which evidence.",
		InputSchema:  schemaFor[RecordInput](nil),
		OutputSchema: schemaFor[AuditOutput](nil),
		Annotations:  readOnly,
	}, h.recordAudit)
	mcp.AddTool(s, &mcp.Tool{
		Name:  ToolListProcedures,
		Title: "List learned procedures",
		Description: "The procedures engram learned (competence records): each with its trigger, success rate and evidence, and the " +
			"URI of its Agent Skills SKILL.md (a resource). min_success_rate leaves out those below it.",
		InputSchema:  listProceduresInputSchema,
		OutputSchema: schemaFor[ListProceduresOutput](nil),
		Annotations:  readOnly,
	}, h.listProcedures)
	mcp.AddTool(s, &mcp.Tool{
		Name:  ToolProposeFact,
		Title: "Propose a fact",
		Description: "Store a fact (subject, predicate, object, optionally the conditions under which it holds) through engram's " +
			"write gates. The answer's outcome says what happened: created, absorbed (already known), contested (it contradicts " +
			"an active fact), or queued (a draft waiting for a reviewer, not yet recalled). A refusal names the gate and reason.",
		InputSchema:  proposeFactInputSchema,
		OutputSchema: schemaFor[ProposeFactOutput](nil),
		// A duplicate proposal is absorbed by the live fact.
		Annotations: &mcp.ToolAnnotations{Title: "Propose a fact", DestructiveHint: no, IdempotentHint: true, OpenWorldHint: no},
	}, h.proposeFact)
	mcp.AddTool(s, &mcp.Tool{
		Name:  ToolForget,
		Title: "Forget a record",
		Description: "Withdraw a record from memory: it is no longer recalled, and stays readable in its history and audit trail. " +
			"A fact, procedure, plan or working memory is retracted; an episode, which is append-only, is deleted. An executor " +
			"may forget its own agent's working memory, episodes and facts only; other roles as their keys allow.",
		InputSchema:  schemaFor[ForgetInput](nil),
		OutputSchema: schemaFor[ForgetOutput](nil),
		Annotations:  &mcp.ToolAnnotations{Title: "Forget a record", DestructiveHint: new(true), OpenWorldHint: no},
	}, h.forget)
}

// parseID parses a record id argument.
func parseID(arg, s string) (uuid.UUID, error) {
	id, err := uuid.Parse(strings.TrimSpace(s))
	if err != nil {
		return uuid.Nil, argError(arg, "%q is not a record id (a UUID such as 0190a1b2-0000-7000-8000-000000000000: recall and list_procedures give them)", s)
	}
	return id, nil
}

// --- recall

// RecallInput is the task recall looks for memory about.
type RecallInput struct {
	Task       string   `json:"task" jsonschema:"what you are about to do, in a sentence"`
	Intent     string   `json:"intent,omitempty" jsonschema:"an intent label such as fix_build or deploy"`
	Signals    []string `json:"signals,omitempty" jsonschema:"error messages or other signals you see, verbatim: they match learned procedures' triggers"`
	Tools      []string `json:"tools,omitempty" jsonschema:"the tools in play"`
	Conditions Scalars  `json:"conditions,omitempty" jsonschema:"the task's context as scalar values, such as {\"os\": \"linux\", \"project\": \"go\"}: facts and procedures that need other conditions are left out"`
	ThreadID   string   `json:"thread_id,omitempty" jsonschema:"the task's thread: its working memory comes first"`
	AgentID    string   `json:"agent_id,omitempty" jsonschema:"the agent asking"`
	Scope      string   `json:"scope,omitempty" jsonschema:"records of this scope, and of none"`
	MaxItems   int      `json:"max_items,omitempty" jsonschema:"items in all, 1 to 200 (default: the server's)"`
	MaxTokens  int      `json:"max_tokens,omitempty" jsonschema:"approximate tokens in all, 1 to 200000 (default: the server's)"`
}

// RecallOutput is what memory helps with the task.
type RecallOutput struct {
	RetrievalID string         `json:"retrieval_id" jsonschema:"pass it to feedback once you know how these records served"`
	Items       []RecalledItem `json:"items" jsonschema:"best first within each layer: working, semantic, competence, plan, episodic"`
	Clearance   string         `json:"clearance" jsonschema:"the sensitivity the answer was gated at"`
	Withheld    int            `json:"withheld,omitempty" jsonschema:"records the trust context kept back"`
	Omitted     int            `json:"omitted,omitempty" jsonschema:"matching records the budget left out"`
	// Ambiguous names the layers where several procedures or plans match
	// about equally well.
	Ambiguous []Ambiguity `json:"ambiguous,omitempty" jsonschema:"layers where several procedures or plans match about equally well: give the separating conditions to choose"`
	Notes     []string    `json:"notes,omitempty"`
}

// RecalledItem is one record of a recall.
type RecalledItem struct {
	ID      string  `json:"id"`
	Layer   string  `json:"layer"`
	Type    string  `json:"type"`
	Summary string  `json:"summary"`
	Why     string  `json:"why" jsonschema:"why it matched: terms, signal, conditions, success rate, salience"`
	Score   float64 `json:"score"`
	// Gating is set when trust gating changed what is shown.
	Gating   string            `json:"gating,omitempty" jsonschema:"summarise or redact when the record is shown changed for your clearance"`
	Bindings map[string]string `json:"bindings,omitempty" jsonschema:"a procedure's variables bound from your signal: replace each {name} in its steps"`
	Payload  Object            `json:"payload" jsonschema:"the record's content: a fact's object, a procedure's recipe, an episode's timeline"`
}

// Ambiguity is a layer whose best items match about equally well.
type Ambiguity struct {
	Layer          string   `json:"layer"`
	SeparatingKeys []string `json:"separating_keys,omitempty" jsonschema:"condition keys whose values would tell them apart: pass them in conditions"`
}

var recallInputSchema = schemaFor[RecallInput](func(p map[string]*jsonschema.Schema) {
	p["task"].MinLength = new(1)
	p["max_items"].Minimum, p["max_items"].Maximum = new(1.0), new(200.0)
	p["max_tokens"].Minimum, p["max_tokens"].Maximum = new(1.0), new(200000.0)
})

func (h *handlers) recall(ctx context.Context, _ *mcp.CallToolRequest, in RecallInput) (*mcp.CallToolResult, RecallOutput, error) {
	req := api.RetrieveRequest{Task: api.Task{
		Text: in.Task, Intent: in.Intent, Signals: in.Signals, Tools: in.Tools, Conditions: in.Conditions,
		ThreadID: in.ThreadID, AgentID: in.AgentID, Scope: in.Scope,
	}}
	if in.MaxItems != 0 {
		req.Budget.Items = &in.MaxItems
	}
	if in.MaxTokens != 0 {
		req.Budget.Tokens = &in.MaxTokens
	}
	res, err := h.c.Retrieve(ctx, req)
	if err != nil {
		return nil, RecallOutput{}, toolError(err, recallPointer)
	}
	out := RecallOutput{
		RetrievalID: res.RetrievalID.String(), Clearance: string(res.Clearance), Withheld: res.Withheld,
		Notes: res.Notes, Items: []RecalledItem{},
	}
	for _, l := range res.Layers {
		out.Omitted += l.Omitted
		if l.NeedsDisambiguation {
			out.Ambiguous = append(out.Ambiguous, Ambiguity{Layer: string(l.Name), SeparatingKeys: l.SeparatingKeys})
		}
		for _, it := range l.Items {
			item := RecalledItem{
				ID: it.Record.ID.String(), Layer: string(l.Name), Type: string(it.Record.Type),
				Summary: summarize(it.Record.Type, it.Record.Payload), Why: why(it.Why), Score: round(it.Score),
				Bindings: it.Why.Bindings, Payload: jsonValue(it.Record.Payload),
			}
			if it.Gating != api.GatingReturn {
				item.Gating = string(it.Gating)
			}
			out.Items = append(out.Items, item)
		}
	}
	return nil, out, nil
}

// recallPointer locates a field error of POST /v1/retrieve in recall's
// arguments.
func recallPointer(p string) string {
	switch {
	case p == "/task/text":
		return "task"
	case strings.HasPrefix(p, "/task/"):
		return strings.TrimPrefix(p, "/task/")
	case p == "/budget/items":
		return "max_items"
	case p == "/budget/tokens":
		return "max_tokens"
	}
	return p
}

// why explains an item's score in a line.
func why(w api.Why) string {
	var parts []string
	if w.MatchedSignal != "" {
		s := "trigger " + strconv.Quote(w.MatchedSignal)
		if w.SignatureMatch {
			s += " matches your signal"
		}
		parts = append(parts, s)
	}
	if w.IntentMatch {
		parts = append(parts, "intent matches")
	}
	if len(w.Terms) > 0 {
		parts = append(parts, "terms "+strings.Join(w.Terms, ", "))
	}
	if w.Vector != nil {
		parts = append(parts, "similar ("+fmt.Sprintf("%.2f", *w.Vector)+")")
	}
	if len(w.MatchedConditions) > 0 {
		parts = append(parts, "conditions "+strings.Join(w.MatchedConditions, ", ")+" hold")
	}
	if len(w.UnknownConditions) > 0 {
		parts = append(parts, "conditions "+strings.Join(w.UnknownConditions, ", ")+" unknown")
	}
	if w.SuccessRate != nil {
		parts = append(parts, fmt.Sprintf("success rate %.0f%%", *w.SuccessRate*100))
	}
	parts = append(parts, fmt.Sprintf("relevance %.2f, salience %.2f, confidence %.2f", w.Relevance, w.Salience, w.Confidence))
	return strings.Join(parts, "; ")
}

func round(f float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', 4, 64), 64)
	return v
}

// --- remember

// RememberInput is a thread's events, in order.
type RememberInput struct {
	ThreadID string  `json:"thread_id" jsonschema:"the task or conversation the events belong to: the same id for every call of one task"`
	AgentID  string  `json:"agent_id,omitempty" jsonschema:"who you are (default: your key's own agent, else the server's configured actor)"`
	Events   []Event `json:"events" jsonschema:"what happened, oldest first"`
}

// Event is one thing that happened in a thread (the API's event, without
// its thread and agent, which the call gives).
type Event struct {
	Kind           string        `json:"kind" jsonschema:"user_input and observation need text; tool_call and tool_output need tool; error needs error; outcome needs outcome; fact needs fact"`
	Text           string        `json:"text,omitempty" jsonschema:"what the user said, or what was observed"`
	Tool           *EventTool    `json:"tool,omitempty"`
	Error          *EventError   `json:"error,omitempty"`
	Outcome        *EventOutcome `json:"outcome,omitempty"`
	Fact           *EventFact    `json:"fact,omitempty"`
	Time           string        `json:"time,omitempty" jsonschema:"when it happened (RFC 3339); when received if left out"`
	Environment    Scalars       `json:"environment,omitempty" jsonschema:"scalar context such as os, tool versions, project kind"`
	Tags           []string      `json:"tags,omitempty"`
	Scope          string        `json:"scope,omitempty"`
	IdempotencyKey string        `json:"idempotency_key,omitempty" jsonschema:"a retry with the same key is absorbed"`
}

// EventTool is a tool call or its output.
type EventTool struct {
	Name      string `json:"name"`
	CallID    string `json:"call_id,omitempty"`
	Arguments Value  `json:"arguments,omitempty" jsonschema:"the call's arguments, as the tool took them"`
	Result    Value  `json:"result,omitempty" jsonschema:"the call's result, as the tool gave it"`
}

// EventError is an error seen.
type EventError struct {
	Message string `json:"message" jsonschema:"the error message, verbatim"`
	Code    string `json:"code,omitempty"`
	Tool    string `json:"tool,omitempty"`
}

// EventOutcome is how the thread's task ended.
type EventOutcome struct {
	Status  string `json:"status" jsonschema:"success, failure or partial"`
	Summary string `json:"summary,omitempty"`
}

// EventFact is a fact stated in the thread.
type EventFact struct {
	Subject    string  `json:"subject"`
	Predicate  string  `json:"predicate"`
	Object     Value   `json:"object" jsonschema:"its value: a string, number, boolean, object or array"`
	Conditions Scalars `json:"conditions,omitempty" jsonschema:"scalar context under which it holds"`
	Confidence float64 `json:"confidence,omitempty" jsonschema:"0 to 1 (default: the server's)"`
}

var rememberInputSchema = schemaFor[RememberInput](func(p map[string]*jsonschema.Schema) {
	p["thread_id"].MinLength = new(1)
	ev := p["events"]
	ev.MinItems = new(1)
	ev.Items.Properties["kind"].Enum = enum("user_input", "tool_call", "tool_output", "observation", "error", "outcome", "fact")
	ev.Items.Properties["outcome"].Properties["status"].Enum = enum("success", "failure", "partial")
	fact := ev.Items.Properties["fact"].Properties
	fact["object"] = factObject(fact["object"].Description)
	fact["confidence"].Minimum, fact["confidence"].Maximum = new(0.0), new(1.0)
})

// RememberOutput is what was staged.
type RememberOutput struct {
	Staged     int      `json:"staged" jsonschema:"events stored"`
	Duplicates int      `json:"duplicates,omitempty" jsonschema:"retries absorbed into events stored before"`
	EventIDs   []string `json:"event_ids"`
}

// wireEvent is an event as POST /v1/events takes it: the call's thread
// and agent, and the event's own fields. An event that names no agent is
// the key's own agent's, else the actor's: the API decides, for only it
// knows the key's agent.
type wireEvent struct {
	AgentID  string `json:"agent_id,omitempty"`
	ThreadID string `json:"thread_id"`
	Event
}

func (h *handlers) remember(ctx context.Context, _ *mcp.CallToolRequest, in RememberInput) (*mcp.CallToolResult, RememberOutput, error) {
	events := make([]any, len(in.Events))
	for i, e := range in.Events {
		events[i] = wireEvent{AgentID: in.AgentID, ThreadID: in.ThreadID, Event: e}
	}
	res, err := h.c.PostEvents(ctx, events)
	if err != nil {
		// The API's pointers are into the array sent: /1/text is the
		// second event's text.
		return nil, RememberOutput{}, toolError(err, func(p string) string {
			if strings.HasSuffix(p, "/agent_id") {
				return "agent_id"
			}
			if strings.HasSuffix(p, "/thread_id") {
				return "thread_id"
			}
			return "events" + p
		})
	}
	out := RememberOutput{EventIDs: []string{}}
	for _, e := range res.Events {
		out.EventIDs = append(out.EventIDs, e.ID.String())
		if e.Duplicate {
			out.Duplicates++
		} else {
			out.Staged++
		}
	}
	return nil, out, nil
}

// --- feedback

// FeedbackInput is how a recall's records served.
type FeedbackInput struct {
	RetrievalID string   `json:"retrieval_id" jsonschema:"the retrieval_id recall answered"`
	Outcome     string   `json:"outcome" jsonschema:"used_success: they helped (reinforce); used_failure: you used them and failed (weaken); unused: they did not help (weaken a little)"`
	RecordIDs   []string `json:"record_ids,omitempty" jsonschema:"only these records of the recall (default: all of them)"`
	Rationale   string   `json:"rationale,omitempty" jsonschema:"why, kept in the audit trail"`
}

var feedbackInputSchema = schemaFor[FeedbackInput](func(p map[string]*jsonschema.Schema) {
	p["outcome"].Enum = enum("used_success", "used_failure", "unused")
})

// FeedbackOutput is what the feedback changed.
type FeedbackOutput struct {
	Applied   int              `json:"applied" jsonschema:"records whose salience changed"`
	Records   []FeedbackRecord `json:"records"`
	Duplicate []string         `json:"duplicate,omitempty" jsonschema:"records that had this feedback already: unchanged"`
	NotLive   []string         `json:"not_live,omitempty" jsonschema:"records no longer active: unchanged"`
}

// FeedbackRecord is a record's state after feedback.
type FeedbackRecord struct {
	ID       string  `json:"id"`
	Salience float64 `json:"salience"`
	Version  int     `json:"version"`
}

func (h *handlers) feedback(ctx context.Context, _ *mcp.CallToolRequest, in FeedbackInput) (*mcp.CallToolResult, FeedbackOutput, error) {
	if _, err := parseID("retrieval_id", in.RetrievalID); err != nil {
		return nil, FeedbackOutput{}, err
	}
	res, err := h.c.Feedback(ctx, api.FeedbackRequest{RetrievalID: in.RetrievalID, RecordIDs: in.RecordIDs, Outcome: in.Outcome, Rationale: in.Rationale})
	if err != nil {
		return nil, FeedbackOutput{}, toolError(err, func(p string) string { return strings.TrimPrefix(p, "/") })
	}
	out := FeedbackOutput{Applied: res.Applied, Records: []FeedbackRecord{}}
	for _, r := range res.Records {
		out.Records = append(out.Records, FeedbackRecord{ID: r.ID.String(), Salience: round(r.Salience), Version: r.Version})
	}
	for _, id := range res.Duplicate {
		out.Duplicate = append(out.Duplicate, id.String())
	}
	for _, id := range res.NotLive {
		out.NotLive = append(out.NotLive, id.String())
	}
	return nil, out, nil
}

// --- get_record, record_history, record_audit

// RecordInput names a record.
type RecordInput struct {
	ID string `json:"id" jsonschema:"the record's id"`
}

// GetRecordInput names a record, and optionally a time.
type GetRecordInput struct {
	ID   string `json:"id" jsonschema:"the record's id"`
	AsOf string `json:"as_of,omitempty" jsonschema:"read it as it was at this time (RFC 3339)"`
}

func (h *handlers) getRecord(ctx context.Context, _ *mcp.CallToolRequest, in GetRecordInput) (*mcp.CallToolResult, Record, error) {
	id, err := parseID("id", in.ID)
	if err != nil {
		return nil, Record{}, err
	}
	var rec memory.Record
	if in.AsOf != "" {
		at, perr := time.Parse(time.RFC3339Nano, in.AsOf)
		if perr != nil {
			return nil, Record{}, argError("as_of", "%q is not an RFC 3339 time such as 2026-01-02T15:04:05Z", in.AsOf)
		}
		err = h.c.Do(ctx, "GET", "/v1/records/"+id.String(), url.Values{"as_of": {at.UTC().Format(time.RFC3339Nano)}}, nil, &rec)
	} else {
		var p *memory.Record
		if p, err = h.c.GetRecord(ctx, id); p != nil {
			rec = *p
		}
	}
	if err != nil {
		return nil, Record{}, toolError(err, nil)
	}
	return nil, newRecord(rec), nil
}

// HistoryOutput is a record's versions.
type HistoryOutput struct {
	Versions []Version `json:"versions" jsonschema:"oldest first"`
}

// Version is one revision of a record.
type Version struct {
	Version    int       `json:"version"`
	RecordedAt time.Time `json:"recorded_at"`
	Record     Record    `json:"record"`
}

func (h *handlers) recordHistory(ctx context.Context, _ *mcp.CallToolRequest, in RecordInput) (*mcp.CallToolResult, HistoryOutput, error) {
	id, err := parseID("id", in.ID)
	if err != nil {
		return nil, HistoryOutput{}, err
	}
	res, err := h.c.History(ctx, id)
	if err != nil {
		return nil, HistoryOutput{}, toolError(err, nil)
	}
	out := HistoryOutput{Versions: []Version{}}
	for _, v := range res.Versions {
		out.Versions = append(out.Versions, Version{Version: v.Version, RecordedAt: v.RecordedAt, Record: newRecord(v.Record)})
	}
	return nil, out, nil
}

// AuditOutput is a record's audit trail.
type AuditOutput struct {
	Entries []AuditEntry `json:"entries" jsonschema:"oldest first"`
}

// AuditEntry is one audited action on a record.
type AuditEntry struct {
	Action    string    `json:"action"`
	Actor     string    `json:"actor"`
	At        time.Time `json:"at"`
	Version   int       `json:"version,omitempty"`
	Rationale string    `json:"rationale,omitempty"`
	Evidence  Objects   `json:"evidence,omitempty"`
}

func (h *handlers) recordAudit(ctx context.Context, _ *mcp.CallToolRequest, in RecordInput) (*mcp.CallToolResult, AuditOutput, error) {
	id, err := parseID("id", in.ID)
	if err != nil {
		return nil, AuditOutput{}, err
	}
	res, err := h.c.Audit(ctx, id)
	if err != nil {
		return nil, AuditOutput{}, toolError(err, nil)
	}
	out := AuditOutput{Entries: []AuditEntry{}}
	for _, e := range res.Entries {
		a := AuditEntry{Action: e.Action, Actor: e.Actor, At: e.At, Rationale: e.Rationale, Evidence: nonEmpty(e.Evidence)}
		if e.Version != nil {
			a.Version = *e.Version
		}
		out.Entries = append(out.Entries, a)
	}
	return nil, out, nil
}

// --- list_procedures

// ListProceduresInput filters the procedures.
type ListProceduresInput struct {
	MinSuccessRate float64 `json:"min_success_rate,omitempty" jsonschema:"leave out procedures whose smoothed success rate, (successes+1)/(uses+2), is below this, 0 to 1"`
	Limit          int     `json:"limit,omitempty" jsonschema:"at most this many, 1 to 1000 (default 100)"`
}

var listProceduresInputSchema = schemaFor[ListProceduresInput](func(p map[string]*jsonschema.Schema) {
	p["min_success_rate"].Minimum, p["min_success_rate"].Maximum = new(0.0), new(1.0)
	p["limit"].Minimum, p["limit"].Maximum = new(1.0), new(1000.0)
})

// DefaultProcedureLimit is list_procedures' default limit.
const DefaultProcedureLimit = 100

// ListProceduresOutput is the learned procedures.
type ListProceduresOutput struct {
	Procedures []Procedure `json:"procedures" jsonschema:"newest first"`
	// More says the limit left some out.
	More bool `json:"more,omitempty" jsonschema:"the limit left some out"`
}

// Procedure is a learned procedure in brief.
type Procedure struct {
	ID          string   `json:"id"`
	Name        string   `json:"name" jsonschema:"its Agent Skills name"`
	SkillName   string   `json:"skill_name"`
	SkillURI    string   `json:"skill_uri" jsonschema:"read it as an Agent Skills SKILL.md"`
	Triggers    []string `json:"triggers" jsonschema:"the signals it applies to"`
	Steps       int      `json:"steps"`
	SuccessRate float64  `json:"success_rate" jsonschema:"smoothed: (successes+1)/(uses+2)"`
	Successes   int      `json:"successes"`
	Failures    int      `json:"failures"`
	Evidence    int      `json:"evidence" jsonschema:"sources it was learned from"`
	State       string   `json:"state" jsonschema:"probation (not yet proven) or active"`
}

func (h *handlers) listProcedures(ctx context.Context, _ *mcp.CallToolRequest, in ListProceduresInput) (*mcp.CallToolResult, ListProceduresOutput, error) {
	limit := in.Limit
	if limit == 0 {
		limit = DefaultProcedureLimit
	}
	out := ListProceduresOutput{Procedures: []Procedure{}}
	err := h.procedures(ctx, func(rec memory.Record, p procedure) bool {
		if p.rate < in.MinSuccessRate {
			return true
		}
		if len(out.Procedures) == limit {
			out.More = true
			return false
		}
		out.Procedures = append(out.Procedures, p.Procedure)
		return true
	})
	if err != nil {
		return nil, ListProceduresOutput{}, toolError(err, nil)
	}
	return nil, out, nil
}

// --- propose_fact

// ProposeFactInput is a fact to store.
type ProposeFactInput struct {
	Subject    string   `json:"subject" jsonschema:"what the fact is about, such as user or service:api"`
	Predicate  string   `json:"predicate" jsonschema:"the property, such as prefers_language or runs_on"`
	Object     Value    `json:"object" jsonschema:"its value: a string, number, boolean, object or array"`
	Conditions Scalars  `json:"conditions,omitempty" jsonschema:"scalar context under which it holds, such as {\"os\": \"linux\"}; it holds everywhere when left out"`
	Confidence float64  `json:"confidence,omitempty" jsonschema:"0 to 1 (default: the server's)"`
	Scope      string   `json:"scope,omitempty" jsonschema:"such as a project or user"`
	Tags       []string `json:"tags,omitempty"`
	Rationale  string   `json:"rationale,omitempty" jsonschema:"why you believe it, kept in the audit trail"`
	Evidence   []Source `json:"evidence,omitempty" jsonschema:"what the fact rests on; the better its evidence, the more it outweighs a fact it contradicts (a person's word most, then an outcome, a tool call or an artifact, an observation or event, your own reasoning least)"`
	// RevisionPolicy is the payload's revision_policy (substrate RFC §7).
	RevisionPolicy string `json:"revision_policy,omitempty" jsonschema:"what to do with a fact it contradicts: replace it unless this one's evidence is clearly weaker; contest (both uncertain until resolved); fork (coexist when their conditions differ). Left out, the evidence decides"`
}

// Source is a piece of evidence: its kind and where it is.
type Source struct {
	Kind string `json:"kind" jsonschema:"human, outcome, tool_call, artifact, observation, event or reasoning"`
	Ref  string `json:"ref" jsonschema:"where the evidence is, such as chat://user/42 or a URL"`
}

var proposeFactInputSchema = schemaFor[ProposeFactInput](func(p map[string]*jsonschema.Schema) {
	p["subject"].MinLength, p["predicate"].MinLength = new(1), new(1)
	p["revision_policy"].Enum = enum("replace", "contest", "fork")
	p["evidence"].Items.Properties["kind"].Enum = enum("human", "outcome", "tool_call", "artifact", "observation", "event", "reasoning")
	p["evidence"].Items.Properties["ref"].MinLength = new(1)
	p["object"] = factObject(p["object"].Description)
	p["confidence"].Minimum, p["confidence"].Maximum = new(0.0), new(1.0)
})

// factObject is the schema of a fact's object: any JSON value but null.
func factObject(description string) *jsonschema.Schema {
	s := anyOf("string", "number", "boolean", "object", "array")
	s.Description = description
	return s
}

// ProposeFactOutput is what the write path did with a proposed fact.
type ProposeFactOutput struct {
	Outcome  string `json:"outcome" jsonschema:"created, absorbed (an identical live fact exists), merged, contested (it contradicts an active fact) or queued (a draft awaiting review)"`
	Message  string `json:"message"`
	RecordID string `json:"record_id" jsonschema:"the stored record, or the live one that absorbed it"`
	ReviewID string `json:"review_id,omitempty" jsonschema:"the review a queued draft waits on"`
	Record   Record `json:"record"`
}

func (h *handlers) proposeFact(ctx context.Context, _ *mcp.CallToolRequest, in ProposeFactInput) (*mcp.CallToolResult, ProposeFactOutput, error) {
	validity := map[string]any{"mode": "global"}
	if len(in.Conditions) > 0 {
		validity = map[string]any{"mode": "conditional", "conditions": in.Conditions}
	}
	body := map[string]any{"type": memory.Semantic, "payload": map[string]any{
		"kind": memory.Semantic, "subject": in.Subject, "predicate": in.Predicate, "object": in.Object, "validity": validity,
	}}
	if in.Confidence != 0 {
		body["confidence"] = in.Confidence
	}
	if in.RevisionPolicy != "" {
		body["payload"].(map[string]any)["revision_policy"] = in.RevisionPolicy
	}
	if len(in.Evidence) > 0 {
		body["provenance"] = map[string]any{"sources": in.Evidence}
	}
	if in.Scope != "" {
		body["scope"] = in.Scope
	}
	if len(in.Tags) > 0 {
		body["tags"] = in.Tags
	}
	a, err := h.c.Admit(ctx, body, in.Rationale)
	if err != nil {
		return nil, ProposeFactOutput{}, toolError(err, factPointer)
	}
	out := ProposeFactOutput{Outcome: a.Outcome, RecordID: a.Record.ID.String(), ReviewID: a.ReviewID, Record: newRecord(a.Record)}
	switch a.Outcome {
	case client.OutcomeCreated:
		out.Message = "Stored as an active fact; recall returns it from now on."
		var replaced []string
		for _, rel := range a.Record.Relations {
			if rel.Predicate == memory.Supersedes {
				replaced = append(replaced, rel.TargetID.String())
			}
		}
		if len(replaced) > 0 {
			out.Message += " Its evidence outweighs the fact it contradicted, which it supersedes: " + strings.Join(replaced, ", ") + "."
		}
	case client.OutcomeAbsorbed:
		out.Message = "Already known: the live record " + out.RecordID + " holds the same fact, and nothing new was stored."
	case client.OutcomeMerged:
		out.Message = "Merged into the live record " + out.RecordID + ", which now holds it."
	case client.OutcomeContested:
		out.Message = "Stored, but it contradicts an active fact: both are contested until a curator resolves them (record_history and get_record show them)."
	case client.OutcomeQueued:
		out.Message = "Held for review: draft " + out.RecordID + " waits in the review queue"
		if a.ReviewID != "" {
			out.Message += " (review " + a.ReviewID + ")"
		}
		out.Message += ". It is not recalled until a reviewer approves it; do not propose it again."
	default:
		out.Message = "The write path answered " + a.Outcome + "."
	}
	return nil, out, nil
}

// factPointer locates a field error of POST /v1/records in propose_fact's
// arguments.
func factPointer(p string) string {
	switch {
	case strings.HasPrefix(p, "/payload/validity/conditions"):
		return "conditions" + strings.TrimPrefix(p, "/payload/validity/conditions")
	case strings.HasPrefix(p, "/payload/"):
		return strings.TrimPrefix(p, "/payload/")
	case p == "/payload":
		return "subject, predicate, object"
	}
	if f, ok := strings.CutPrefix(p, "/"); ok && slices.Contains([]string{"confidence", "scope", "tags"}, strings.Split(f, "/")[0]) {
		return f
	}
	return p
}

// --- forget

// ForgetInput names the record to forget.
type ForgetInput struct {
	ID        string `json:"id" jsonschema:"the record's id"`
	Rationale string `json:"rationale,omitempty" jsonschema:"why, kept in the audit trail"`
}

// ForgetOutput is the record forgotten.
type ForgetOutput struct {
	Outcome string `json:"outcome" jsonschema:"retracted, or deleted (an episode)"`
	Message string `json:"message"`
	Record  Record `json:"record" jsonschema:"the record as it is now"`
}

// forget retracts a record (POST /v1/records/{id}:retract), or deletes an
// episode (DELETE /v1/records/{id}): episodes are append-only, so the
// write path retracts none (substrate RFC §5). The record is read first,
// for its type and version: a retraction of a record changed since is a
// conflict, not a withdrawal of what the agent did not see.
func (h *handlers) forget(ctx context.Context, _ *mcp.CallToolRequest, in ForgetInput) (*mcp.CallToolResult, ForgetOutput, error) {
	id, err := parseID("id", in.ID)
	if err != nil {
		return nil, ForgetOutput{}, err
	}
	cur, err := h.c.GetRecord(ctx, id)
	if err != nil {
		return nil, ForgetOutput{}, toolError(err, nil)
	}
	out := ForgetOutput{Outcome: "retracted",
		Message: "Retracted: it is no longer recalled; its history and audit trail keep it, and an operator can reinstate it."}
	var raw json.RawMessage
	if cur.Type == memory.Episodic {
		out.Outcome = "deleted"
		out.Message = "Deleted: it is no longer recalled, and is purged after the grace period; its audit trail keeps that it was."
		raw, err = h.c.DeleteRecord(ctx, id, in.Rationale)
	} else {
		raw, err = h.c.Revise(ctx, id, client.Retract, api.ReviseRequest{Version: cur.Version, Rationale: in.Rationale})
	}
	if err != nil {
		return nil, ForgetOutput{}, toolError(err, nil)
	}
	var rec memory.Record
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, ForgetOutput{}, fmt.Errorf("engramd answered unreadably: %v", err)
	}
	out.Record = newRecord(rec)
	return nil, out, nil
}
