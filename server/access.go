package server

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/access"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
	"github.com/engram-dev/engram/view"
)

// lookupKey resolves a key's hash to its principal: a configured key, or
// one kept in the database. The database is asked on every request for a
// key not configured — one indexed lookup by hash (BenchmarkKeyLookup) —
// so that a key revoked through any daemon sharing the database fails at
// once on every one, with no cache to invalidate.
func (s *Server) lookupKey(ctx context.Context, hash [sha256.Size]byte) (principal, error) {
	if p, ok := s.keys[hash]; ok {
		return p, nil
	}
	if s.db == nil {
		return principal{}, errUnknownKey
	}
	k, err := store.KeyByHash(ctx, s.db, hash[:])
	if errors.Is(err, store.ErrNotFound) {
		return principal{}, errUnknownKey
	}
	if err != nil {
		return principal{}, err
	}
	return principal{tenant: k.Tenant, name: k.Name, role: Role(k.Role), agent: k.AgentID, domains: k.Domains, clearance: k.Clearance}, nil
}

// sessionOf is the session a request's writes count against: its
// X-Engram-Session header, at most 200 bytes.
func sessionOf(r *http.Request) string {
	s := strings.TrimSpace(r.Header.Get("X-Engram-Session"))
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// access is the principal as package access sees it.
func (p principal) access() access.Principal {
	return access.Principal{Tenant: p.tenant, Key: p.name, Role: p.role, Agent: p.agent,
		Domains: p.domains, Clearance: p.clearance, Session: p.session}
}

// ownRecord makes a record a key with an agent writes its agent's, when it
// names no agent of its own.
func ownRecord(r *http.Request, rec *memory.Record) {
	if rec.AgentID == "" {
		rec.AgentID = principalOf(r).agent
	}
}

// eventAttrs reads what an access decision needs of a raw event: its agent
// and tags. A malformed event yields nothing here and is refused by the
// ingester with its precise problem.
func eventAttrs(raw json.RawMessage) (agent string, tags []string) {
	var ev struct {
		AgentID string   `json:"agent_id"`
		Tags    []string `json:"tags"`
	}
	_ = json.Unmarshal(raw, &ev)
	return ev.AgentID, ev.Tags
}

// authorizeEvent refuses an event the request's key may not write.
// Events are staged outside the write path, so this is their door: an
// event is a write to its agent's session, its episode (write-path RFC
// §12.8.2); an executor's events name its own agent.
func authorizeEvent(r *http.Request, raw json.RawMessage) error {
	p := principalOf(r)
	agent, tags := eventAttrs(raw)
	t := access.Target{Layer: memory.Episodic, Agent: agent, Tags: tags}
	return access.Decide(p.access(), access.OpWrite, t, p.rules).Err()
}

// authorizeEvents refuses a batch of events when the key may not write
// one of them, and counts the batch against the key's write budget
// (write-path RFC §12.11.2).
func (s *Server) authorizeEvents(r *http.Request, raws []json.RawMessage) error {
	for _, raw := range raws {
		if err := authorizeEvent(r, raw); err != nil {
			return err
		}
	}
	return s.writer.ChargeBudget(r.Context(), principalOf(r).access(), len(raws))
}

// revisionAccess are the operations the revisions of POST
// /v1/records/{id}:{op} are (write-path RFC §12.8.2), as the write path
// audits them.
var revisionAccess = map[string]access.Op{
	"supersede": access.OpWrite, "fork": access.OpWrite, "contest": access.OpWrite, "retract": access.OpWrite,
	"append": access.OpWrite, "restore": access.OpDelete, "purge": access.OpPurge,
	"rollback": access.OpAdmin, "quarantine": access.OpAdmin, "release": access.OpAdmin,
	// Curation (write-path RFC §12.7.4): keeping from forgetting and
	// reclassifying are a curator's; a note, an annotation.
	"pin": access.OpAdmin, "unpin": access.OpAdmin, "reclassify": access.OpAdmin, "annotate": access.OpAnnotate,
}

// mayRevise refuses, before the write path runs, an operation the
// request's key may not do to record id as it is now: the write path
// decides again as it audits each revision, but a refusal first tells a
// key nothing of the record's state (that it is active, say, or has
// changed). A record not found is left to the write path's own answer.
func (s *Server) mayRevise(r *http.Request, id uuid.UUID, op access.Op) error {
	p := principalOf(r)
	rec, err := s.reader.Unflagged(r.Context(), view.System(p.tenant), id)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	t := access.TargetOf(rec)
	d := access.Decide(p.access(), op, t, p.rules)
	if d.Allowed {
		d = access.Clear(p.access(), t)
	}
	return d.Err()
}
