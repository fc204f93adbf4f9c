package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/access"
	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
)

// Curation (write-path RFC §12.7.4; issue 28, finding 9): a curator pins a
// record (with a deletion policy), unpins it, reclassifies its
// sensitivity, each a revision audited with the curator's rationale; a
// verifier or orchestrator annotates with a note kept in the audit trail;
// an agent's key may do none of the curator's, and the refusals and
// mistakes are problems with their field.
func TestCuration(t *testing.T) {
	t.Parallel()
	e := setupRoles(t, "", access.Budgets{})
	res := e.do("POST", "/v1/records", curatorKey, e.body(memory.Semantic, ""))
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	var rec memory.Record
	res.decode(t, &rec)
	path := "/v1/records/" + rec.ID.String()
	curate := func(key, op string, body map[string]any, want int) memory.Record {
		t.Helper()
		res := e.do("POST", path+":"+op, key, body)
		require.Equal(t, want, res.status, string(res.body))
		var out memory.Record
		if want == http.StatusOK {
			res.decode(t, &out)
		}
		return out
	}
	lastAudit := func() api.AuditEntry {
		t.Helper()
		res := e.do("GET", path+"/audit", curatorKey, nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		var trail api.AuditTrail
		res.decode(t, &trail)
		return trail.Entries[len(trail.Entries)-1]
	}

	for _, key := range []string{executorKey, verifierKey, orchestratorKey} {
		res := e.do("POST", path+":pin", key, map[string]any{})
		require.Equal(t, http.StatusForbidden, res.status, string(res.body))
		res.problem(t)
	}
	got := curate(curatorKey, "pin", map[string]any{"deletion_policy": "never", "rationale": "the team's convention", "version": 1}, http.StatusOK)
	require.True(t, got.Lifecycle.Pinned)
	require.Equal(t, memory.Never, got.Lifecycle.DeletionPolicy)
	require.Equal(t, 2, got.Version)
	a := lastAudit()
	require.Equal(t, "pin", a.Action)
	require.Equal(t, "key:curator", a.Actor)
	require.Equal(t, "the team's convention", a.Rationale)
	curate(curatorKey, "pin", map[string]any{"version": 1}, http.StatusConflict)

	got = curate(curatorKey, "unpin", map[string]any{"deletion_policy": "auto_prune"}, http.StatusOK)
	require.False(t, got.Lifecycle.Pinned)
	require.Equal(t, memory.AutoPrune, got.Lifecycle.DeletionPolicy)
	require.Equal(t, "unpin", lastAudit().Action)

	res = e.do("POST", path+":pin", curatorKey, map[string]any{"deletion_policy": "forever"})
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	require.Equal(t, "/deletion_policy", res.problem(t).Errors[0].Pointer)

	res = e.do("POST", path+":reclassify", orchestratorKey, map[string]any{"sensitivity": "high"})
	require.Equal(t, http.StatusForbidden, res.status, string(res.body))
	got = curate(curatorKey, "reclassify", map[string]any{"sensitivity": "high", "rationale": "holds a customer's name"}, http.StatusOK)
	require.Equal(t, memory.High, got.Sensitivity)
	require.Equal(t, memory.Semantic, got.Type, "its type and payload are kept")
	require.JSONEq(t, string(rec.Payload), string(got.Payload))
	require.Equal(t, "reclassify", lastAudit().Action)
	curate(curatorKey, "reclassify", map[string]any{"sensitivity": "high"}, http.StatusConflict)
	res = e.do("POST", path+":reclassify", curatorKey, map[string]any{"sensitivity": "secret"})
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	require.Equal(t, "/sensitivity", res.problem(t).Errors[0].Pointer)
	curate(curatorKey, "reclassify", map[string]any{"sensitivity": "low"}, http.StatusOK)

	// A note is no revision: the record keeps its version.
	before := curate(verifierKey, "annotate", map[string]any{"note": "confirmed with the user on the call"}, http.StatusOK)
	a = lastAudit()
	require.Equal(t, "annotate", a.Action)
	require.Equal(t, "key:verifier", a.Actor)
	require.Equal(t, "confirmed with the user on the call", a.Rationale)
	require.Equal(t, before.Version, *a.Version)
	res = e.do("GET", path, curatorKey, nil)
	var now memory.Record
	res.decode(t, &now)
	require.Equal(t, before.Version, now.Version)
	res = e.do("POST", path+":annotate", orchestratorKey, map[string]any{"note": "  "})
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	require.Equal(t, "/note", res.problem(t).Errors[0].Pointer)
	res = e.do("POST", path+":annotate", executorKey, map[string]any{"note": "mine"})
	require.Equal(t, http.StatusForbidden, res.status, string(res.body))
}
