package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
)

// order=newest lists the newest records first, the cursor paging on in
// that order, with as_of too; an unknown order is a bad parameter.
func TestListNewestFirst(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var ids []uuid.UUID
	for _, subject := range []string{"a", "b", "c"} {
		body := factBody("x", nil)
		body["payload"].(map[string]any)["subject"] = subject
		ids = append(ids, e.create(body).ID)
	}
	at := time.Now().UTC()
	body := factBody("x", nil)
	body["payload"].(map[string]any)["subject"] = "d"
	later := e.create(body).ID

	page := func(path string) api.RecordPage {
		t.Helper()
		res := e.do("GET", path, acmeKey, nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		var p api.RecordPage
		res.decode(t, &p)
		return p
	}
	idsOf := func(recs []memory.Record) []uuid.UUID {
		var out []uuid.UUID
		for _, r := range recs {
			out = append(out, r.ID)
		}
		return out
	}

	first := page("/v1/records?order=newest&limit=2")
	require.Equal(t, []uuid.UUID{later, ids[2]}, idsOf(first.Records))
	require.NotEmpty(t, first.NextCursor)
	second := page("/v1/records?order=newest&limit=2&cursor=" + first.NextCursor)
	require.Equal(t, []uuid.UUID{ids[1], ids[0]}, idsOf(second.Records))
	require.Empty(t, second.NextCursor)

	past := page("/v1/records?order=newest&as_of=" + at.Format(time.RFC3339Nano))
	require.Equal(t, []uuid.UUID{ids[2], ids[1], ids[0]}, idsOf(past.Records))
	require.Equal(t, append(ids, later), idsOf(page("/v1/records?order=oldest").Records))

	res := e.do("GET", "/v1/records?order=sideways", acmeKey, nil)
	require.Equal(t, http.StatusBadRequest, res.status, string(res.body))
	require.Equal(t, "order", res.problem(t).Errors[0].Parameter)
}
