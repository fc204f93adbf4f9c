package api

import (
	"time"

	"github.com/google/uuid"
)

// FencingTokenHeader is the request header a write to a record carries its
// lease's fencing token in (write-path RFC §12.8.3): PATCH and DELETE
// /v1/records/{id}, POST /v1/records (a record created in a leased scope),
// POST /v1/records:merge and every POST /v1/records/{id}:{op}. A write
// whose token is older than the current token of the record, or of its
// scope, is refused with a stale-fencing-token problem.
const FencingTokenHeader = "X-Engram-Fencing-Token"

// Lease is a lease-based write lock on one record or one scope (write-path
// RFC §12.8.3): the answer of POST /v1/leases, GET /v1/leases/{id} and the
// renew and release methods.
type Lease struct {
	ID uuid.UUID `json:"id"`
	// RecordID or Scope names what is leased; exactly one is set. A scope
	// lease covers every record whose scope it is.
	RecordID *uuid.UUID `json:"record_id,omitempty"`
	Scope    string     `json:"scope,omitempty"`
	// AgentID is the holder.
	AgentID string `json:"agent_id"`
	// FencingToken is the grant's token: writes under the lease carry it
	// in the X-Engram-Fencing-Token header. Every new grant on the
	// resource gets a larger one; a renewal keeps it.
	FencingToken int64     `json:"fencing_token"`
	GrantedAt    time.Time `json:"granted_at"`
	ExpiresAt    time.Time `json:"expires_at"`
	// ReleasedAt is when the holder released the lease, if it did.
	ReleasedAt *time.Time `json:"released_at,omitempty"`
	// Status is active, expired or released, as of the answer.
	Status string `json:"status"`
	// Outcome is what POST /v1/leases did: granted (a new grant, a new
	// token) or renewed (the agent held it already: same id, same token,
	// a later expiry). Other answers leave it out.
	Outcome string `json:"outcome,omitempty"`
}

// Lease statuses and outcomes.
const (
	LeaseActive   = "active"
	LeaseExpired  = "expired"
	LeaseReleased = "released"
	LeaseGranted  = "granted"
	LeaseRenewed  = "renewed"
)

// LeaseRequest is the body of POST /v1/leases: a lease on a record
// (RecordID) or on a scope (Scope), for AgentID, for TTLSeconds (the
// configured default when zero; within the configured bounds, 30–120 s by
// default).
type LeaseRequest struct {
	RecordID   *uuid.UUID `json:"record_id,omitempty"`
	Scope      string     `json:"scope,omitempty"`
	AgentID    string     `json:"agent_id,omitempty"`
	TTLSeconds int        `json:"ttl_seconds,omitempty"`
}

// LeaseRenewRequest is the body of POST /v1/leases/{id}:renew and (without
// TTLSeconds) of POST /v1/leases/{id}:release; an empty body takes the
// agent from X-Engram-Actor.
type LeaseRenewRequest struct {
	AgentID    string `json:"agent_id,omitempty"`
	TTLSeconds int    `json:"ttl_seconds,omitempty"`
}
