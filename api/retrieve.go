package api

import (
	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
)

// RetrieveRequest is the body of POST /v1/retrieve: what memory helps with
// a task, within a trust context (substrate RFC §15.8), and how much of it
// to return.
type RetrieveRequest struct {
	Task   Task   `json:"task"`
	Trust  Trust  `json:"trust,omitzero"`
	Budget Budget `json:"budget,omitzero"`
}

// Task describes what the agent is about to do: free text, an intent label,
// signals (error messages), the tools in play, the context conditions (os,
// project kind, any keys: scalar values), and where it happens.
type Task struct {
	Text       string         `json:"text,omitempty"`
	Intent     string         `json:"intent,omitempty"`
	Signals    []string       `json:"signals,omitempty"`
	Tools      []string       `json:"tools,omitempty"`
	Conditions map[string]any `json:"conditions,omitempty"`
	ThreadID   string         `json:"thread_id,omitempty"`
	AgentID    string         `json:"agent_id,omitempty"`
	Scope      string         `json:"scope,omitempty"`
}

// Trust is who is asking (substrate RFC §13, §15.9): the clearance granted,
// whether the person at the agent is authenticated, and the environment the
// answer will be shown in (shared_screen, ci, …), which may lower the
// clearance.
type Trust struct {
	Clearance     memory.Sensitivity `json:"clearance,omitempty"`
	Authenticated *bool              `json:"authenticated,omitempty"`
	Environment   string             `json:"environment,omitempty"`
}

// Budget caps the answer: items and approximate tokens in all, and items
// per layer. Absent fields take the configured defaults.
type Budget struct {
	Items  *int              `json:"items,omitempty"`
	Tokens *int              `json:"tokens,omitempty"`
	Layers map[LayerName]int `json:"layers,omitempty"`
}

// LayerName names a layer of the answer.
type LayerName string

// The layers, in the order of substrate RFC §15.8: the thread's working
// memory, facts, procedures, plans, and episodes where the layers above
// leave the budget unspent.
const (
	LayerWorking    LayerName = "working"
	LayerSemantic   LayerName = "semantic"
	LayerCompetence LayerName = "competence"
	LayerPlan       LayerName = "plan"
	LayerEpisodic   LayerName = "episodic"
)

// Gating is what trust gating does to a record the caller may see but
// whose sensitivity is at the limit of the caller's clearance (substrate
// RFC §13, §15.9). The stored record never changes.
type Gating string

// Gatings. An answer holds no withheld item: [RetrieveResult.Withheld]
// counts them.
const (
	GatingReturn    Gating = "return"    // the record as stored
	GatingSummarise Gating = "summarise" // structure kept, content replaced by [WITHHELD]
	GatingRedact    Gating = "redact"    // secrets and personal data replaced, as at write (SR-1)
	GatingWithhold  Gating = "withhold"  // left out, and counted as withheld
)

// RetrieveResult is the answer of POST /v1/retrieve, layered (substrate RFC
// §15.8): structured records, never a blob of text.
type RetrieveResult struct {
	// RetrievalID names the answer in POST /v1/feedback.
	RetrievalID uuid.UUID `json:"retrieval_id"`
	// Clearance is the clearance the answer was gated at: the request's,
	// lowered by an unauthenticated caller or the environment.
	Clearance memory.Sensitivity `json:"clearance"`
	Layers    []Layer            `json:"layers"`
	// Withheld counts the records the trust context kept back: never
	// which.
	Withheld int `json:"withheld"`
	// LexicalOnly says vector search took no part, and Notes why.
	LexicalOnly bool        `json:"lexical_only"`
	Notes       []string    `json:"notes,omitempty"`
	Budget      BudgetUsage `json:"budget"`
}

// BudgetUsage is how much of the budget an answer spent, and the limits it
// was held to.
type BudgetUsage struct {
	Items       int `json:"items"`
	Tokens      int `json:"tokens"`
	ItemsLimit  int `json:"items_limit"`
	TokensLimit int `json:"tokens_limit"`
}

// Layer is one layer of the answer, best first.
type Layer struct {
	Name  LayerName `json:"layer"`
	Items []Item    `json:"items"`
	// Omitted counts matching records the budget left out.
	Omitted int `json:"omitted,omitempty"`
	// NeedsDisambiguation says several procedures or plans match about
	// equally well (substrate RFC §15A.11); SeparatingKeys are the
	// condition keys whose values would tell them apart.
	NeedsDisambiguation bool     `json:"needs_disambiguation,omitempty"`
	SeparatingKeys      []string `json:"separating_keys,omitempty"`
}

// Item is one record of the answer, as trust gating shows it, with its
// score and why it matched.
type Item struct {
	Record memory.Record `json:"record"`
	Score  float64       `json:"score"`
	Gating Gating        `json:"gating"`
	Tokens int           `json:"tokens"`
	Why    Why           `json:"why"`
}

// Why explains an item's score.
type Why struct {
	// Lexical is the BM25 score normalised by the layer's best; BM25 the
	// raw score and Terms the query's lexemes the record holds.
	Lexical float64  `json:"lexical"`
	BM25    float64  `json:"bm25"`
	Terms   []string `json:"terms,omitempty"`
	// Vector is the cosine similarity with the task's vector, when vector
	// search found the record.
	Vector     *float64 `json:"vector,omitempty"`
	Relevance  float64  `json:"relevance"`
	Salience   float64  `json:"salience"`
	Confidence float64  `json:"confidence"`
	Provenance float64  `json:"provenance"`
	// Applicability is the share of the record's conditions the task
	// satisfies (none is violated, or it would not be here);
	// MatchedConditions and UnknownConditions name them.
	Applicability     *float64 `json:"applicability,omitempty"`
	MatchedConditions []string `json:"matched_conditions,omitempty"`
	UnknownConditions []string `json:"unknown_conditions,omitempty"`
	// MatchedSignal is the trigger a procedure matched on. SignatureMatch
	// says it is the task's problem: its signature (the message without the
	// values that vary: paths, quoted names, numbers) is that of one of the
	// task's signals, or of its text; such procedures come first in their
	// layer. SignalCoverage is the share of the trigger signature's words
	// the task names (1 on a signature match), which scales the lexical
	// relevance of a procedure: sharing one word is a weak match.
	MatchedSignal  string   `json:"matched_signal,omitempty"`
	SignatureMatch bool     `json:"signature_match,omitempty"`
	SignalCoverage *float64 `json:"signal_coverage,omitempty"`
	// Bindings are, on a signature match, the values of the procedure's
	// variables in the task's signal ({path} → /srv/app-3fa20c), for each
	// variable its recipe says where in the trigger to find (args_schema
	// variables' from_signal): a client follows the recipe by replacing
	// each {name} by its binding, without knowing how engram names them.
	Bindings map[string]string `json:"bindings,omitempty"`
	// Followable says a procedure is the task's to follow as it is: its
	// trigger matched the task's problem (SignatureMatch) and every
	// variable of its recipe is bound. A procedure that is not followable
	// is related knowledge, not the task's procedure.
	Followable bool `json:"followable,omitempty"`
	// SuccessRate is a procedure's or plan's smoothed success rate, and
	// Recency how recently it was reinforced (1 now, ½ after 30 days).
	SuccessRate *float64 `json:"success_rate,omitempty"`
	Recency     *float64 `json:"recency,omitempty"`
	IntentMatch bool     `json:"intent_match,omitempty"`
}
