package consolidate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/consolidate"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/store"
)

// setupEpisode is one thread asked to set up the project: the agent runs
// the steps (tool calls with their results) and the thread ends with
// status; its events are a second apart.
func setupEpisode(thread string, steps []map[string]any, status string) []map[string]any {
	at := time.Now().Add(-time.Hour).Truncate(time.Second)
	ev := func(kind string, fields map[string]any) map[string]any {
		at = at.Add(time.Second)
		m := map[string]any{"kind": kind, "agent_id": "coder", "thread_id": thread, "environment": map[string]any{"os": "linux"},
			"time": at.Format(time.RFC3339)}
		for k, v := range fields {
			m[k] = v
		}
		return m
	}
	out := []map[string]any{ev("user_input", map[string]any{"text": "Set up the project"})}
	for i, s := range steps {
		id := fmt.Sprintf("c%d", i)
		out = append(out,
			ev("tool_call", map[string]any{"tool": map[string]any{"name": s["tool"], "call_id": id, "arguments": s["args"]}}),
			ev("tool_output", map[string]any{"tool": map[string]any{"name": s["tool"], "call_id": id, "result": s["result"]}}))
	}
	return append(out, ev("outcome", map[string]any{"outcome": map[string]any{"status": status}}))
}

func shell(cmd string, result any) map[string]any {
	return step("shell", map[string]any{"command": cmd}, result)
}

// gitInit creates the test configuration npm test is later given.
func gitInit(dir string) map[string]any {
	return shell("git init --template=node", fmt.Sprintf("Initialized empty Git repository in %s/.git/\ncreated jest.config.js", dir))
}

var npmTest = shell("npm test -- --config jest.config.js", "Tests: 4 passed, 4 total")

// plans are the tenant's live plan records.
func (e *env) plans() []memory.Record {
	e.t.Helper()
	page, err := store.List(context.Background(), e.db.Pool, "acme", store.Filter{Types: []memory.Type{memory.PlanGraph}})
	require.NoError(e.t, err)
	return page.Records
}

func planOf(t *testing.T, r memory.Record) memory.PlanGraphPayload {
	t.Helper()
	var p memory.PlanGraphPayload
	require.NoError(t, json.Unmarshal(r.Payload, &p))
	return p
}

func ops(p memory.PlanGraphPayload) []string {
	out := make([]string, len(p.Nodes))
	for i, n := range p.Nodes {
		out[i] = n.Op
	}
	return out
}

// Two successful episodes of one intent that followed one graph, and a
// failed one that followed it too: one plan of three nodes, its data and
// control edges and its metrics; a repeated pass changes nothing; a new
// structure with as much support supersedes it as version 2, the first
// kept in history; retrieval by intent finds the plan (issue 11, item 2).
func TestEpisodesOfAnIntentBecomeAPlan(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for i, dir := range []string{"/work/p1", "/home/ci/p2"} {
		e.post(setupEpisode(fmt.Sprintf("setup-%d", i), []map[string]any{
			gitInit(dir), shell("npm install", "added 12 packages in 2s"), npmTest,
		}, "success"))
	}
	e.post(setupEpisode("setup-failed", []map[string]any{
		gitInit("/tmp/p3"), shell("npm install", "added 12 packages in 3s"),
		shell("npm test -- --config jest.config.js", "npm ERR! Test failed. See above for more details."),
	}, "failure"))

	counts := e.consolidate()
	require.Equal(t, int64(1), counts["plan_created"], counts)
	recs := e.plans()
	require.Len(t, recs, 1)
	rec := recs[0]
	p := planOf(t, rec)
	require.Equal(t, "set_up_the_project", p.PlanID)
	require.Equal(t, "set up the project", p.Intent)
	require.Equal(t, "1", p.Version)
	require.Equal(t, []string{"shell git init --template=node", "shell npm install", "shell npm test -- --config jest.config.js"}, ops(p))
	require.Equal(t, []memory.PlanEdge{
		{From: "n1", To: "n2", Kind: consolidate.ControlEdge},
		{From: "n1", To: "n3", Kind: consolidate.DataEdge}, // npm test reads the config git init created
		{From: "n2", To: "n3", Kind: consolidate.ControlEdge},
	}, p.Edges)
	require.EqualValues(t, 2, p.Metrics["uses"])
	require.EqualValues(t, 1, p.Metrics["failures"])
	require.InDelta(t, 0.333, p.Metrics["failure_rate"], 1e-9)
	require.EqualValues(t, 7000, p.Metrics["avg_latency_ms"], "eight events a second apart")
	require.Contains(t, rec.Tags, consolidate.LearnedTag)
	require.Len(t, rec.Provenance.Sources, 2)
	require.Len(t, rec.Relations, 2)
	for _, rel := range rec.Relations {
		require.Equal(t, memory.DerivedFrom, rel.Predicate)
	}
	audit, err := store.Audit(context.Background(), e.db.Pool, "acme", rec.ID)
	require.NoError(t, err)
	require.Contains(t, audit[0].Rationale, `2 successful episodes, 1 failed, of intent "set up the project"`)

	// Retrieval by intent finds it in the plan layer.
	found := e.recallPlans("set up the project")
	require.NotEmpty(t, found)
	require.Equal(t, rec.ID, found[0].ID)

	// A repeated pass changes nothing; nor does one from scratch.
	require.Equal(t, map[string]int64{"episodes": 0}, e.consolidate())
	e.run.cursor = nil
	counts = e.consolidate()
	require.Equal(t, int64(1), counts["plan_unchanged"], counts)
	again := e.plans()
	require.Len(t, again, 1)
	require.Equal(t, rec.ID, again[0].ID)
	require.Equal(t, rec.Version, again[0].Version)

	// Another structure, with as much support and more recent: version 2
	// supersedes version 1, which stays in history.
	for i, dir := range []string{"/work/q1", "/work/q2"} {
		e.post(setupEpisode(fmt.Sprintf("setup-ci-%d", i), []map[string]any{
			gitInit(dir), shell("npm ci", "added 12 packages in 1s"), npmTest,
		}, "success"))
	}
	counts = e.consolidate()
	require.Equal(t, int64(1), counts["plan_revised"], counts)
	recs = e.plans()
	require.Len(t, recs, 1)
	p2 := planOf(t, recs[0])
	require.Equal(t, "set_up_the_project", p2.PlanID)
	require.Equal(t, "2", p2.Version)
	require.Equal(t, "shell npm ci", p2.Nodes[1].Op)
	require.EqualValues(t, 0, p2.Metrics["failures"])
	require.NotEqual(t, rec.ID, recs[0].ID)
	old, err := store.Get(context.Background(), e.db.Pool, "acme", rec.ID)
	require.NoError(t, err)
	require.Equal(t, memory.Superseded, old.Status)
	require.Equal(t, "1", planOf(t, old).Version)

	e.run.cursor = nil
	counts = e.consolidate()
	require.Equal(t, int64(1), counts["plan_unchanged"], counts)

	// More support for the same structure revises its metrics, not its
	// version.
	e.post(setupEpisode("setup-ci-2", []map[string]any{gitInit("/work/q3"), shell("npm ci", "added 12 packages in 1s"), npmTest}, "success"))
	counts = e.consolidate()
	require.Equal(t, int64(1), counts["plan_revised"], counts)
	recs = e.plans()
	require.Len(t, recs, 1)
	p3 := planOf(t, recs[0])
	require.Equal(t, "2", p3.Version)
	require.EqualValues(t, 3, p3.Metrics["uses"])
	require.Len(t, recs[0].Provenance.Sources, 3)
}

func (e *env) recallPlans(intent string) []memory.Record {
	e.t.Helper()
	return e.layer(map[string]any{"intent": intent}, retrieve.LayerPlan)
}

// BuildGraph links a step to the earlier one whose output its arguments
// use, and orders consecutive steps nothing else links.
func TestBuildGraph(t *testing.T) {
	t.Parallel()
	res := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	g := consolidate.BuildGraph([]consolidate.Action{
		{Tool: "shell", Args: map[string]any{"command": "mktemp -d"}, Result: res("/tmp/tmp.Xa81")},
		{Tool: "write_file", Args: map[string]any{"path": "/tmp/tmp.Xa81/main.go"}, Result: res("ok")},
		{Tool: "shell", Args: map[string]any{"command": "go vet ./..."}, Result: res("")},
		{Tool: "shell", Args: map[string]any{"command": "go run /tmp/tmp.Xa81/main.go"}, Result: res("hello")},
	}, nil)
	require.Equal(t, []memory.PlanEdge{
		{From: "n1", To: "n2", Kind: consolidate.DataEdge},
		{From: "n2", To: "n3", Kind: consolidate.ControlEdge},
		{From: "n2", To: "n4", Kind: consolidate.DataEdge}, // the file it wrote
		{From: "n3", To: "n4", Kind: consolidate.ControlEdge},
	}, g.Edges)
	require.Equal(t, g.Key("x"), consolidate.BuildGraph(g.Steps, nil).Key("x"))
	require.NotEqual(t, g.Key("x"), consolidate.BuildGraph(g.Steps[:3], nil).Key("x"))
}
