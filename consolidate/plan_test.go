package consolidate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

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

// intentEpisode is one thread whose user asks for intent in their own
// words: a first attempt fails with errMsg, the agent runs fix and then
// the steps, and the thread succeeds.
func intentEpisode(thread, intent, errMsg string, fix map[string]any, steps ...map[string]any) []map[string]any {
	at := time.Now().Add(-time.Hour).Truncate(time.Second)
	ev := func(kind string, fields map[string]any) map[string]any {
		at = at.Add(time.Second)
		m := map[string]any{"kind": kind, "agent_id": "コーダー", "thread_id": thread, "environment": map[string]any{"os": "linux"},
			"time": at.Format(time.RFC3339)}
		for k, v := range fields {
			m[k] = v
		}
		return m
	}
	out := []map[string]any{ev("user_input", map[string]any{"text": intent})}
	call := func(id string, s map[string]any) {
		out = append(out,
			ev("tool_call", map[string]any{"tool": map[string]any{"name": s["tool"], "call_id": id, "arguments": s["args"]}}),
			ev("tool_output", map[string]any{"tool": map[string]any{"name": s["tool"], "call_id": id, "result": s["result"]}}))
	}
	first := maps.Clone(steps[len(steps)-1])
	first["result"] = errMsg
	call("c0", first)
	out = append(out, ev("error", map[string]any{"error": map[string]any{"message": errMsg, "tool": steps[len(steps)-1]["tool"]}}))
	call("c1", fix)
	for i, s := range steps {
		call(fmt.Sprintf("c%d", i+2), s)
	}
	return append(out, ev("outcome", map[string]any{"outcome": map[string]any{"status": "success"}}))
}

// Intents in Japanese, and one mixing Spanish and Japanese, each fixed
// twice by agents streaming their episodes: each intent gives its own
// procedure and its own plan, whose plan_id keeps its letters; none
// supersedes another (issue 33, items 4 and 5).
func TestIntentsInEveryScriptKeepTheirOwnPlans(t *testing.T) {
	t.Parallel()
	e := setup(t)
	type intent struct {
		texts      [2]string // as two users typed it
		err        [2]string
		fix, steps []map[string]any
		planID     string
	}
	intents := []intent{
		{texts: [2]string{"ステージングにデプロイする", "ステージングにデプロイする"},
			err: [2]string{"デプロイ失敗: ポート 8080 は「api-サーバー」が使用中です", "デプロイ失敗: ポート 9090 は「検索-サーバー」が使用中です"},
			fix: []map[string]any{shell("fuser -k 8080/tcp", "8080/tcp: 4242"), shell("fuser -k 9090/tcp", "9090/tcp: 5151")},
			steps: []map[string]any{shell("docker compose -f ステージング.yml up -d", "Container api  Started"),
				shell("curl -fsS https://staging.example.jp/健康", "ok")},
			planID: "ステージングにデプロイする"},
		{texts: [2]string{"単体テストを実行する", "単体テストを実行する"},
			err: [2]string{"テスト失敗: キャッシュ「/home/ci/プロジェクト-1/テスト/キャッシュ」が壊れています", "テスト失敗: キャッシュ「/home/ci/日付-ヘルパー/テスト/キャッシュ」が壊れています"},
			fix: []map[string]any{shell("rm -rf /home/ci/プロジェクト-1/テスト/キャッシュ", map[string]any{"exit_code": 0}),
				shell("rm -rf /home/ci/日付-ヘルパー/テスト/キャッシュ", map[string]any{"exit_code": 0})},
			steps:  []map[string]any{shell("npm test -- --ci", "Tests: 12 passed, 12 total")},
			planID: "単体テストを実行する"},
		{texts: [2]string{"Desplegar la versión a producción (本番)", "desplegar la versión a producción (本番)"},
			err: [2]string{"error: no se encontró el archivo /srv/configuración/año-2026.yml", "error: no se encontró el archivo /srv/configuración/año-2027.yml"},
			fix: []map[string]any{shell("cp /etc/plantillas/base.yml /srv/configuración/año-2026.yml", map[string]any{"exit_code": 0}),
				shell("cp /etc/plantillas/base.yml /srv/configuración/año-2027.yml", map[string]any{"exit_code": 0})},
			steps:  []map[string]any{shell("helm upgrade api ./chart --namespace producción", "Release \"api\" has been upgraded.")},
			planID: "desplegar_la_versión_a_producción_本番"},
	}
	for i, in := range intents {
		for j := range 2 {
			e.post(intentEpisode(fmt.Sprintf("intent-%d-%d", i, j), in.texts[j], in.err[j], in.fix[j], in.steps...))
		}
	}
	counts := e.consolidate()
	require.Equal(t, int64(len(intents)), counts["plan_created"], counts)
	require.Equal(t, int64(len(intents)), counts["competence_created"], counts)
	byID := map[string]memory.PlanGraphPayload{}
	for _, r := range e.plans() {
		p := planOf(t, r)
		byID[p.PlanID] = p
	}
	require.Len(t, byID, len(intents), "one plan an intent, none superseding another")
	for _, in := range intents {
		p, ok := byID[in.planID]
		require.True(t, ok, "no plan %q among %v", in.planID, byID)
		require.Equal(t, "1", p.Version)
		require.Len(t, p.Nodes, len(in.steps)+1, "the fix, then the steps")
	}
	require.Len(t, e.procedures(), len(intents), "one procedure an error")
}

// A plan_id keeps the letters and digits of every script; a long one is
// cut at a character with a hash of the whole; one with no letter or
// digit is a hash with a readable prefix.
func TestPlanID(t *testing.T) {
	t.Parallel()
	require.Equal(t, "set_up_the_project", consolidate.PlanID("  Set up the project! "))
	require.Equal(t, "ステージングにデプロイする", consolidate.PlanID("ステージングにデプロイする"))
	require.Equal(t, "déployer_l_app_en_préprod", consolidate.PlanID("Déployer l'app en PRÉPROD…"))
	require.Equal(t, "развернуть_на_стенд_2", consolidate.PlanID("Развернуть на стенд №2"))
	require.NotEqual(t, consolidate.PlanID("ステージングにデプロイする"), consolidate.PlanID("単体テストを実行する"))
	long := strings.Repeat("本番環境へのデプロイを確認する", 8)
	id := consolidate.PlanID(long)
	require.LessOrEqual(t, len(id), 80)
	require.True(t, utf8.ValidString(id), id)
	require.NotEqual(t, id, consolidate.PlanID(long+"。"+long))
	a, b := consolidate.PlanID("→ ✓"), consolidate.PlanID("!!!")
	require.True(t, strings.HasPrefix(a, "plan_"), a)
	require.NotEqual(t, a, b)
}
