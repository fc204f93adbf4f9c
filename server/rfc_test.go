package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/schemas/rfc"
)

// A record as the RFC's schemas allow it — a free relation predicate
// (§15A.5), a custom curve without points (§15A.3), an object-valued
// condition (§15A.8: "implementation-defined conditional keys") — is
// written; read in the RFC's form it passes the RFC's schemas with
// engram's extensions named; written back in that form (to another
// tenant), it is the same record but for what the server sets (issue 28,
// finding 6).
func TestRecordsInTheRFCForm(t *testing.T) {
	t.Parallel()
	e := setup(t)
	res := e.do("POST", "/v1/records", acmeKey, factBody("go", nil))
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	var first memory.Record
	res.decode(t, &first)

	body := factBody(map[string]any{"name": "node", "major": 20}, map[string]any{"runtime": map[string]any{"name": "node", "major": 20}, "regions": []any{"eu"}})
	body["relations"] = []any{map[string]any{"predicate": "explains", "target_id": first.ID, "weight": 0.5}}
	body["lifecycle"] = map[string]any{"decay": map[string]any{"curve": "custom", "half_life_seconds": 3600}}
	body["provenance"] = map[string]any{"sources": []any{map[string]any{"kind": "human", "ref": "chat://jane/1"}}}
	body["payload"].(map[string]any)["predicate"] = "runs_on"
	res = e.do("POST", "/v1/records", acmeKey, body)
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	var second memory.Record
	res.decode(t, &second)
	require.Equal(t, memory.Predicate("explains"), second.Relations[0].Predicate)

	export := func(key string, rec memory.Record) []byte {
		t.Helper()
		res := e.do("GET", "/v1/records/"+rec.ID.String()+"?form=rfc", key, nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		require.NoError(t, rfc.ValidateRecord(res.body), string(res.body))
		return res.body
	}
	doc := export(acmeKey, second)
	var form map[string]any
	require.NoError(t, json.Unmarshal(doc, &form))
	require.NotContains(t, form, "status")
	require.Equal(t, "human", form[memory.RFCExtensions].(map[string]any)["/provenance/sources/0/kind"])

	// Imported into another tenant, in order (the relation's target first).
	for _, rec := range []memory.Record{first, second} {
		res := e.do("POST", "/v1/records?form=rfc", otherKey, string(export(acmeKey, rec)))
		require.Equal(t, http.StatusCreated, res.status, string(res.body))
		var got memory.Record
		res.decode(t, &got)
		require.Equal(t, rec.ID, got.ID)
		res = e.do("GET", "/v1/records/"+rec.ID.String(), acmeKey, nil)
		var want memory.Record
		res.decode(t, &want)
		res = e.do("GET", "/v1/records/"+rec.ID.String(), otherKey, nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		res.decode(t, &got)
		// Set by the server: the write's time, and the salience shown at
		// the time of each read.
		require.JSONEq(t, string(want.Payload), string(got.Payload))
		require.InDelta(t, want.Salience, got.Salience, 1e-3)
		got.UpdatedAt, got.Payload, got.Salience = want.UpdatedAt, want.Payload, want.Salience
		require.Equal(t, want, got)
	}

	res = e.do("GET", "/v1/records/"+first.ID.String()+"?form=xml", acmeKey, nil)
	require.Equal(t, http.StatusBadRequest, res.status)
	require.Equal(t, "form", res.problem(t).Errors[0].Parameter)
	res = e.do("POST", "/v1/records?form=rfc", acmeKey, `{"x-engram": {"/payload/triggers/0/template": "x"}}`)
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	require.Equal(t, "/x-engram/~1payload~1triggers~10~1template", res.problem(t).Errors[0].Pointer)
	res = e.do("POST", "/v1/records?form=rfc", acmeKey, `[1]`)
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
}
