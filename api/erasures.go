package api

import (
	"time"

	"github.com/google/uuid"
)

// ErasureRequest is the body of POST /v1/erasures: the identifiers of one
// data subject (write-path RFC §12.10.2, PII(s)). At least one is needed.
// Emails and names match whatever their case, names whatever the spaces
// between their words, phone numbers by their digits alone.
type ErasureRequest struct {
	Emails       []string `json:"emails,omitempty"`
	UserIDs      []string `json:"user_ids,omitempty"`
	Names        []string `json:"names,omitempty"`
	PhoneNumbers []string `json:"phone_numbers,omitempty"`
}

// Erasure statuses.
const (
	ErasureRunning     = "running"
	ErasureCompleted   = "completed"
	ErasureFailed      = "failed"
	ErasureInterrupted = "interrupted"
)

// Erasure is an erasure request as a job with status, and once it has
// completed, its certificate: what was erased (counts, never content), what
// was rebuilt without the subject, and the verification scan's result. It
// names the subject only by SubjectSHA256, the SHA-256 of the normalised
// identifiers, one "kind:value" a line, sorted.
type Erasure struct {
	ID            uuid.UUID      `json:"id"`
	SubjectSHA256 string         `json:"subject_sha256"`
	Identifiers   map[string]int `json:"identifiers"`
	// Status is running, completed, failed or interrupted (the daemon
	// stopped while it ran: submit it again).
	Status string `json:"status"`
	// Phase is the step a running erasure is at: matching, erasing,
	// rebuilding, scrubbing, verifying; done once it has ended.
	Phase        string        `json:"phase"`
	Counts       ErasureCounts `json:"counts"`
	Rebuilt      []uuid.UUID   `json:"rebuilt"`
	Verification *Verification `json:"verification,omitempty"`
	// Verified is true when the verification scan found nothing of the
	// subject left in the tenant.
	Verified    bool       `json:"verified"`
	Error       string     `json:"error,omitempty"`
	RequestedAt time.Time  `json:"requested_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
}

// ErasureCounts counts what an erasure deleted: records per layer, and
// the other traces of the subject.
type ErasureCounts struct {
	Episodic   int `json:"episodic"`
	Working    int `json:"working"`
	Semantic   int `json:"semantic"`
	Competence int `json:"competence"`
	PlanGraph  int `json:"plan_graph"`
	// StagedEvents are raw events deleted from staging (candidates).
	StagedEvents int `json:"staged_events"`
	// TimelineEntries are the erased episodes' timeline entries.
	TimelineEntries int `json:"timeline_entries"`
	Vectors         int `json:"vectors"`
	Versions        int `json:"versions"`
	Artifacts       int `json:"artifacts"`
	// RetrievalLogEntries were deleted (they named the subject) or had
	// erased records taken out of them.
	RetrievalLogEntries int `json:"retrieval_log_entries"`
	AuditEntries        int `json:"audit_entries"`
	// Other rows: agents' reputation named by the subject, lexical
	// statistics refreshed without the erased records.
	Other int `json:"other"`
}

// Verification is the result of a scan of every text, JSON and binary
// column of every table that holds the tenant's rows, found by walking
// information_schema (so tables added later are covered), for each of the
// subject's identifiers.
type Verification struct {
	// Verified: no identifier was found anywhere.
	Verified bool `json:"verified"`
	// Tables and Columns are how many were scanned.
	Tables  int `json:"tables"`
	Columns int `json:"columns"`
	// Remaining lists the columns where an identifier was found, and how
	// many rows: never the values.
	Remaining []Remaining `json:"remaining"`
	At        time.Time   `json:"at"`
}

// Remaining is a column in which the verification scan found the subject.
type Remaining struct {
	Table  string `json:"table"`
	Column string `json:"column"`
	Rows   int    `json:"rows"`
}
