package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/memory"
)

// A body of null — spelled as clients send it, bare or padded — where a
// route takes an object is refused with a 422 naming the body's root, as
// a body of the wrong type is, and nothing changes: null is not "no
// body" (issue 33, item 6). A route whose body is optional still takes
// none.
func TestNullBodiesAreRefused(t *testing.T) {
	t.Parallel()
	e := setupFull(t)
	facts := 0
	fact := func() memory.Record {
		facts++
		return e.create(map[string]any{"type": "semantic", "payload": map[string]any{"kind": "semantic",
			"subject": fmt.Sprintf("runner-%d", facts), "predicate": "runs_on", "object": "ubuntu", "validity": map[string]any{"mode": "global"}}})
	}
	episode := e.create(map[string]any{"type": "episodic", "payload": map[string]any{"kind": "episodic", "timeline": []any{}}})
	state := func() string {
		var n [7]int
		for i, q := range []string{"SELECT count(*) FROM records", "SELECT coalesce(sum(version), 0)::int FROM records",
			"SELECT count(*) FROM audit_log", "SELECT count(*) FROM candidates", "SELECT count(*) FROM feedback",
			"SELECT count(*) FROM leases", "SELECT count(*) FROM erasures"} {
			n[i] = e.count(q)
		}
		return fmt.Sprint(n)
	}
	routes := []struct {
		key, method, path string
		want              string // an object, an array
	}{
		{acmeKey, "POST", "/v1/records", "an object"},
		{acmeKey, "POST", "/v1/records:merge", "an object"},
		{acmeKey, "PATCH", "/v1/records/{id}", "an object"},
		{acmeKey, "POST", "/v1/records/{id}:supersede", "an object"},
		{acmeKey, "POST", "/v1/records/{id}:fork", "an object"},
		{acmeKey, "POST", "/v1/records/{id}:contest", "an object"},
		{acmeKey, "POST", "/v1/records/{id}:retract", "an object"},
		{acmeKey, "POST", "/v1/records/{id}:rollback", "an object"},
		{acmeKey, "POST", "/v1/records/{id}:quarantine", "an object"},
		{acmeKey, "POST", "/v1/records/{id}:release", "an object"},
		{acmeKey, "POST", "/v1/records/{episode}:append", "an object"},
		{acmeKey, "POST", "/v1/records/{id}:purge", "an object"},
		{acmeKey, "POST", "/v1/records/{id}:restore", "an object"},
		{acmeKey, "POST", "/v1/events", "an object"},
		{acmeKey, "POST", "/v1/policy:explain", "an object"},
		{acmeKey, "POST", "/v1/retrieve", "an object"},
		{acmeKey, "POST", "/v1/feedback", "an object"},
		{acmeKey, "POST", "/v1/decay/preview", "an object"},
		{acmeKey, "POST", "/v1/erasures", "an object"},
		{acmeKey, "POST", "/v1/leases", "an object"},
		{opsKey, "POST", "/v1/keys", "an object"},
		{opsKey, "POST", "/v1/encryption:rotate-data", "an object"},
	}
	for _, spelling := range []string{"null", " null\n", "\r\n\tnull  "} {
		for _, r := range routes {
			path := strings.NewReplacer("{id}", fact().ID.String(), "{episode}", episode.ID.String()).Replace(r.path)
			before := state()
			res := e.do(r.method, path, r.key, spelling)
			name := r.method + " " + r.path + " " + spelling
			want := http.StatusUnprocessableEntity
			if r.path == "/v1/erasures" {
				want = http.StatusBadRequest // an erasure's wrong shape is a bad request, as its bad identifiers are
			}
			require.Equal(t, want, res.status, "%s: %s", name, res.body)
			p := res.problem(t)
			require.Equal(t, "urn:engram:problem:validation-failed", p.Type, name)
			require.Len(t, p.Errors, 1, name)
			require.Equal(t, "/", p.Errors[0].Pointer, name)
			require.Equal(t, "must be "+r.want+", not null", p.Errors[0].Message, name)
			require.Equal(t, before, state(), "%s: nothing changes", name)
		}
	}

	// An optional body may still be left out; [] is the wrong type, as
	// before.
	rec := fact()
	res := e.do("POST", "/v1/records/"+rec.ID.String()+":retract", acmeKey, "[]")
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	require.Equal(t, "/", res.problem(t).Errors[0].Pointer)
	res = e.do("POST", "/v1/decay/preview", acmeKey, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	res = e.do("POST", "/v1/records/"+rec.ID.String()+":retract", acmeKey, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
}
