package server

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/access"
	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/revise"
)

// leaseAgent is the agent a lease request, or a write under the leases,
// acts for (write-path RFC §12.8.3). A key bound to an agent (an executor's
// always is, write-path RFC §12.8.2) holds leases as that agent and no
// other: a request naming another agent is refused, so no agent can take
// or release another's lease by naming it. A key bound to no agent acts for
// the agent the caller names: named (agent_id in a lease's body or query),
// else X-Engram-Actor.
func leaseAgent(r *http.Request, named string) (string, error) {
	p := principalOf(r)
	named = strings.TrimSpace(named)
	if p.agent == "" {
		return strings.TrimSpace(cmp.Or(named, r.Header.Get("X-Engram-Actor"))), nil
	}
	if named != "" && named != p.agent {
		return "", &access.DeniedError{Rule: "key-agent", Reason: access.ReasonRole,
			Detail: "this key acts for its own agent only: leave agent_id out, or name the key's agent"}
	}
	return p.agent, nil
}

// fencedChange is the audit identity of a records API write (see
// [redaction.change]) with its fence: the agent it acts for and the
// fencing token of X-Engram-Fencing-Token, if sent. The write path holds
// the write to the leases on what it writes.
func (rd *redaction) fencedChange(r *http.Request, rationale string) (revise.Change, error) {
	ch := rd.change(r, rationale)
	agent, err := leaseAgent(r, "")
	if err != nil {
		return ch, err
	}
	f := &revise.Fence{Agent: rd.string(agent)}
	if v := strings.TrimSpace(r.Header.Get(api.FencingTokenHeader)); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			msg := "must be the fencing_token of a lease, a whole number from 1"
			p := problem(http.StatusBadRequest, "invalid-header", "Invalid header", api.FencingTokenHeader+" "+msg)
			p.Errors = []FieldError{{Header: api.FencingTokenHeader, Message: msg}}
			return ch, p
		}
		f.Token = n
	}
	ch.Fence = f
	return ch, nil
}

// leaseProblem is the problem of a lease refusal, or nil: 409 lease-held
// naming the holder, with Retry-After until its lease runs out; 409
// stale-fencing-token naming the token the write was older than.
func leaseProblem(err error) *Problem {
	var (
		held  *revise.LeaseHeldError
		stale *revise.StaleTokenError
	)
	switch {
	case errors.As(err, &held):
		p := problem(http.StatusConflict, "lease-held", "Leased by another agent", held.Error()+": retry after it, or ask its holder")
		p.Holder = held.Lease.AgentID
		exp := held.Lease.ExpiresAt
		p.LeaseExpiresAt = &exp
		p.RetryAfter = max(held.RetryAfter(), time.Second)
		p.RecordIDs = leaseRecordIDs(held.Lease)
		return p
	case errors.As(err, &stale):
		p := problem(http.StatusConflict, "stale-fencing-token", "Stale fencing token",
			stale.Error()+": your lease was lost; nothing was written. Acquire the lease again and re-read before writing")
		p.CurrentFencingToken = stale.Lease.FencingToken
		p.Holder = stale.Lease.AgentID
		p.RecordIDs = leaseRecordIDs(stale.Lease)
		return p
	}
	return nil
}

func leaseRecordIDs(l revise.Lease) []uuid.UUID {
	if l.RecordID == nil {
		return nil
	}
	return []uuid.UUID{*l.RecordID}
}

// acquireLease serves POST /v1/leases: 201 and a new lease with a new
// fencing token, or 200 and the agent's own lease renewed.
func (s *Server) acquireLease(w http.ResponseWriter, r *http.Request) error {
	rd := s.redaction()
	var req api.LeaseRequest
	if err := rd.decode(r, &req); err != nil {
		return err
	}
	agent, err := leaseAgent(r, req.AgentID)
	if err != nil {
		return err
	}
	if req.AgentID == "" {
		agent = rd.string(agent)
	}
	if err := rd.check(); err != nil {
		return err
	}
	ttl, err := ttlSeconds(req.TTLSeconds)
	if err != nil {
		return err
	}
	l, err := s.writer.AcquireLease(r.Context(), principalOf(r).tenant, revise.LeaseRequest{
		Resource: revise.LeaseResource{RecordID: req.RecordID, Scope: req.Scope}, Agent: agent, TTL: ttl,
	})
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/leases/"+l.ID.String())
	status := http.StatusCreated
	if l.Outcome == api.LeaseRenewed {
		status = http.StatusOK
	}
	writeJSON(w, status, wireLease(l))
	return nil
}

// ttlSeconds turns a request's ttl_seconds into a TTL; the write path
// checks it against the configured bounds.
func ttlSeconds(n int) (time.Duration, error) {
	if n < 0 {
		return 0, fieldProblem("/ttl_seconds", "must be a positive number of seconds")
	}
	if n > 1<<20 {
		n = 1 << 20 // out of any bound; refused by the write path
	}
	return time.Duration(n) * time.Second, nil
}

func (s *Server) getLease(w http.ResponseWriter, r *http.Request) error {
	id, err := leaseID(r.PathValue("id"))
	if err != nil {
		return err
	}
	l, err := s.writer.Lease(r.Context(), principalOf(r).tenant, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireLease(l))
	return nil
}

// releaseLease serves DELETE /v1/leases/{id}: the agent is agent_id, a
// query parameter, or X-Engram-Actor.
func (s *Server) releaseLease(w http.ResponseWriter, r *http.Request) error {
	id, err := leaseID(r.PathValue("id"))
	if err != nil {
		return err
	}
	rd := s.redaction()
	agent, err := leaseAgent(r, r.URL.Query().Get("agent_id"))
	if err != nil {
		return err
	}
	agent = rd.string(agent)
	if err := rd.check(); err != nil {
		return err
	}
	l, err := s.writer.ReleaseLease(r.Context(), principalOf(r).tenant, id, agent)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireLease(l))
	return nil
}

// leaseMethod serves POST /v1/leases/{id}:renew and {id}:release; the body
// ([api.LeaseRenewRequest]) may be empty.
func (s *Server) leaseMethod(w http.ResponseWriter, r *http.Request) error {
	idText, op, ok := strings.Cut(r.PathValue("idop"), ":")
	if !ok || (op != "renew" && op != "release") {
		return problem(http.StatusNotFound, "not-found", "Not found", "POST /v1/leases/{id}:renew or /v1/leases/{id}:release")
	}
	id, err := leaseID(idText)
	if err != nil {
		return err
	}
	rd := s.redaction()
	var req api.LeaseRenewRequest
	if r.ContentLength != 0 {
		if err := rd.decode(r, &req); err != nil {
			return err
		}
	}
	agent, err := leaseAgent(r, req.AgentID)
	if err != nil {
		return err
	}
	if req.AgentID == "" {
		agent = rd.string(agent)
	}
	if err := rd.check(); err != nil {
		return err
	}
	var l revise.Lease
	if op == "renew" {
		ttl, err := ttlSeconds(req.TTLSeconds)
		if err != nil {
			return err
		}
		l, err = s.writer.RenewLease(r.Context(), principalOf(r).tenant, id, agent, ttl)
		if err != nil {
			return err
		}
	} else {
		if req.TTLSeconds != 0 {
			return fieldProblem("/ttl_seconds", "is for :renew; a release takes agent_id only")
		}
		if l, err = s.writer.ReleaseLease(r.Context(), principalOf(r).tenant, id, agent); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, wireLease(l))
	return nil
}

func leaseID(s string) (uuid.UUID, error) {
	id, err := pathID(s)
	if err != nil {
		return id, problem(http.StatusNotFound, "not-found", "Not found", fmt.Sprintf("%q is not a lease id", s))
	}
	return id, nil
}
