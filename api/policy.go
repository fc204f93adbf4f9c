package api

import (
	"encoding/json"

	"github.com/engram-dev/engram/memory"
)

// PolicyExplanation is the answer of POST /v1/policy:explain: what the
// policy in force would do with an event — the event as redaction leaves
// it, what redaction replaced, and the decision. Nothing is stored.
type PolicyExplanation struct {
	// Policy names where the policy in force came from.
	Policy     string          `json:"policy"`
	Event      json.RawMessage `json:"event"`
	Redactions []string        `json:"redactions,omitempty"`
	Decision   PolicyDecision  `json:"decision"`
}

// PolicyDecision is how the policy plane classifies one event (substrate
// RFC §15.5: type, sensitivity, initial confidence, decay curve, scope and
// visibility), and which operator rules decided it.
type PolicyDecision struct {
	// Type is the record the event becomes beyond its episode's timeline:
	// semantic for a fact, episodic for everything else (timeline only).
	Type        memory.Type        `json:"type"`
	Drop        bool               `json:"drop,omitempty"`
	Sensitivity memory.Sensitivity `json:"sensitivity"`
	Confidence  float64            `json:"confidence"`
	Scope       string             `json:"scope,omitempty"`
	Visibility  string             `json:"visibility"`
	Decay       *memory.Decay      `json:"decay,omitempty"`
	// Rules are the operator rules that matched, in order; empty when the
	// classifier decided alone.
	Rules      []string `json:"rules,omitempty"`
	Classifier string   `json:"classifier"`
}
