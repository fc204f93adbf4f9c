package mcpserver

import (
	"encoding/json"
	"time"

	"github.com/engram-dev/engram/api"
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

func summarize(typ memory.Type, payload json.RawMessage) string {
	return api.Summarize(typ, payload, summaryWidth)
}
