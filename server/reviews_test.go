package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

// reviewsEnv is a server and the write path under it, through which the
// tests submit drafts as the approval gate will.
type reviewsEnv struct {
	*env
	w *revise.Writer
}

func setupReviews(t *testing.T) *reviewsEnv {
	t.Helper()
	db := pgtest.NewSchema(t)
	wr := revise.New(db.Pool, revise.Config{})
	for _, tenant := range []string{"acme", "other"} {
		require.NoError(t, store.EnsureTenant(context.Background(), db.Pool, tenant))
	}
	srv := httptest.NewServer(server.New(server.Config{DB: db.Pool, Writer: wr, Keys: testKeys}))
	t.Cleanup(srv.Close)
	return &reviewsEnv{env: &env{t: t, url: srv.URL, db: db}, w: wr}
}

// submit holds a fact of the user's preferred language for review.
func (e *reviewsEnv) submit(object string, proposal *revise.Proposal) revise.Review {
	e.t.Helper()
	p, _ := json.Marshal(map[string]any{"kind": "semantic", "subject": "user", "predicate": "prefers_language",
		"object": object, "validity": map[string]any{"mode": "global"}})
	_, rv, err := e.w.SubmitForReview(context.Background(), "acme", memory.Record{Type: memory.Semantic, Confidence: 0.6, Payload: p},
		revise.Change{Actor: "agent-7"}, revise.ReviewRequest{Tier: revise.TierAsync, Risk: 0.5,
			Factors: map[string]float64{"contradiction": 1}, Reasons: []string{"contradicts the active fact"}, Proposal: proposal})
	require.NoError(e.t, err)
	return rv
}

func (e *reviewsEnv) page(path string) api.ReviewPage {
	e.t.Helper()
	res := e.do("GET", path, acmeKey, nil)
	require.Equal(e.t, http.StatusOK, res.status, string(res.body))
	var p api.ReviewPage
	res.decode(e.t, &p)
	return p
}

// A reviewer lists the queue, reads a review with its draft, approves one
// (carrying out its supersession proposal) and rejects another with a
// structured reason; decided reviews take no other decision.
func TestReviewsAPI(t *testing.T) {
	t.Parallel()
	e := setupReviews(t)
	res := e.do("POST", "/v1/records", acmeKey, factBody("go", nil))
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	var active memory.Record
	res.decode(t, &active)
	first := e.submit("rust", &revise.Proposal{Supersedes: active.ID})
	second := e.submit("zig", nil)

	p := e.page("/v1/reviews")
	require.Len(t, p.Reviews, 2)
	require.Equal(t, first.ID, p.Reviews[0].ID, "oldest first")
	require.Equal(t, "pending", p.Reviews[0].Status)
	require.Equal(t, memory.Draft, p.Reviews[0].Record.Status)
	require.Equal(t, active.ID, p.Reviews[0].Proposal.Supersedes)
	require.Equal(t, []string{"contradicts the active fact"}, p.Reviews[0].Reasons)
	p = e.page("/v1/reviews?limit=1")
	require.Len(t, p.Reviews, 1)
	require.NotEmpty(t, p.NextCursor)
	p = e.page("/v1/reviews?limit=1&cursor=" + p.NextCursor)
	require.Equal(t, second.ID, p.Reviews[0].ID)
	require.Empty(t, p.NextCursor)
	require.Empty(t, e.page("/v1/reviews?status=approved").Reviews)

	for path, param := range map[string]string{"/v1/reviews?status=open": "status", "/v1/reviews?limit=0": "limit", "/v1/reviews?cursor=nope": "cursor"} {
		res := e.do("GET", path, acmeKey, nil)
		require.Equal(t, http.StatusBadRequest, res.status, path)
		require.Equal(t, param, res.problem(t).Errors[0].Parameter, path)
	}

	res = e.do("GET", "/v1/reviews/"+first.ID.String(), acmeKey, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var got api.Review
	res.decode(t, &got)
	require.Equal(t, first.RecordID, got.Record.ID)
	require.Equal(t, 0.5, got.Risk)
	require.Equal(t, map[string]float64{"contradiction": 1}, got.RiskFactors)
	for _, path := range []string{"/v1/reviews/" + first.ID.String(), "/v1/reviews/not-a-uuid"} {
		res := e.do("GET", path, otherKey, nil)
		require.Equal(t, http.StatusNotFound, res.status, "another tenant's review is missing")
		require.Equal(t, "urn:engram:problem:not-found", res.problem(t).Type)
	}
	res = e.do("GET", "/v1/reviews", otherKey, nil)
	var others api.ReviewPage
	res.decode(t, &others)
	require.Empty(t, others.Reviews, "another tenant's queue is its own")

	// Approve: a justification is required, the approver is the key and
	// the actor it names.
	approve := "/v1/reviews/" + first.ID.String() + ":approve"
	res = e.do("POST", approve, acmeKey, map[string]any{})
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	require.Equal(t, "/justification", res.problem(t).Errors[0].Pointer)
	res = e.do("POST", approve, acmeKey, map[string]any{"justification": "ok", "reason": "other"})
	require.Equal(t, http.StatusUnprocessableEntity, res.status, "an approval has no reason")
	res = e.do("POST", approve, acmeKey, map[string]any{"justification": "the user moved to Rust"}, "X-Engram-Actor", "alice")
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	res.decode(t, &got)
	require.Equal(t, "approved", got.Status)
	require.Equal(t, "alice via key:acme-test", got.DecidedBy)
	require.Equal(t, "the user moved to Rust", got.Justification)
	require.NotNil(t, got.DecidedAt)
	require.Equal(t, memory.Active, got.Record.Status)
	require.Equal(t, []memory.Relation{{Predicate: memory.Supersedes, TargetID: active.ID}}, got.Record.Relations)

	res = e.do("GET", "/v1/records/"+active.ID.String(), acmeKey, nil)
	var old memory.Record
	res.decode(t, &old)
	require.Equal(t, memory.Superseded, old.Status)
	res = e.do("GET", "/v1/records/"+first.RecordID.String()+"/audit", acmeKey, nil)
	var trail api.AuditTrail
	res.decode(t, &trail)
	last := trail.Entries[len(trail.Entries)-1]
	require.Equal(t, "approve", last.Action)
	require.Equal(t, "alice via key:acme-test", last.Actor)
	require.Equal(t, "the user moved to Rust", last.Rationale)

	res = e.do("POST", approve, acmeKey, map[string]any{"justification": "again"})
	require.Equal(t, http.StatusConflict, res.status, string(res.body))
	prob := res.problem(t)
	require.Equal(t, "urn:engram:problem:not-pending", prob.Type)
	require.Equal(t, first.RecordID, prob.RecordIDs[0])

	// The second now collides with the approved fact: refused, and still
	// pending.
	res = e.do("POST", "/v1/reviews/"+second.ID.String()+":approve", acmeKey, map[string]any{"justification": "zig too"})
	require.Equal(t, http.StatusConflict, res.status, string(res.body))
	prob = res.problem(t)
	require.Equal(t, "urn:engram:problem:active-fact-exists", prob.Type)
	require.Equal(t, first.RecordID, prob.RecordIDs[0])

	// Reject: a structured reason is required.
	reject := "/v1/reviews/" + second.ID.String() + ":reject"
	res = e.do("POST", reject, acmeKey, map[string]any{"reason": "wrong", "justification": "no"})
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	require.Equal(t, "/reason", res.problem(t).Errors[0].Pointer)
	res = e.do("POST", reject, acmeKey, map[string]any{"reason": "contradiction", "justification": "Rust stands"})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	res.decode(t, &got)
	require.Equal(t, "rejected", got.Status)
	require.Equal(t, "contradiction", got.RejectionReason)
	require.Equal(t, "key:acme-test", got.DecidedBy)
	require.Equal(t, memory.Retracted, got.Record.Status)
	res = e.do("POST", reject, acmeKey, map[string]any{"reason": "other", "justification": "again"})
	require.Equal(t, http.StatusConflict, res.status)

	p = e.page("/v1/reviews?status=approved,rejected")
	require.Len(t, p.Reviews, 2)
	require.Len(t, e.page("/v1/reviews?status=all").Reviews, 2)
	require.Empty(t, e.page("/v1/reviews").Reviews, "the queue is empty")

	res = e.do("POST", "/v1/reviews/"+first.ID.String()+":escalate", acmeKey, map[string]any{})
	require.Equal(t, http.StatusNotFound, res.status)
	res = e.do("POST", "/v1/reviews/"+first.ID.String(), acmeKey, map[string]any{})
	require.Equal(t, http.StatusNotFound, res.status)
	res = e.do("POST", "/v1/reviews/nope:approve", acmeKey, map[string]any{"justification": "x"})
	require.Equal(t, http.StatusNotFound, res.status)
	res = e.do("POST", "/v1/reviews/"+first.ID.String()+":approve", otherKey, map[string]any{"justification": "x"})
	require.Equal(t, http.StatusNotFound, res.status, "another tenant's review is missing")
}

// The review queue is a tenant's: an operator key is refused before
// anything is read.
func TestReviewsRefuseOperatorKeys(t *testing.T) {
	t.Parallel()
	e := setupReviews(t)
	rv := e.submit("go", nil)
	for _, rt := range []struct{ method, path string }{
		{"GET", "/v1/reviews"},
		{"GET", "/v1/reviews/" + rv.ID.String()},
		{"POST", "/v1/reviews/" + rv.ID.String() + ":approve"},
		{"POST", "/v1/reviews/" + rv.ID.String() + ":reject"},
	} {
		res := e.do(rt.method, rt.path, opsKey, map[string]any{"justification": "x", "reason": "other"})
		require.Equal(t, http.StatusForbidden, res.status, rt.path)
		require.Equal(t, "urn:engram:problem:forbidden", res.problem(t).Type)
		res = e.do(rt.method, rt.path, "", nil)
		require.Equal(t, http.StatusUnauthorized, res.status, rt.path)
	}
	require.Equal(t, 1, e.count("SELECT count(*) FROM reviews WHERE status = 'pending'"))
}

// A justification or actor holding a secret is redacted before it is
// stored, in the review and in the audit trail.
func TestReviewDecisionsAreRedacted(t *testing.T) {
	t.Parallel()
	e := setupReviews(t)
	rv := e.submit("go", nil)
	res := e.do("POST", "/v1/reviews/"+rv.ID.String()+":reject", acmeKey,
		map[string]any{"reason": "policy_violation", "justification": "it quotes " + plantGitHub}, "X-Engram-Actor", "bob "+plantGitHub)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.NotContains(t, string(res.body), plantGitHub)
	require.Contains(t, string(res.body), "[REDACTED")
	require.Zero(t, e.count("SELECT count(*) FROM reviews WHERE justification LIKE '%"+plantGitHub+"%' OR decided_by LIKE '%"+plantGitHub+"%'"))
	require.Zero(t, e.count("SELECT count(*) FROM audit_log WHERE rationale LIKE '%"+plantGitHub+"%' OR actor LIKE '%"+plantGitHub+"%'"))
	require.True(t, strings.HasPrefix(e.page("/v1/reviews?status=rejected").Reviews[0].DecidedBy, "bob "))
}
