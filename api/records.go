package api

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
)

// RecordPage is the answer of GET /v1/records: one page of a listing.
// NextCursor, the cursor parameter of the next page, is empty on the last.
type RecordPage struct {
	Records    []memory.Record `json:"records"`
	NextCursor string          `json:"next_cursor,omitempty"`
}

// RecordHistory is the answer of GET /v1/records/{id}/history: every
// version of a record, oldest first.
type RecordHistory struct {
	Versions []RecordVersion `json:"versions"`
}

// RecordVersion is one revision of a record from the version log, as it
// was stored then.
type RecordVersion struct {
	Version    int           `json:"version"`
	RecordedAt time.Time     `json:"recorded_at"`
	Record     memory.Record `json:"record"`
}

// AuditTrail is the answer of GET /v1/records/{id}/audit: the record's
// audited actions, oldest first.
type AuditTrail struct {
	Entries []AuditEntry `json:"entries"`
}

// AuditEntry is one audited action on a record (substrate RFC §15A.8).
type AuditEntry struct {
	ID        int64           `json:"id"`
	RecordID  uuid.UUID       `json:"record_id"`
	Action    string          `json:"action"`
	Actor     string          `json:"actor"`
	At        time.Time       `json:"at"`
	Version   *int            `json:"version,omitempty"`
	Rationale string          `json:"rationale,omitempty"`
	Evidence  []memory.Source `json:"evidence"`
}

// RecordRelations is the answer of GET /v1/records/{id}/relations.
type RecordRelations struct {
	Relations []Edge `json:"relations"`
}

// Edge is a relation seen from one record: outgoing (the record is the
// source) or incoming (the record is the target).
type Edge struct {
	SourceID  uuid.UUID        `json:"source_id"`
	Predicate memory.Predicate `json:"predicate"`
	TargetID  uuid.UUID        `json:"target_id"`
	Weight    *float64         `json:"weight,omitempty"`
	CreatedAt time.Time        `json:"created_at"`
}

// UpdateRequest is the body of PATCH /v1/records/{id}, which revises
// working memory only. Version is the version revised; absent, the
// If-Match header's.
type UpdateRequest struct {
	Version   int             `json:"version,omitempty"`
	Rationale string          `json:"rationale,omitempty"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	Tags      []string        `json:"tags,omitempty"`
}

// ReviseRequest is the body of the revision methods, POST
// /v1/records/{id}:{supersede|fork|contest|retract|rollback|quarantine|
// release|append|restore|purge|pin|unpin|reclassify|annotate} and POST
// /v1/records:merge; each uses the fields that apply to it.
// Version, where it applies, is the version revised: a stale one is a
// conflict.
type ReviseRequest struct {
	Version   int             `json:"version,omitempty"`
	Rationale string          `json:"rationale,omitempty"`
	Evidence  []memory.Source `json:"evidence,omitempty"`
	// Record is the new record of supersede and contest, and the template
	// of merge.
	Record json.RawMessage `json:"record,omitempty"`
	// Variants are the records of fork.
	Variants []json.RawMessage `json:"variants,omitempty"`
	// Against are the records contest sets the record against.
	Against []uuid.UUID `json:"against,omitempty"`
	// RecordIDs are the records merge merges.
	RecordIDs []uuid.UUID `json:"record_ids,omitempty"`
	// Timeline, ToolGraph, Artifacts and Outcome are what append adds to
	// an episode.
	Timeline  []memory.TimelineEntry `json:"timeline,omitempty"`
	ToolGraph []map[string]any       `json:"tool_graph,omitempty"`
	Artifacts []string               `json:"artifacts,omitempty"`
	Outcome   string                 `json:"outcome,omitempty"`
	// DeletionPolicy is what pin and unpin set the record's deletion
	// policy to, when set; Sensitivity is the class reclassify gives it;
	// Note is annotate's curation note (write-path RFC §12.7.4).
	DeletionPolicy memory.DeletionPolicy `json:"deletion_policy,omitempty"`
	Sensitivity    memory.Sensitivity    `json:"sensitivity,omitempty"`
	Note           string                `json:"note,omitempty"`
}

// Batch operations: what one operation of POST /v1/records:batch does.
const (
	BatchCreate    = "create"    // POST /v1/records: Record
	BatchUpdate    = "update"    // PATCH /v1/records/{id}: ID, Version, Payload, Tags
	BatchSupersede = "supersede" // POST /v1/records/{id}:supersede: ID, Version, Record
	BatchAppend    = "append"    // POST /v1/records/{id}:append: ID, Timeline
	BatchDelete    = "delete"    // DELETE /v1/records/{id}: ID
)

// BatchRequest is the body of POST /v1/records:batch: operations the
// write path runs in one transaction, in order, committed together or not
// at all (substrate RFC §15.7: no partial revision is visible). Rationale
// is each operation's unless it has its own.
type BatchRequest struct {
	Operations []BatchOperation `json:"operations"`
	Rationale  string           `json:"rationale,omitempty"`
}

// BatchOperation is one operation of a [BatchRequest]: Op (such as
// [BatchCreate]) and the fields of the single request it stands for.
type BatchOperation struct {
	Op        string                 `json:"op"`
	ID        uuid.UUID              `json:"id,omitzero"`
	Version   int                    `json:"version,omitempty"`
	Record    json.RawMessage        `json:"record,omitempty"`
	Payload   json.RawMessage        `json:"payload,omitempty"`
	Tags      []string               `json:"tags,omitempty"`
	Timeline  []memory.TimelineEntry `json:"timeline,omitempty"`
	Rationale string                 `json:"rationale,omitempty"`
}

// BatchResult is the answer of POST /v1/records:batch: one result per
// operation, in order.
type BatchResult struct {
	Results []BatchOutcome `json:"results"`
}

// BatchOutcome is what one operation wrote: the record as it is after it
// (the new record of a supersede, whose Superseded is the old one); for a
// create, Outcome is the write path's (created, absorbed, merged, queued).
type BatchOutcome struct {
	Op         string         `json:"op"`
	Record     memory.Record  `json:"record"`
	Superseded *memory.Record `json:"superseded,omitempty"`
	Outcome    string         `json:"outcome,omitempty"`
}
