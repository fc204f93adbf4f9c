package api

import (
	"encoding/json"
	"time"

	"github.com/engram-dev/engram/memory"
)

// DecayPreviewRequest is the body of POST /v1/decay/preview.
type DecayPreviewRequest struct {
	// At is the horizon: a duration ahead ("+30d", "12h") or an RFC 3339
	// time; absent, 30 days ahead.
	At string `json:"at,omitempty"`
	// Proposed is the decay section of an engramd configuration, over the
	// defaults; absent, the configuration in force. The section may also
	// be sent alone as the body, in YAML as the configuration file has it
	// (Content-Type: application/yaml), with the horizon as the parameter
	// at.
	Proposed json.RawMessage `json:"proposed,omitempty"`
}

// DecayPreview is the answer of POST /v1/decay/preview: what a proposed
// decay configuration would do to a tenant's active set, beside the
// configuration in force — the salience distribution of each type now and
// at the horizon, and how many records a sweep would expire then, assuming
// no reinforcement in between. Nothing is changed.
type DecayPreview struct {
	Now    time.Time `json:"now"`
	At     time.Time `json:"at"`
	Bounds []float64 `json:"bounds"`
	// Current and Proposed are the decay sections in force and proposed,
	// every default filled in, as engramd's configuration file writes
	// them (the decay package's Config): profiles, prune_threshold,
	// purge_grace, batch_size.
	Current  json.RawMessage `json:"current"`
	Proposed json.RawMessage `json:"proposed"`
	// CurrentYAML and ProposedYAML are the same sections in YAML, as they
	// go under decay: in the configuration file.
	CurrentYAML  string                            `json:"current_yaml"`
	ProposedYAML string                            `json:"proposed_yaml"`
	Types        map[memory.Type]*DecayTypePreview `json:"types"`
}

// DecayTypePreview is one type's part of a [DecayPreview].
type DecayTypePreview struct {
	Records  int                `json:"records"`
	Current  SalienceProjection `json:"current"`
	Proposed SalienceProjection `json:"proposed"`
}

// SalienceProjection is a type's salience under one configuration: its
// distribution now and at the horizon, and how many records a sweep would
// expire at each time.
type SalienceProjection struct {
	Now      SalienceHistogram `json:"now"`
	At       SalienceHistogram `json:"at"`
	PruneNow int               `json:"prune_now"`
	PruneAt  int               `json:"prune_at"`
}

// SalienceHistogram is a salience distribution over the answer's bounds:
// Counts[i] records have a salience above Bounds[i-1] and at most
// Bounds[i]; the last count is of the records above the last bound.
type SalienceHistogram struct {
	Counts []int   `json:"counts"`
	Mean   float64 `json:"mean"`
}

// SalienceStats is the answer of GET /v1/stats/salience: the salience of a
// tenant's active set now, by type.
type SalienceStats struct {
	At             time.Time                          `json:"at"`
	PruneThreshold float64                            `json:"prune_threshold"`
	Bounds         []float64                          `json:"bounds"`
	Types          map[memory.Type]*SalienceTypeStats `json:"types"`
}

// SalienceTypeStats is one type's part of [SalienceStats]: how many live
// records, their salience and how many the next sweep would expire.
type SalienceTypeStats struct {
	Records  int               `json:"records"`
	Salience SalienceHistogram `json:"salience"`
	Prunable int               `json:"prunable"`
}
