package server_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
)

// rollbackResult is the answer of POST /v1/records/{id}:rollback.
type rollbackResult struct {
	RolledBack  memory.Record   `json:"rolled_back"`
	Retracted   []memory.Record `json:"retracted"`
	Reactivated []memory.Record `json:"reactivated"`
}

func (e *env) newRecord(body any) memory.Record {
	e.t.Helper()
	res := e.do("POST", "/v1/records", acmeKey, body)
	require.Equal(e.t, http.StatusCreated, res.status, string(res.body))
	var rec memory.Record
	res.decode(e.t, &rec)
	return rec
}

func (e *env) rollback(id uuid.UUID, body any) (response, rollbackResult) {
	e.t.Helper()
	res := e.do("POST", "/v1/records/"+id.String()+":rollback", acmeKey, body)
	var out rollbackResult
	if res.status == http.StatusOK {
		res.decode(e.t, &out)
	}
	return res, out
}

// A bad supersession is rolled back over HTTP: the replacement is
// retracted, the fact it replaced is active again as a new version, both
// audited, and the revision counted; a second rollback, or one of a record
// that replaced nothing, is a conflict, and another tenant's record is not
// found.
func TestRollbackSupersedeOverHTTP(t *testing.T) {
	t.Parallel()
	e := setup(t)
	old := e.newRecord(factBody("go", nil))
	res := e.do("POST", "/v1/records/"+old.ID.String()+":supersede", acmeKey, map[string]any{"record": factBody("cobol", nil)})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var sup struct{ Record memory.Record }
	res.decode(t, &sup)
	bad := sup.Record

	res, _ = e.rollback(bad.ID, map[string]any{"version": 3})
	require.Equal(t, http.StatusConflict, res.status)
	require.Equal(t, "urn:engram:problem:version-conflict", res.problem(t).Type)
	res = e.do("POST", "/v1/records/"+bad.ID.String()+":rollback", otherKey, map[string]any{})
	require.Equal(t, http.StatusNotFound, res.status)
	res.problem(t)

	res, out := e.rollback(bad.ID, map[string]any{"version": 1, "rationale": "the agent was wrong"})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Equal(t, bad.ID, out.RolledBack.ID)
	require.Equal(t, memory.Retracted, out.RolledBack.Status)
	require.NotNil(t, out.Retracted)
	require.Empty(t, out.Retracted)
	require.Len(t, out.Reactivated, 1)
	require.Equal(t, old.ID, out.Reactivated[0].ID)
	require.Equal(t, memory.Active, out.Reactivated[0].Status)
	require.Equal(t, 3, out.Reactivated[0].Version)

	res = e.do("GET", "/v1/records?subject=user", acmeKey, nil)
	var page api.RecordPage
	res.decode(t, &page)
	require.Len(t, page.Records, 1)
	require.Equal(t, old.ID, page.Records[0].ID)

	res = e.do("GET", "/v1/records/"+bad.ID.String()+"/audit", acmeKey, nil)
	var audit struct{ Entries []api.AuditEntry }
	res.decode(t, &audit)
	require.Equal(t, "rollback", audit.Entries[len(audit.Entries)-1].Action)
	require.Equal(t, "the agent was wrong", audit.Entries[len(audit.Entries)-1].Rationale)
	res = e.do("GET", "/v1/records/"+old.ID.String()+"/audit", acmeKey, nil)
	res.decode(t, &audit)
	last := audit.Entries[len(audit.Entries)-1]
	require.Equal(t, "reactivate", last.Action)
	require.Equal(t, "reactivated after rollback of "+bad.ID.String(), last.Rationale)
	require.Equal(t, "key:acme-test", last.Actor)

	res, _ = e.rollback(bad.ID, nil)
	require.Equal(t, http.StatusConflict, res.status)
	require.Equal(t, "urn:engram:problem:not-live", res.problem(t).Type)

	lone := e.newRecord(factBody("zig", map[string]any{"os": "plan9"}))
	res, _ = e.rollback(lone.ID, map[string]any{})
	require.Equal(t, http.StatusConflict, res.status)
	p := res.problem(t)
	require.Equal(t, "urn:engram:problem:not-allowed", p.Type)
	require.Equal(t, []uuid.UUID{lone.ID}, p.RecordIDs)

	m := e.do("GET", "/metrics", "", nil)
	require.Contains(t, string(m.body), `engram_revisions_total{action="rollback",layer="semantic"} 1`)
}

// Rolling back one variant of a fork retracts every variant and
// reactivates the forked fact; rolling back a merge reactivates every
// source; a reactivated fact that would collide with another active one is
// refused with active-fact-exists, naming it, and nothing changes.
func TestRollbackForkMergeAndCollisionOverHTTP(t *testing.T) {
	t.Parallel()
	e := setup(t)
	f := e.newRecord(factBody("go", nil))
	res := e.do("POST", "/v1/records/"+f.ID.String()+":fork", acmeKey, map[string]any{
		"variants": []any{factBody("go", map[string]any{"project_kind": "backend"}), factBody("python", map[string]any{"project_kind": "data"})},
	})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var forked struct{ Records []memory.Record }
	res.decode(t, &forked)

	res, out := e.rollback(forked.Records[1].ID, map[string]any{"rationale": "the split was wrong"})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Equal(t, memory.Retracted, out.RolledBack.Status)
	require.Len(t, out.Retracted, 1)
	require.Equal(t, forked.Records[0].ID, out.Retracted[0].ID)
	require.Equal(t, memory.Retracted, out.Retracted[0].Status)
	require.Len(t, out.Reactivated, 1)
	require.Equal(t, f.ID, out.Reactivated[0].ID)
	require.Equal(t, memory.Active, out.Reactivated[0].Status)

	skill := func(confidence float64) map[string]any {
		return map[string]any{"type": "competence", "confidence": confidence, "payload": map[string]any{
			"kind": "competence", "skill_name": "fix_linker_cache", "triggers": []any{map[string]any{"signal": fmt.Sprintf("ld: cache mismatch (%.1f)", confidence)}},
			"recipe": []any{map[string]any{"step": "clear the cache"}}}}
	}
	a, b := e.newRecord(skill(0.6)), e.newRecord(skill(0.8))
	res = e.do("POST", "/v1/records:merge", acmeKey, map[string]any{"record_ids": []uuid.UUID{a.ID, b.ID}})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	var merged memory.Record
	res.decode(t, &merged)
	res, out = e.rollback(merged.ID, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Len(t, out.Reactivated, 2)
	require.ElementsMatch(t, []uuid.UUID{a.ID, b.ID}, []uuid.UUID{out.Reactivated[0].ID, out.Reactivated[1].ID})

	// The fact was replaced by one about something else, and another took
	// its place meanwhile.
	old := e.newRecord(factBody("rust", map[string]any{"os": "linux"}))
	other := factBody("dark", nil)
	other["payload"].(map[string]any)["predicate"] = "prefers_theme"
	res = e.do("POST", "/v1/records/"+old.ID.String()+":supersede", acmeKey, map[string]any{"record": other})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var sup struct{ Record memory.Record }
	res.decode(t, &sup)
	taken := e.newRecord(factBody("c", map[string]any{"os": "linux"}))
	res, _ = e.rollback(sup.Record.ID, nil)
	require.Equal(t, http.StatusConflict, res.status)
	p := res.problem(t)
	require.Equal(t, "urn:engram:problem:active-fact-exists", p.Type)
	require.Equal(t, []uuid.UUID{taken.ID}, p.RecordIDs)
	res = e.do("GET", "/v1/records/"+sup.Record.ID.String(), acmeKey, nil)
	var still memory.Record
	res.decode(t, &still)
	require.Equal(t, memory.Active, still.Status, "a refused rollback changes nothing")
}
