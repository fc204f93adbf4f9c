package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/embedding"
	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

// recallEnv is an env whose engramd serves retrieval and feedback.
type recallEnv struct {
	*env
	pool pg.DBTX
}

// setupRecall is setup with retrieval (over the lexical embedder) and the
// feedback it takes served.
func setupRecall(t *testing.T) *recallEnv {
	t.Helper()
	db := pgtest.NewSchema(t)
	decaySettings, err := decay.NewSettings(decay.DefaultConfig())
	require.NoError(t, err)
	wr := revise.New(db.Pool, revise.Config{Defaults: decaySettings.Defaults})
	require.NoError(t, store.EnsureTenant(t.Context(), db.Pool, "acme"))
	settings, err := retrieve.NewSettings(retrieve.DefaultConfig())
	require.NoError(t, err)
	srv := httptest.NewServer(server.New(server.Config{
		DB:       db.Pool,
		Writer:   wr,
		Decay:    decay.New(db.Pool, wr, decaySettings),
		Retrieve: retrieve.New(db.Pool, settings, retrieve.WithEmbedder(embedding.NewLexical())),
		Keys:     []server.Key{{Tenant: "acme", Name: "test", Secret: testKey, Role: server.RoleCurator}},
	}))
	t.Cleanup(srv.Close)
	return &recallEnv{
		env:  &env{t: t, url: srv.URL, environ: map[string]string{"ENGRAM_URL": srv.URL, "ENGRAM_API_KEY": testKey}, dir: t.TempDir()},
		pool: db.Pool,
	}
}

// startThread opens a thread as ingestion does, and returns the id of its
// working memory.
func (e *recallEnv) startThread(thread, summary string) string {
	e.t.Helper()
	var id string
	ch := revise.Change{Actor: "test"}
	err := revise.New(e.pool, revise.Config{}).InTx(e.t.Context(), func(ctx context.Context, tx *revise.Tx) error {
		ep, err := tx.Create(ctx, "acme", memory.Record{Type: memory.Episodic, Payload: json.RawMessage(`{"kind": "episodic", "timeline": []}`)}, ch)
		if err != nil {
			return err
		}
		wm, err := tx.Create(ctx, "acme", memory.Record{Type: memory.Working,
			Payload: json.RawMessage(`{"kind": "working", "thread_id": "` + thread + `", "state": "executing", "context_summary": "` + summary + `"}`)}, ch)
		if err != nil {
			return err
		}
		id = wm.ID.String()
		_, err = store.InsertThread(ctx, tx.Exec(), "acme", thread, "coder", ep.ID, wm.ID)
		return err
	})
	require.NoError(e.t, err)
	return id
}

func skill(name, signal string, conds map[string]any) map[string]any {
	trigger := map[string]any{"signal": signal}
	if conds != nil {
		trigger["conditions"] = conds
	}
	return map[string]any{"type": "competence", "confidence": 0.8, "payload": map[string]any{
		"kind": "competence", "skill_name": name, "triggers": []any{trigger},
		"recipe": []any{map[string]any{"step": "clear the cache"}}, "performance": map[string]any{"successes": 3, "failures": 1}}}
}

// recallHeader is the first line of a recall.
var recallHeader = regexp.MustCompile(`^retrieval ([0-9a-f-]{36}) at clearance (\w+): (\d+) of 20 items, \d+ of 4000 tokens, (\d+) withheld\n`)

// An agent's loop: recall what helps with a task, layer by layer, and
// report how it served.
func TestRecall(t *testing.T) {
	t.Parallel()
	e := setupRecall(t)
	factID := e.create(fact("go", map[string]any{"project_kind": "backend"}))
	taskID := e.startThread("task-42", "choosing a language")

	out := e.ok("recall", "which", "language", "does", "the", "user", "prefer", "--cond", "project_kind=backend", "--thread", "task-42")
	m := recallHeader.FindStringSubmatch(out)
	require.NotNil(t, m, out)
	require.Equal(t, "medium", m[2])
	require.Equal(t, "2", m[3])
	require.Equal(t, "0", m[4])
	require.Regexp(t, `\nworking\n  \d\.\d\d  `+taskID+`  executing: choosing a language\n`, out)
	require.Regexp(t, `\nsemantic\n  \d\.\d\d  `+factID+`  user prefers_language = go when project_kind=backend\n`, out)
	require.True(t, strings.HasSuffix(out, "\nno competence, plan or episodic memory matched\n"), out)

	// The task's conditions travel as values: another project kind rules
	// the fact out.
	out = e.ok("recall", "which language does the user prefer", "--cond", "project_kind=data")
	require.NotContains(t, out, factID)
	require.Contains(t, out, "\nno semantic, competence, plan or episodic memory matched\n")

	raw := e.ok("recall", "which language does the user prefer", "--json")
	require.Equal(t, 1, strings.Count(raw, "\n"), "--json prints the API's JSON as it came")
	var res struct {
		RetrievalID string `json:"retrieval_id"`
		Layers      []struct {
			Layer string
			Items []struct {
				Record struct{ ID string }
				Why    struct{ Terms []string }
			}
		}
	}
	decode(t, raw, &res)
	require.NotEmpty(t, res.RetrievalID)
	require.Equal(t, "semantic", res.Layers[0].Layer, "no thread, no working layer")
	require.Len(t, res.Layers[0].Items, 1)
	require.Equal(t, factID, res.Layers[0].Items[0].Record.ID)
	require.NotEmpty(t, res.Layers[0].Items[0].Why.Terms)

	out = e.ok("feedback", res.RetrievalID, "--outcome", "used_success")
	require.Regexp(t, `^used_success: 1 applied, 0 already counted, 0 no longer live\nID\s+SALIENCE\s+VERSION\n`+factID+`\s+1.00\s+1\n$`, out)
	out = e.ok("feedback", res.RetrievalID, "--outcome", "used_success", "--record", factID)
	require.Equal(t, "used_success: 0 applied, 1 already counted, 0 no longer live\nalready counted: "+factID+"\n", out)
}

// Records above the caller's clearance are counted, never shown; at its
// limit they are shown as gating leaves them.
func TestRecallTrust(t *testing.T) {
	t.Parallel()
	e := setupRecall(t)
	secret := fact("go", nil)
	secret["sensitivity"] = "high"
	id := e.create(secret)

	m := recallHeader.FindStringSubmatch(e.ok("recall", "user prefers language"))
	require.NotNil(t, m)
	require.Equal(t, []string{"medium", "0", "1"}, m[2:])

	out := e.ok("recall", "user prefers language", "--clearance", "high")
	require.Regexp(t, `\nsemantic\n  \d\.\d\d  `+id+`  user prefers_language = \[WITHHELD\]  \(summarised\)\n`, out)

	m = recallHeader.FindStringSubmatch(e.ok("recall", "user prefers language", "--clearance", "high", "--unauthenticated"))
	require.NotNil(t, m)
	require.Equal(t, []string{"public", "0", "1"}, m[2:])
}

// Procedures that match about equally well say which condition would
// separate them.
func TestRecallNeedsDisambiguation(t *testing.T) {
	t.Parallel()
	e := setupRecall(t)
	e.create(skill("fix_linker_linux", "ld: cannot find -lssl", map[string]any{"os": "linux"}))
	e.create(skill("fix_linker_mac", "ld: cannot find -lssl", map[string]any{"os": "darwin"}))

	out := e.ok("recall", "--signal", "ld: cannot find -lssl")
	require.Regexp(t, `\ncompetence\n(  \d\.\d\d  \S+  fix_linker_(linux|mac), success \d+%, on "ld: cannot find -lssl"\n        1\. clear the cache\n){2}  needs disambiguation: separate by os\n`, out)

	out = e.ok("recall", "--signal", "ld: cannot find -lssl", "--cond", "os=darwin")
	require.Contains(t, out, "fix_linker_mac")
	require.NotContains(t, out, "fix_linker_linux")
	require.NotContains(t, out, "needs disambiguation")
}

// A request the server refuses is reported with its field errors; a
// command line that cannot be sent is a usage error.
func TestRecallErrors(t *testing.T) {
	t.Parallel()
	e := setupRecall(t)

	r := e.run("", "recall", "deploy", "--clearance", "secret")
	require.Error(t, r.err)
	require.Equal(t, 1, exitCode(r.err))
	require.Empty(t, r.stdout)
	require.Contains(t, r.stderr, "engram: Validation failed (HTTP 422): ")
	require.Contains(t, r.stderr, "\n  /trust/clearance: \"secret\" is not a sensitivity level (public, low, medium, high, hyper)\n")

	r = e.run("", "recall", "deploy", "--items", "0", "--layer", "semantic=500")
	require.Equal(t, 1, exitCode(r.err))
	require.Contains(t, r.stderr, "\n  /budget/items: must be between 1 and 200\n")
	require.Contains(t, r.stderr, "\n  /budget/layers/semantic: must be between 1 and 100\n")

	r = e.run("", "feedback", "0190a1b2-0000-7000-8000-000000000000", "--outcome", "unused")
	require.Equal(t, 1, exitCode(r.err))
	require.Contains(t, r.stderr, "\n  /retrieval_id: no such retrieval\n")

	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"recall", "deploy", "--cond", "os"}, `invalid value "os" for flag -cond: want KEY=VALUE, such as os=linux`},
		{[]string{"recall", "deploy", "--cond", "=linux"}, `invalid value "=linux" for flag -cond`},
		{[]string{"recall", "deploy", "--cond", "os=linux", "--cond", "os=darwin"}, "os is given twice"},
		{[]string{"recall", "deploy", "--layer", "semantic"}, "want LAYER=N"},
		{[]string{"recall", "--agent", "coder"}, "recall needs TEXT, or --intent, --signal, --tool or --thread"},
		{[]string{"feedback", "--outcome", "unused"}, "usage: engram feedback RETRIEVAL_ID --outcome"},
		{[]string{"feedback", "0190a1b2-0000-7000-8000-000000000000"}, "feedback: --outcome is required"},
	} {
		r := e.run("", c.args...)
		require.Error(t, r.err, c.args)
		require.Equal(t, 2, exitCode(r.err), c.args)
		require.Contains(t, r.stderr, c.stderr, c.args)
		require.True(t, strings.HasSuffix(r.stderr, "\nRun 'engram help' for usage.\n"), r.stderr)
	}
	require.Contains(t, usage, "\n  recall TEXT ")
	require.Contains(t, usage, "\n  feedback RETRIEVAL_ID ")
}

func TestConditionValue(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]any{
		"linux": "linux", "true": true, "false": false, "3": 3.0, "-1.5e3": -1500.0, "1.20": 1.2,
		`"1.20"`: "1.20", `"true"`: "true", "": "", "0x10": "0x10", "1e999": "1e999", "12abc": "12abc",
		"True": "True", `"unterminated`: `"unterminated`,
	} {
		require.Equal(t, want, conditionValue(in), in)
	}
}

// A recall: the header, then each layer with an item a line, best first.
func Example_recallAnswer() {
	c := &cli{stdout: os.Stdout}
	_ = c.recallAnswer([]byte(`{
		"retrieval_id": "0190a7b5-1111-7b3a-9d2f-3c4e5f6a7b8c", "clearance": "medium", "withheld": 1,
		"lexical_only": true, "notes": ["vector search off: no embedder configured"],
		"budget": {"items": 5, "tokens": 640, "items_limit": 20, "tokens_limit": 4000},
		"layers": [
			{"layer": "working", "items": [{"score": 1, "gating": "return", "tokens": 40,
				"record": {"id": "0190a7b4-7c1e-7b3a-9d2f-3c4e5f6a7b8a", "type": "working",
					"payload": {"kind": "working", "thread_id": "task-42", "state": "executing", "context_summary": "rebuilding the image"}}}]},
			{"layer": "semantic", "items": [{"score": 0.82, "gating": "summarise", "tokens": 60,
				"record": {"id": "0190a7b4-7c1e-7b3a-9d2f-3c4e5f6a7b8b", "type": "semantic",
					"payload": {"kind": "semantic", "subject": "registry", "predicate": "token", "object": "[WITHHELD]", "validity": {"mode": "global"}}}}],
				"omitted": 2},
			{"layer": "competence", "needs_disambiguation": true, "separating_keys": ["os"], "items": [
				{"score": 0.61, "gating": "return", "tokens": 120,
					"why": {"matched_signal": "ld: cache mismatch in /tmp/b7/obj.o", "success_rate": 0.8, "bindings": {"dir": "/tmp/b7"}},
					"record": {"id": "0190a7b4-7c1e-7b3a-9d2f-3c4e5f6a7b8c", "type": "competence", "payload": {"kind": "competence", "skill_name": "fix_linker_cache",
						"recipe": [{"step": "run rm -rf {dir}/cache"}, {"step": "run make build"}]}}},
				{"score": 0.6, "gating": "return", "tokens": 120, "why": {"matched_signal": "ld: cache mismatch", "success_rate": 0.75},
					"record": {"id": "0190a7b4-7c1e-7b3a-9d2f-3c4e5f6a7b8d", "type": "competence", "payload": {"kind": "competence", "skill_name": "fix_linker_cache_mac"}}}]},
			{"layer": "plan", "items": []},
			{"layer": "episodic", "items": [{"score": 0.3, "gating": "return", "tokens": 300,
				"record": {"id": "0190a7b4-7c1e-7b3a-9d2f-3c4e5f6a7b8e", "type": "episodic",
					"payload": {"kind": "episodic", "outcome": "success", "timeline": [
						{"event_kind": "tool_call", "summary": "make failed: ld cache mismatch"},
						{"event_kind": "tool_call", "summary": "cleared the cache"},
						{"event_kind": "outcome"}]}}}]}
		]}`))
	// Output:
	// retrieval 0190a7b5-1111-7b3a-9d2f-3c4e5f6a7b8c at clearance medium: 5 of 20 items, 640 of 4000 tokens, 1 withheld
	// lexical only: vector search off: no embedder configured
	//
	// working
	//   1.00  0190a7b4-7c1e-7b3a-9d2f-3c4e5f6a7b8a  executing: rebuilding the image
	//
	// semantic
	//   0.82  0190a7b4-7c1e-7b3a-9d2f-3c4e5f6a7b8b  registry token = [WITHHELD]  (summarised)
	//   2 more left out by the budget
	//
	// competence
	//   0.61  0190a7b4-7c1e-7b3a-9d2f-3c4e5f6a7b8c  fix_linker_cache, success 80%, on "ld: cache mismatch in /tmp/b7/obj.o"
	//         with dir=/tmp/b7
	//         1. run rm -rf /tmp/b7/cache
	//         2. run make build
	//   0.60  0190a7b4-7c1e-7b3a-9d2f-3c4e5f6a7b8d  fix_linker_cache_mac, success 75%, on "ld: cache mismatch"
	//   needs disambiguation: separate by os
	//
	// episodic
	//   0.30  0190a7b4-7c1e-7b3a-9d2f-3c4e5f6a7b8e  success, make failed: ld cache mismatch, cleared the cache, 1 more event
	//
	// no plan memory matched
}
