package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
)

// POST /v1/records:batch is one transaction (substrate RFC §15.7): its
// operations are written together, and when one fails none is — the
// problem names the operation and points into it.
func TestBatchRecords(t *testing.T) {
	t.Parallel()
	e := setup(t)
	work := e.newRecord(workingBody("a1", "ns", nil, nil))
	fact := e.newRecord(factBody("go", nil))

	// The update and supersede pass; the create after them does not.
	bad := factBody("rust", nil)
	delete(bad["payload"].(map[string]any), "subject")
	res := e.do("POST", "/v1/records:batch", acmeKey, map[string]any{"operations": []any{
		map[string]any{"op": "update", "id": work.ID, "version": 1,
			"payload": map[string]any{"kind": "working", "thread_id": "t-a1", "state": "done"}},
		map[string]any{"op": "supersede", "id": fact.ID, "record": factBody("zig", nil)},
		map[string]any{"op": "create", "record": bad},
	}})
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	p := res.problem(t)
	require.NotNil(t, p.Operation)
	require.Equal(t, 2, *p.Operation)
	require.Contains(t, p.Detail, "nothing of the batch was written")
	require.Equal(t, "/operations/2/record/payload/subject", p.Errors[0].Pointer)
	for _, id := range []string{work.ID.String(), fact.ID.String()} {
		res = e.do("GET", "/v1/records/"+id, acmeKey, nil)
		var rec memory.Record
		res.decode(t, &rec)
		require.Equal(t, 1, rec.Version, "rolled back")
		require.Equal(t, memory.Active, rec.Status)
	}

	// Whole, every operation is written, in order.
	res = e.do("POST", "/v1/records:batch", acmeKey, map[string]any{"rationale": "one step", "operations": []any{
		map[string]any{"op": "update", "id": work.ID, "version": 1,
			"payload": map[string]any{"kind": "working", "thread_id": "t-a1", "state": "done"}},
		map[string]any{"op": "supersede", "id": fact.ID, "record": factBody("zig", nil)},
		map[string]any{"op": "delete", "id": work.ID},
	}})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var out api.BatchResult
	res.decode(t, &out)
	require.Len(t, out.Results, 3)
	require.Equal(t, 2, out.Results[0].Record.Version)
	require.Equal(t, fact.ID, out.Results[1].Superseded.ID)
	require.Equal(t, memory.Deleted, out.Results[2].Record.Status)

	// What a batch lacks is refused before anything runs.
	res = e.do("POST", "/v1/records:batch", acmeKey, map[string]any{"operations": []any{map[string]any{"op": "update", "id": fact.ID}}})
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	require.Equal(t, "/operations/0/version", res.problem(t).Errors[0].Pointer)
	res = e.do("POST", "/v1/records:batch", acmeKey, map[string]any{"operations": []any{}})
	require.Equal(t, "/operations", res.problem(t).Errors[0].Pointer)
}
