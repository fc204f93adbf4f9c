package server

import (
	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/store"
)

// The store returns its own row types; the API's wire shapes are package
// api's (ARCHITECTURE.md: server maps one to the other). Where the two
// have the same fields, the mapping is Go's conversion, which a field
// added to one and not the other breaks at compile time.

func wirePage(p store.Page) api.RecordPage { return api.RecordPage(p) }

func wireVersions(vs []store.Version) []api.RecordVersion {
	return wireAll(vs, func(v store.Version) api.RecordVersion { return api.RecordVersion(v) })
}

func wireAudit(es []store.AuditEntry) []api.AuditEntry {
	return wireAll(es, func(e store.AuditEntry) api.AuditEntry { return api.AuditEntry(e) })
}

func wireEdges(es []store.Edge) []api.Edge {
	return wireAll(es, func(e store.Edge) api.Edge { return api.Edge(e) })
}

func wireStaged(ss []store.Staged) []api.StagedEvent {
	return wireAll(ss, func(s store.Staged) api.StagedEvent { return api.StagedEvent(s) })
}

func wireLease(l store.Lease) api.Lease { return api.Lease(l) }

func wireKey(k store.APIKey) api.APIKey { return api.APIKey(k) }

// wireReview maps a review field by field: its proposal is store's type
// (the column's JSON) and api's. TestWireTypesMatch holds the two to the
// same fields.
func wireReview(r store.Review) api.Review {
	out := api.Review{ID: r.ID, RecordID: r.RecordID, Tier: r.Tier, Status: r.Status, Risk: r.Risk, RiskFactors: r.RiskFactors,
		Reasons: r.Reasons, AgentID: r.AgentID, CreatedAt: r.CreatedAt, SLADeadline: r.SLADeadline,
		EscalatedAt: r.EscalatedAt, DecidedAt: r.DecidedAt, DecidedBy: r.DecidedBy, Justification: r.Justification,
		RejectionReason: r.RejectionReason, Record: r.Record}
	if r.Proposal != nil {
		out.Proposal = &api.ReviewProposal{Supersedes: r.Proposal.Supersedes}
	}
	return out
}

func wireReviewPage(p store.ReviewPage) api.ReviewPage {
	return api.ReviewPage{Reviews: wireAll(p.Reviews, wireReview), NextCursor: p.NextCursor}
}

// wireErasure maps an erasure field by field: its counts and
// verification are store's types (the columns' JSON) and api's.
// TestWireTypesMatch holds the two to the same fields.
func wireErasure(e store.Erasure) api.Erasure {
	out := api.Erasure{ID: e.ID, SubjectSHA256: e.SubjectSHA256, Identifiers: e.Identifiers, Status: e.Status, Phase: e.Phase,
		Counts: api.ErasureCounts(e.Counts), Rebuilt: e.Rebuilt, Verified: e.Verified, Error: e.Error,
		RequestedAt: e.RequestedAt, UpdatedAt: e.UpdatedAt, CompletedAt: e.CompletedAt}
	if v := e.Verification; v != nil {
		out.Verification = &api.Verification{Verified: v.Verified, Tables: v.Tables, Columns: v.Columns,
			Remaining: wireAll(v.Remaining, func(r store.Remaining) api.Remaining { return api.Remaining(r) }), At: v.At}
	}
	return out
}

// wireAll maps each row of xs with to; nil stays nil, empty stays empty.
func wireAll[T, U any](xs []T, to func(T) U) []U {
	if xs == nil {
		return nil
	}
	out := make([]U, len(xs))
	for i, x := range xs {
		out[i] = to(x)
	}
	return out
}
