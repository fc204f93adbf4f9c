package api

import (
	"time"

	"github.com/engram-dev/engram/memory"
)

// APIKey is a key kept in the database (GET /v1/keys): everything about it
// but its secret, which is stored only as a SHA-256 hash (write-path RFC
// §12.8.2).
type APIKey struct {
	Name string `json:"name"`
	// Tenant is empty for an operator key.
	Tenant    string             `json:"tenant,omitempty"`
	Role      string             `json:"role"`
	AgentID   string             `json:"agent_id,omitempty"`
	Domains   []string           `json:"domains"`
	Clearance memory.Sensitivity `json:"clearance"`
	CreatedAt time.Time          `json:"created_at"`
	RevokedAt *time.Time         `json:"revoked_at,omitempty"`
}

// KeyRequest is the body of POST /v1/keys. Clearance defaults to hyper
// (every classification), Domains to every domain; an executor names its
// agent.
type KeyRequest struct {
	Name      string             `json:"name"`
	Tenant    string             `json:"tenant,omitempty"`
	Role      string             `json:"role"`
	AgentID   string             `json:"agent_id,omitempty"`
	Domains   []string           `json:"domains,omitempty"`
	Clearance memory.Sensitivity `json:"clearance,omitempty"`
}

// CreatedKey is the answer of POST /v1/keys: the key and its secret, shown
// this once and never again.
type CreatedKey struct {
	APIKey
	Secret string `json:"secret"`
}

// KeyList is the answer of GET /v1/keys.
type KeyList struct {
	Keys []APIKey `json:"keys"`
}
