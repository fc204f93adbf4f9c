package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/retrieve"
)

// planBody is a plan graph of intent setup_project: a repository, a
// backend and a frontend, with the edges given, for the conditions given.
func planBody(edges [][2]string, conds map[string]any) map[string]any {
	es := make([]any, len(edges))
	for i, e := range edges {
		es[i] = map[string]any{"from": e[0], "to": e[1], "kind": "control"}
	}
	p := map[string]any{"kind": "plan_graph", "plan_id": "setup_project", "version": "1", "intent": "setup_project",
		"nodes": []any{
			map[string]any{"id": "repo", "op": "git_init"},
			map[string]any{"id": "backend", "op": "scaffold_backend"},
			map[string]any{"id": "frontend", "op": "scaffold_frontend"},
		},
		"edges": es}
	if conds != nil {
		p["constraints"] = map[string]any{"conditions": conds}
	}
	return map[string]any{"type": "plan_graph", "confidence": 0.8, "payload": p}
}

// A plan graph's edges name its nodes and form no cycle (substrate RFC
// §9; issue 28): a cyclic plan, or one whose edge names a missing node, is
// refused with the edge named, and nothing is written.
func TestPlanGraphsAreValidated(t *testing.T) {
	t.Parallel()
	e := setup(t)

	res := e.do("POST", "/v1/records", acmeKey, planBody([][2]string{{"repo", "backend"}, {"backend", "frontend"}, {"frontend", "repo"}}, nil))
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	p := res.problem(t)
	require.Equal(t, "urn:engram:problem:validation-failed", p.Type)
	require.Len(t, p.Errors, 1)
	require.Equal(t, "/payload/edges/2", p.Errors[0].Pointer)
	require.Contains(t, p.Errors[0].Message, "closes a cycle (frontend → repo → backend → frontend)")

	res = e.do("POST", "/v1/records", acmeKey, planBody([][2]string{{"repo", "repo"}}, nil))
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	require.Equal(t, "/payload/edges/0", res.problem(t).Errors[0].Pointer)

	res = e.do("POST", "/v1/records", acmeKey, planBody([][2]string{{"repo", "backend"}, {"backend", "ci"}}, nil))
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	p = res.problem(t)
	require.Equal(t, "/payload/edges/1/to", p.Errors[0].Pointer)
	require.Contains(t, p.Errors[0].Message, `"ci" is not the id of a node`)

	res = e.do("POST", "/v1/records", acmeKey, planBody(nil, map[string]any{"os": map[string]any{"name": "linux"}}))
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	require.Equal(t, "/payload/constraints/conditions/os", res.problem(t).Errors[0].Pointer)
	require.Zero(t, e.count("SELECT count(*) FROM records"), "nothing was written")

	// A diamond is no cycle.
	res = e.do("POST", "/v1/records", acmeKey, planBody([][2]string{{"repo", "backend"}, {"repo", "frontend"}, {"backend", "frontend"}}, nil))
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
}

// One intent may have several live plans, one for each set of conditions
// in its constraints, and retrieval offers the one whose conditions the
// task's hold, never one for other conditions (substrate RFC §9, §15A.11;
// issue 28).
func TestPlansAreSelectedByConstraints(t *testing.T) {
	t.Parallel()
	e := setupRetrieve(t)
	ids := map[string]string{}
	for _, platform := range []string{"web", "mobile"} {
		res := e.do("POST", "/v1/records", acmeKey, planBody([][2]string{{"repo", "backend"}, {"backend", "frontend"}}, map[string]any{"platform": platform}))
		require.Equal(t, http.StatusCreated, res.status, "a plan for %s: %s", platform, res.body)
		var rec memory.Record
		res.decode(t, &rec)
		require.Equal(t, memory.Active, rec.Status)
		ids[platform] = rec.ID.String()
	}

	for _, platform := range []string{"web", "mobile"} {
		res := e.do("POST", "/v1/retrieve", acmeKey, map[string]any{"task": map[string]any{
			"text": "set up my project", "intent": "setup_project", "conditions": map[string]any{"platform": platform}}})
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		var out retrieve.Result
		res.decode(t, &out)
		var got []string
		for _, l := range out.Layers {
			if l.Name == retrieve.LayerPlan {
				for _, it := range l.Items {
					got = append(got, it.Record.ID.String())
					require.Equal(t, []string{"platform"}, it.Why.MatchedConditions)
				}
			}
		}
		require.Equal(t, []string{ids[platform]}, got, "the %s plan only", platform)
	}
}
