package api

import (
	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
)

// FeedbackRequest is the body of POST /v1/feedback: how the records of a
// retrieval served the task (substrate RFC §15.6), which reinforces or
// penalises them.
//
// RetrievalID names an answer of POST /v1/retrieve: the outcome applies to
// exactly the records it returned, or to those of RecordIDs, which must be
// among them. Without a retrieval, RecordIDs names the records and Key,
// when set, is an idempotency key. Record ids are strings so that the
// server reports a malformed one at its place.
type FeedbackRequest struct {
	RetrievalID string   `json:"retrieval_id,omitempty"`
	Key         string   `json:"key,omitempty"`
	RecordIDs   []string `json:"record_ids,omitempty"`
	// Outcome is used_success (reinforce), used_failure (penalise) or
	// unused (penalise a little).
	Outcome   string          `json:"outcome"`
	Rationale string          `json:"rationale,omitempty"`
	Evidence  []memory.Source `json:"evidence,omitempty"`
}

// FeedbackResult is the answer of POST /v1/feedback: what the feedback
// changed. Duplicate records had feedback in the same scope already;
// NotLive records have left the active set. Neither changed.
type FeedbackResult struct {
	Applied   int              `json:"applied"`
	Records   []FeedbackRecord `json:"records"`
	Duplicate []uuid.UUID      `json:"duplicate"`
	NotLive   []uuid.UUID      `json:"not_live"`
}

// FeedbackRecord is a record's state after feedback.
type FeedbackRecord struct {
	ID       uuid.UUID `json:"id"`
	Salience float64   `json:"salience"`
	Version  int       `json:"version"`
}
