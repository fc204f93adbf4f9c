package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/jobs"
)

// Jobs work across every tenant: only an operator key lists or runs them,
// and a tenant's key learns nothing of other tenants from the refusal.
func TestOperatorOnlyRoutes(t *testing.T) {
	t.Parallel()
	e := setupDecay(t)
	for range 3 {
		e.createEpisode() // acme's
	}
	run := e.runJob(decay.SweepJob)
	require.Equal(t, jobs.StatusSucceeded, run.Status)
	require.EqualValues(t, 3, run.Counts["scanned"], "the sweep saw acme's records")
	runs := e.count("SELECT count(*) FROM job_runs")

	for _, rt := range []struct{ method, path string }{
		{"GET", "/v1/jobs"},
		{"POST", "/v1/jobs/decay_sweep:run"},
		{"POST", "/v1/jobs/decay_purge:run"},
		{"POST", "/v1/jobs/nope:run"},
	} {
		for _, key := range []string{otherKey, acmeKey} {
			res := e.do(rt.method, rt.path, key, nil)
			require.Equal(t, http.StatusForbidden, res.status, "%s %s: %s", rt.method, rt.path, res.body)
			p := res.problem(t)
			require.Equal(t, "urn:engram:problem:forbidden", p.Type)
			require.Contains(t, p.Detail, "operator key")
			body := string(res.body)
			for _, leak := range []string{"acme", "scanned", "counts", "decay_purge", "last_run", `"3"`, ":3"} {
				require.NotContains(t, strings.ReplaceAll(body, rt.path, ""), leak, "%s %s tells a tenant key about %s", rt.method, rt.path, leak)
			}
		}
	}
	require.Equal(t, runs, e.count("SELECT count(*) FROM job_runs"), "a tenant's key started no run")

	res := e.do("GET", "/v1/jobs", opsKey, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var ov jobs.Overview
	res.decode(t, &ov)
	require.Len(t, ov.Jobs, 2)

	res = e.do("POST", "/v1/jobs/nope:run", opsKey, nil)
	require.Equal(t, http.StatusNotFound, res.status, "the operator key reaches the handler")
}

// An operator key reads and writes no tenant's memory: every tenant route
// refuses it, and says to use a tenant's key.
func TestOperatorKeyRefusedOnTenantRoutes(t *testing.T) {
	t.Parallel()
	e := setupDecay(t)
	rec := e.createEpisode()
	id := rec.ID.String()
	for _, rt := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/records", factBody("go", nil)},
		{"GET", "/v1/records", nil},
		{"POST", "/v1/records:merge", map[string]any{"record_ids": []string{id}}},
		{"GET", "/v1/records/" + id, nil},
		{"PATCH", "/v1/records/" + id, map[string]any{}},
		{"DELETE", "/v1/records/" + id, nil},
		{"POST", "/v1/records/" + id + ":retract", map[string]any{}},
		{"POST", "/v1/records/" + id + ":restore", nil},
		{"GET", "/v1/records/" + id + "/history", nil},
		{"GET", "/v1/records/" + id + "/audit", nil},
		{"GET", "/v1/records/" + id + "/relations", nil},
		{"POST", "/v1/artifacts", "x"},
		{"GET", "/v1/artifacts/" + strings.Repeat("0", 64), nil},
		{"POST", "/v1/events", []any{}},
		{"POST", "/v1/events:stream", "{}\n"},
		{"GET", "/v1/candidates", nil},
		{"GET", "/v1/threads/t1", nil},
		{"POST", "/v1/retrieve", map[string]any{"task": map[string]any{"text": "x"}}},
		{"POST", "/v1/feedback", map[string]any{"key": "k", "record_ids": []string{id}, "outcome": "used_success"}},
		{"GET", "/v1/stats/salience", nil},
		{"POST", "/v1/decay/preview", nil},
	} {
		res := e.do(rt.method, rt.path, opsKey, rt.body)
		require.Equal(t, http.StatusForbidden, res.status, "%s %s: %s", rt.method, rt.path, res.body)
		p := res.problem(t)
		require.Equal(t, "urn:engram:problem:forbidden", p.Type)
		require.Contains(t, p.Detail, "tenant's key")
		require.NotContains(t, string(res.body), "episodic")
	}
	var got struct{ Status string }
	e.do("GET", "/v1/records/"+id, acmeKey, nil).decode(t, &got)
	require.Equal(t, "active", got.Status, "the operator key changed nothing")

	// The policy is the operator's, and holds no tenant's data: either key
	// may ask what it would do.
	res := e.do("POST", "/v1/policy:explain", opsKey, map[string]any{})
	require.NotEqual(t, http.StatusForbidden, res.status, string(res.body))
}
