package api

import (
	"time"

	"github.com/google/uuid"
)

// Problem is an RFC 9457 problem details response
// (application/problem+json), the body of every error answer. Type is a
// stable URN clients may switch on (urn:engram:problem:…); Errors lists
// field-level violations; RecordIDs names the records a conflict is
// about.
type Problem struct {
	Type      string       `json:"type"`
	Title     string       `json:"title"`
	Status    int          `json:"status"`
	Detail    string       `json:"detail,omitempty"`
	Instance  string       `json:"instance,omitempty"`
	Errors    []FieldError `json:"errors,omitempty"`
	RecordIDs []uuid.UUID  `json:"record_ids,omitempty"`
	// Gate and Reason name the gate of the write path that refused a write
	// and its structured reason (write-rejected problems).
	Gate   string `json:"gate,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Rule names the access rule that refused a request (access-denied
	// problems, write-path RFC §12.8.2); Budget the write budget a
	// request would overspend (budget-exceeded problems, §12.11.2).
	Rule   string `json:"rule,omitempty"`
	Budget string `json:"budget,omitempty"`
	// RetryAfter is the Retry-After header of a 429 or 503, not part of
	// the body.
	RetryAfter time.Duration `json:"-"`
	// Holder is the agent holding the lease a lease-held problem ran into
	// (write-path RFC §12.8.3), LeaseExpiresAt when that lease runs out (the
	// Retry-After header says the same in seconds). CurrentFencingToken is
	// the token a stale-fencing-token problem's write was older than.
	Holder              string     `json:"holder,omitempty"`
	LeaseExpiresAt      *time.Time `json:"lease_expires_at,omitempty"`
	CurrentFencingToken int64      `json:"current_fencing_token,omitempty"`
	// Operation is the index of the operation of POST /v1/records:batch
	// that failed: nothing of the batch was written.
	Operation *int `json:"operation,omitempty"`
}

// Error is the problem's title and, when it has one, its detail.
func (p *Problem) Error() string {
	if p.Detail == "" {
		return p.Title
	}
	return p.Title + ": " + p.Detail
}

// FieldError is one violation of a [Problem]: a JSON pointer into the
// request body, or the name of a query parameter or header.
type FieldError struct {
	Pointer   string `json:"pointer,omitempty"`
	Parameter string `json:"parameter,omitempty"`
	Header    string `json:"header,omitempty"`
	Message   string `json:"message"`
}

// IdempotencyKeyHeader is the request header a write carries its
// idempotency key in (write-path RFC §12.1.6–12.1.7): a write sent again
// with the key of one that succeeded is answered with that one's result,
// marked with [IdempotentReplayHeader], and made once.
const IdempotencyKeyHeader = "Idempotency-Key"

// IdempotentReplayHeader marks an answer replayed for an idempotency key.
const IdempotentReplayHeader = "Idempotent-Replayed"
