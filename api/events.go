package api

import "github.com/google/uuid"

// StagedEvents is the answer of POST /v1/events: each event of the
// request, in order, staged durably for classification.
type StagedEvents struct {
	Events []StagedEvent `json:"events"`
}

// StagedEvent is the answer for one staged event: its id, and whether it
// was a retry absorbed into an event staged before.
type StagedEvent struct {
	ID        uuid.UUID `json:"id"`
	Duplicate bool      `json:"duplicate"`
}

// StreamAck is one line of the NDJSON answer of POST /v1/events:stream: the
// staged event of a request line, or the problem that refused it.
type StreamAck struct {
	Line      int      `json:"line"`
	ID        string   `json:"id,omitempty"`
	Duplicate bool     `json:"duplicate,omitempty"`
	Error     *Problem `json:"error,omitempty"`
}
