package api

import "time"

// ComplianceReport is what the compliance job found (write-path RFC
// §12.10.5), the answer of GET /v1/compliance: the records past their
// retention not yet acted on, the violations, and the erasures not yet
// complete. It names records by id and tenant, never by content.
type ComplianceReport struct {
	GeneratedAt time.Time `json:"generated_at"`
	// RunID is the compliance job run that wrote it, when a run did.
	RunID int64 `json:"run_id,omitempty"`
	// PastRetention is how many records, of every class, are past their
	// retention and not yet acted on.
	PastRetention int64 `json:"past_retention"`
	// Retention is each retention class: its limit and what is past it.
	Retention []RetentionClassReport `json:"retention"`
	// Violations are what must not be, each a P0 incident (§12.10.5).
	Violations []ComplianceViolation `json:"violations"`
	Erasures   ErasureReport         `json:"erasures"`
}

// RetentionClassReport is one retention class in a [ComplianceReport].
type RetentionClassReport struct {
	// Class is pii, business_sensitive, general or public.
	Class string `json:"class"`
	// MaxAge is the class's maximum retention ("90d"); empty means none.
	MaxAge string `json:"max_age,omitempty"`
	// Action is hard_delete or soft_delete.
	Action string `json:"action"`
	// Cutoff is the creation time before which a record of the class is
	// past retention; absent when the class has no limit.
	Cutoff *time.Time `json:"cutoff,omitempty"`
	// PastRetention counts the class's records past retention that the
	// retention job has yet to act on: under hard_delete every one still
	// stored, under soft_delete those not expired yet.
	PastRetention int64 `json:"past_retention"`
	// Retrievable counts those of them still live (active or contested).
	Retrievable int64 `json:"retrievable"`
	// Tenants break PastRetention down by tenant.
	Tenants []RetentionTenant `json:"tenants,omitempty"`
}

// RetentionTenant is one tenant's records past retention in one class.
type RetentionTenant struct {
	Tenant        string `json:"tenant"`
	PastRetention int64  `json:"past_retention"`
	Retrievable   int64  `json:"retrievable"`
	// OldestCreatedAt is when the oldest of them was created.
	OldestCreatedAt time.Time `json:"oldest_created_at"`
}

// Violation kinds of a [ComplianceViolation].
const (
	// ViolationRetentionOverdue: records still past retention (not acted
	// on) longer than the report's grace after their cutoff: the retention
	// job is off, failing or behind.
	ViolationRetentionOverdue = "retention_overdue"
	// ViolationPIIUnmarked: records tagged pii with a sensitivity below
	// medium, so trust gating would serve personal data to any caller.
	ViolationPIIUnmarked = "pii_unmarked"
	// ViolationCreatedInFuture: records created after the report's time
	// (beyond clock skew), out of retention's reach until then.
	ViolationCreatedInFuture = "created_in_future"
)

// ComplianceViolation is one kind of violation in one tenant.
type ComplianceViolation struct {
	Kind string `json:"kind"`
	// Severity is P0: every violation is an incident (§12.10.5).
	Severity string `json:"severity"`
	Tenant   string `json:"tenant"`
	// Class is the retention class, for retention_overdue.
	Class  string `json:"class,omitempty"`
	Count  int64  `json:"count"`
	Detail string `json:"detail"`
	// RecordIDs are up to five of the records, as examples.
	RecordIDs []string `json:"record_ids,omitempty"`
}

// ErasureReport is the erasure section of a [ComplianceReport]: the
// erasure requests (write-path RFC §12.10.2) not yet fully executed.
type ErasureReport struct {
	// Checked is false when this daemon cannot check erasures; Detail
	// says why.
	Checked bool   `json:"checked"`
	Detail  string `json:"detail,omitempty"`
	// Incomplete are the requests not yet complete.
	Incomplete []PendingErasure `json:"incomplete"`
}

// PendingErasure is an erasure request not yet complete. It names the
// request, never the data subject.
type PendingErasure struct {
	ID          string    `json:"id"`
	Status      string    `json:"status"`
	RequestedAt time.Time `json:"requested_at"`
	Detail      string    `json:"detail,omitempty"`
}
