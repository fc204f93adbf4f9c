package server_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

// signed is the default write path with a provenance signing key: every
// stamp is signed (write-path RFC §12.4.5).
func signed() revise.Gates {
	return revise.Gates{Provenance: revise.ProvenanceConfig{
		Keys: []revise.SigningKey{{ID: "k1", Secret: "a-signing-secret-of-at-least-32-bytes"}}, Active: "k1"}}
}

// stampOf is a record's provenance stamp as stored.
func (e *env) stampOf(id uuid.UUID) revise.Stamp {
	e.t.Helper()
	var doc []byte
	require.NoError(e.t, e.db.Pool.QueryRow(e.t.Context(), `SELECT stamp FROM provenance WHERE record_id = $1`, id).Scan(&doc))
	var s revise.Stamp
	require.NoError(e.t, json.Unmarshal(doc, &s))
	return s
}

// verified runs the provenance audit over every stamp with the same keys
// and says what it found.
func (e *env) verified(g revise.Gates) revise.ProvenanceAudit {
	e.t.Helper()
	res, err := revise.New(e.db.Pool, revise.Config{Gates: g}).AuditProvenance(e.t.Context(), store.Key{}, 1000, nil)
	require.NoError(e.t, err)
	return res
}

// A reviewer's decision reaches the record's provenance (write-path RFC
// §12.4.2, §12.6.6): an approved draft's stamp says approved, by whom,
// when and why, its adjusted confidence counts the approval (§12.4.4), and
// it is signed again and verifies; a rejected one's says rejected, and the
// rejection counts for its agent; a release from quarantine is approved by
// who released it. The default configuration, but for the signing key.
func TestDecisionsReachProvenance(t *testing.T) {
	t.Parallel()
	g := signed()
	e := setupGates(t, g)
	procedure := func(step string) map[string]any {
		return map[string]any{"type": "competence", "confidence": 0.6, "agent_id": "coder",
			"provenance": map[string]any{"sources": []any{map[string]any{"kind": "tool_call", "ref": "call://" + step}}},
			"payload": map[string]any{"kind": "competence", "skill_name": "fix_linker_cache",
				"triggers": []any{map[string]any{"signal": "ld: cache mismatch"}}, "recipe": []any{map[string]any{"step": step}}}}
	}
	res := e.do("POST", "/v1/records", acmeKey, procedure("rm -rf cache"))
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	// The same skill and trigger with another recipe: a conflict for a
	// reviewer (the dedup gate), queued with the default configuration.
	queue := func(step string) (uuid.UUID, string) {
		t.Helper()
		res := e.do("POST", "/v1/records", acmeKey, procedure(step))
		require.Equal(t, http.StatusAccepted, res.status, string(res.body))
		var draft struct {
			ID uuid.UUID `json:"id"`
		}
		res.decode(t, &draft)
		require.Equal(t, revise.ApprovalPending, e.stampOf(draft.ID).Approval)
		return draft.ID, res.header.Get("Engram-Review")
	}

	approved, review := queue("make clean")
	pending := e.stampOf(approved)
	res = e.do("POST", "/v1/reviews/"+review+":approve", acmeKey, map[string]any{"justification": "the new recipe is the documented one"})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	s := e.stampOf(approved)
	require.Equal(t, revise.ApprovalApproved, s.Approval)
	require.Equal(t, "key:acme-test", s.Approver)
	require.Equal(t, "the new recipe is the documented one", s.Justification)
	require.NotNil(t, s.ApprovedAt)
	require.WithinDuration(t, time.Now(), *s.ApprovedAt, time.Hour)
	require.InDelta(t, pending.AdjustedConfidence+0.30, s.AdjustedConfidence, 1e-9, "β₄·1[approved]")
	require.Equal(t, pending.Actor, s.Actor, "who wrote it is kept")

	rejected, review := queue("reboot")
	res = e.do("POST", "/v1/reviews/"+review+":reject", acmeKey, map[string]any{"reason": "factual_error", "justification": "rebooting fixes nothing"})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	s = e.stampOf(rejected)
	require.Equal(t, revise.ApprovalRejected, s.Approval)
	require.Equal(t, "factual_error: rebooting fixes nothing", s.Justification)

	res = e.do("GET", "/v1/agents", acmeKey, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var agents struct {
		Agents []struct {
			Writes   int `json:"writes"`
			Accepted int `json:"accepted"`
			Rejected int `json:"rejected"`
		} `json:"agents"`
	}
	res.decode(t, &agents)
	require.Len(t, agents.Agents, 1)
	require.Equal(t, 3, agents.Agents[0].Writes)
	require.Equal(t, 2, agents.Agents[0].Accepted, "the first write and the approved one")
	require.Equal(t, 1, agents.Agents[0].Rejected, "the reviewer's rejection counts")

	path := "/v1/records/" + approved.String()
	res = e.do("POST", path+":quarantine", acmeKey, map[string]any{"rationale": "suspected poisoning"})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	res = e.do("POST", path+":release", acmeKey, map[string]any{"rationale": "investigated: the recipe is sound"})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	s = e.stampOf(approved)
	require.Equal(t, revise.ApprovalApproved, s.Approval)
	require.Equal(t, "investigated: the recipe is sound", s.Justification)

	audit := e.verified(g)
	require.Equal(t, 3, audit.Checked, "three procedures")
	require.Equal(t, audit.Checked, audit.Valid, "every stamp, decided or not, verifies: %+v", audit)
}
