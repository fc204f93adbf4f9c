package api

import (
	"time"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
)

// Review is a write waiting for, or decided by, a human reviewer
// (write-path RFC §12.6): the draft record it holds back, why, and what
// became of it. It is the answer of GET /v1/reviews/{id} and of the
// approve and reject methods; Record is the draft (or, once decided, what
// it became).
type Review struct {
	ID       uuid.UUID `json:"id"`
	RecordID uuid.UUID `json:"record_id"`
	// Tier is async (the writer went on; the draft waits) or sync (the
	// writer waits until SLADeadline, then the write is refused).
	Tier string `json:"tier"`
	// Status is pending, approved, rejected or expired (a sync review
	// whose deadline passed undecided).
	Status string `json:"status"`
	// Risk is the write's risk score R(w), RiskFactors the factor values
	// it was computed from (§12.6.2).
	Risk        float64            `json:"risk"`
	RiskFactors map[string]float64 `json:"risk_factors"`
	// Reasons say why the write needs review.
	Reasons []string `json:"reasons"`
	// Proposal is what approving does beyond activating the draft.
	Proposal    *ReviewProposal `json:"proposal,omitempty"`
	AgentID     string          `json:"agent_id,omitempty"`
	CreatedAt   time.Time       `json:"created_at"`
	SLADeadline time.Time       `json:"sla_deadline"`
	// EscalatedAt is when the review passed its SLA undecided.
	EscalatedAt *time.Time `json:"escalated_at,omitempty"`
	DecidedAt   *time.Time `json:"decided_at,omitempty"`
	// DecidedBy is the approver (the API key's name and X-Engram-Actor).
	DecidedBy       string `json:"decided_by,omitempty"`
	Justification   string `json:"justification,omitempty"`
	RejectionReason string `json:"rejection_reason,omitempty"`
	// Record is the draft record under review, as it stands now.
	Record *memory.Record `json:"record,omitempty"`
}

// ReviewProposal is what approving a review does beyond activating its
// draft. Supersedes names a record the draft replaces when approved: it
// leaves the active set with a supersedes relation from the draft, in the
// same transaction.
type ReviewProposal struct {
	Supersedes uuid.UUID `json:"supersedes"`
}

// ReviewPage is the answer of GET /v1/reviews: one page of the tenant's
// reviews, oldest first. NextCursor, the cursor parameter of the next
// page, is empty on the last.
type ReviewPage struct {
	Reviews    []Review `json:"reviews"`
	NextCursor string   `json:"next_cursor,omitempty"`
}

// ApproveRequest is the body of POST /v1/reviews/{id}:approve.
type ApproveRequest struct {
	Justification string `json:"justification"`
}

// RejectRequest is the body of POST /v1/reviews/{id}:reject. Reason is one
// of factual_error, policy_violation, duplicate, insufficient_evidence,
// contradiction or other.
type RejectRequest struct {
	Reason        string `json:"reason"`
	Justification string `json:"justification"`
}
