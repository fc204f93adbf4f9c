package server_test

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
)

// The write path's gates over HTTP, where an operator chose the
// contradiction policy review (§12.2.4): the same fact again is absorbed
// (200, the fact in force), a contradiction no more credible is refused
// (422 write-rejected naming the fact), a more credible one is held for
// review (202, Engram-Review), and approving the review supersedes the
// fact in force. GET /v1/agents shows the writing agent's counts.
func TestGatesOverHTTP(t *testing.T) {
	t.Parallel()
	e := setupGates(t, revise.Gates{Contradiction: revise.ContradictionConfig{Policy: revise.PolicyReview}})
	body := func(object string, confidence float64, sources ...map[string]any) map[string]any {
		b := factBody(object, nil)
		b["confidence"], b["agent_id"] = confidence, "coder"
		if sources != nil {
			b["provenance"] = map[string]any{"sources": sources}
		}
		return b
	}
	res := e.do("POST", "/v1/records", acmeKey, body("go", 0.8, map[string]any{"kind": "tool_call", "ref": "call://1"}))
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	require.Equal(t, "created", res.header.Get("Engram-Write-Outcome"))
	var inForce memory.Record
	res.decode(t, &inForce)

	res = e.do("POST", "/v1/records", acmeKey, body("go", 0.8, map[string]any{"kind": "tool_call", "ref": "call://1"}))
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Equal(t, "absorbed", res.header.Get("Engram-Write-Outcome"))
	var same memory.Record
	res.decode(t, &same)
	require.Equal(t, inForce.ID, same.ID)

	res = e.do("POST", "/v1/records", acmeKey, body("python", 0.5))
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	p := res.problem(t)
	require.Equal(t, "urn:engram:problem:write-rejected", p.Type)
	require.Equal(t, "contradiction", p.Gate)
	require.Equal(t, "contradiction", p.Reason)
	require.Equal(t, inForce.ID, p.RecordIDs[0])

	res = e.do("POST", "/v1/records", acmeKey, body("rust", 1, map[string]any{"kind": "human", "ref": "person://lead"}))
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	require.Equal(t, "queued", res.header.Get("Engram-Write-Outcome"))
	var draft memory.Record
	res.decode(t, &draft)
	require.Equal(t, memory.Draft, draft.Status)
	review := res.header.Get("Engram-Review")
	require.NotEmpty(t, review)

	res = e.do("POST", "/v1/reviews/"+review+":approve", acmeKey, map[string]any{"justification": "the lead said so"})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	res = e.do("GET", "/v1/records/"+inForce.ID.String(), acmeKey, nil)
	res.decode(t, &inForce)
	require.Equal(t, memory.Superseded, inForce.Status, "approval carries out the supersession proposal")
	res = e.do("GET", "/v1/records/"+draft.ID.String(), acmeKey, nil)
	res.decode(t, &draft)
	require.Equal(t, memory.Active, draft.Status)

	res = e.do("GET", "/v1/agents", acmeKey, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var agents struct {
		Agents []struct {
			AgentID        string  `json:"agent_id"`
			Writes         int     `json:"writes"`
			Accepted       int     `json:"accepted"`
			Rejected       int     `json:"rejected"`
			Contradictions int     `json:"contradictions"`
			Score          float64 `json:"score"`
		} `json:"agents"`
	}
	res.decode(t, &agents)
	require.Len(t, agents.Agents, 1)
	a := agents.Agents[0]
	require.Equal(t, "coder", a.AgentID)
	require.Equal(t, 4, a.Writes)
	require.Equal(t, 3, a.Accepted, "created, absorbed, and the queued one once approved")
	require.Equal(t, 1, a.Rejected)
	require.Equal(t, 2, a.Contradictions)
}

// A value too long for PostgreSQL's indexes — a subject, a tag, a scope of
// kilobytes of random text — is a 422 naming the limit, not a 500, and
// nothing is stored.
func TestValuesTooLongToIndexAre422(t *testing.T) {
	t.Parallel()
	e := setupFull(t)
	long := func(seed int) string {
		var b strings.Builder
		for i := 0; b.Len() < 6000; i++ {
			fmt.Fprintf(&b, "%x", sha256.Sum256([]byte(fmt.Sprint(seed, i))))
		}
		return b.String()
	}
	before := e.stored()
	for name, body := range map[string]map[string]any{
		"subject": {"type": "semantic", "payload": map[string]any{"kind": "semantic", "subject": long(1), "predicate": "p", "object": "o", "validity": map[string]any{"mode": "global"}}},
		"tag":     {"type": "semantic", "tags": []string{long(2)}, "payload": map[string]any{"kind": "semantic", "subject": "s", "predicate": "p", "object": "o", "validity": map[string]any{"mode": "global"}}},
		"scope":   {"type": "semantic", "scope": long(3), "payload": map[string]any{"kind": "semantic", "subject": "s2", "predicate": "p", "object": "o", "validity": map[string]any{"mode": "global"}}},
	} {
		res := e.do("POST", "/v1/records", acmeKey, body)
		require.Equal(t, http.StatusUnprocessableEntity, res.status, "%s: %s", name, res.body)
		require.Equal(t, "urn:engram:problem:validation-failed", res.problem(t).Type, name)
	}
	require.Equal(t, before, e.stored())
}
