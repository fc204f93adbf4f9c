package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/schemas"
)

// derivedBody is a fact derived from the record src.
func derivedBody(src uuid.UUID, object string) map[string]any {
	b := factBody(object, map[string]any{"derived": object})
	b["relations"] = []any{map[string]any{"predicate": "derived_from", "target_id": src}}
	return b
}

// Quarantine over HTTP: the record leaves the active set, audited; the
// records derived from it carry a flag in GET /v1/records/{id} (a property
// the canonical schema admits) and are listed by ?flag=; release brings it
// back and clears them. Both are counted.
func TestQuarantineOverHTTP(t *testing.T) {
	t.Parallel()
	e := setup(t)
	src := e.newRecord(factBody("go", nil))
	d1 := e.newRecord(derivedBody(src.ID, "d1"))
	d2 := e.newRecord(derivedBody(d1.ID, "d2"))
	path := "/v1/records/" + src.ID.String()

	res := e.do("POST", path+":quarantine", acmeKey, map[string]any{})
	require.Equal(t, http.StatusUnprocessableEntity, res.status, "a quarantine says why")
	require.Equal(t, "/rationale", res.problem(t).Errors[0].Pointer)
	res = e.do("POST", path+":quarantine", otherKey, map[string]any{"rationale": "x"})
	require.Equal(t, http.StatusNotFound, res.status)

	res = e.do("POST", path+":quarantine", acmeKey, map[string]any{"rationale": "agent-7 poisons memory", "version": 1})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var q struct {
		Record    memory.Record
		Flagged   []uuid.UUID
		Truncated bool
	}
	res.decode(t, &q)
	require.Equal(t, memory.Quarantined, q.Record.Status)
	require.Equal(t, []uuid.UUID{d1.ID, d2.ID}, q.Flagged)
	require.False(t, q.Truncated)

	res = e.do("GET", "/v1/records/"+d2.ID.String(), acmeKey, nil)
	require.Equal(t, http.StatusOK, res.status)
	require.NoError(t, schemas.ValidateRecord(res.body), "a flagged record is still a canonical MemoryRecord")
	var got memory.Record
	res.decode(t, &got)
	require.Len(t, got.Flags, 1)
	require.Equal(t, memory.DerivedFromQuarantined, got.Flags[0].Kind)
	require.Equal(t, src.ID, got.Flags[0].SourceID)
	require.Equal(t, "agent-7 poisons memory", got.Flags[0].Reason)
	require.WithinDuration(t, time.Now(), got.Flags[0].At, time.Minute)
	res = e.do("GET", path, acmeKey, nil)
	var raw map[string]json.RawMessage
	res.decode(t, &raw)
	require.NotContains(t, raw, "flags", "an unflagged record has no flags property")
	require.JSONEq(t, `"quarantined"`, string(raw["status"]))

	res = e.do("GET", "/v1/records?flag=derived_from_quarantined", acmeKey, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var page api.RecordPage
	res.decode(t, &page)
	require.Len(t, page.Records, 2)
	require.Equal(t, d1.ID, page.Records[0].ID)
	require.Len(t, page.Records[0].Flags, 1)
	res = e.do("GET", "/v1/records?subject=user", acmeKey, nil)
	res.decode(t, &page)
	require.Len(t, page.Records, 2, "the quarantined record has left the active set; the flagged ones stay")
	for _, q := range []string{"flag=bogus", "flag=derived_from_quarantined&as_of=" + url.QueryEscape(time.Now().Format(time.RFC3339))} {
		res = e.do("GET", "/v1/records?"+q, acmeKey, nil)
		require.Equal(t, http.StatusBadRequest, res.status, q)
		require.Equal(t, "flag", res.problem(t).Errors[0].Parameter)
	}

	body := factBody("x", map[string]any{"k": "v"})
	body["flags"] = []any{map[string]any{"flag": "derived_from_quarantined", "source_id": src.ID, "at": time.Now()}}
	res = e.do("POST", "/v1/records", acmeKey, body)
	require.Equal(t, http.StatusUnprocessableEntity, res.status, "flags are not written with a record")
	require.Equal(t, "/flags", res.problem(t).Errors[0].Pointer)

	res = e.do("POST", path+":quarantine", acmeKey, map[string]any{"rationale": "again"})
	require.Equal(t, http.StatusConflict, res.status)
	require.Equal(t, "urn:engram:problem:not-live", res.problem(t).Type)
	res = e.do("POST", "/v1/records/"+d1.ID.String()+":release", acmeKey, map[string]any{"rationale": "not quarantined"})
	require.Equal(t, http.StatusConflict, res.status)
	require.Equal(t, "urn:engram:problem:not-allowed", res.problem(t).Type)
	res = e.do("POST", path+":release", acmeKey, map[string]any{})
	require.Equal(t, http.StatusUnprocessableEntity, res.status)

	res = e.do("POST", path+":release", acmeKey, map[string]any{"rationale": "investigated: sound"})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var rel struct {
		Record    memory.Record
		Unflagged []uuid.UUID
	}
	res.decode(t, &rel)
	require.Equal(t, memory.Active, rel.Record.Status)
	require.Equal(t, 3, rel.Record.Version)
	require.ElementsMatch(t, []uuid.UUID{d1.ID, d2.ID}, rel.Unflagged)
	res = e.do("GET", "/v1/records?flag=derived_from_quarantined", acmeKey, nil)
	res.decode(t, &page)
	require.Empty(t, page.Records)

	res = e.do("GET", path+"/audit", acmeKey, nil)
	var audit struct{ Entries []api.AuditEntry }
	res.decode(t, &audit)
	require.Len(t, audit.Entries, 3)
	require.Equal(t, "quarantine", audit.Entries[1].Action)
	require.Equal(t, "agent-7 poisons memory", audit.Entries[1].Rationale)
	require.Equal(t, "release", audit.Entries[2].Action)

	m := string(e.do("GET", "/metrics", "", nil).body)
	require.Contains(t, m, `engram_revisions_total{action="quarantine",layer="semantic"} 1`)
	require.Contains(t, m, `engram_revisions_total{action="release",layer="semantic"} 1`)
}

// Retrieval never returns a quarantined record, and returns it again once
// released.
func TestQuarantinedRecordsAreNotRetrieved(t *testing.T) {
	t.Parallel()
	e := setupRetrieve(t)
	res := e.do("POST", "/v1/records", acmeKey, map[string]any{"type": "semantic", "payload": map[string]any{
		"kind": "semantic", "subject": "deploy", "predicate": "command", "object": "kubectl apply -k overlays/prod",
		"validity": map[string]any{"mode": "global"}}})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	var rec memory.Record
	res.decode(t, &rec)

	found := func() bool {
		t.Helper()
		res := e.do("POST", "/v1/retrieve", acmeKey, map[string]any{"task": map[string]any{"text": "how to deploy with kubectl"}})
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		var out retrieve.Result
		res.decode(t, &out)
		for _, l := range out.Layers {
			for _, it := range l.Items {
				if it.Record.ID == rec.ID {
					return true
				}
			}
		}
		return false
	}
	require.True(t, found())
	res = e.do("POST", "/v1/records/"+rec.ID.String()+":quarantine", acmeKey, map[string]any{"rationale": "suspect"})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.False(t, found())
	res = e.do("POST", "/v1/records/"+rec.ID.String()+":release", acmeKey, map[string]any{"rationale": "sound"})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.True(t, found())
}
