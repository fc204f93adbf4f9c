package consolidate_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/consolidate"
	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

// run is one agent run as a shell-only agent streams it: its single tool
// is bash with one command string, and each command's output is its exit
// code and what it printed.
type run struct {
	thread string
	env    map[string]any
	events []map[string]any
}

func newRun(thread, task string, env map[string]any) *run {
	if env == nil {
		env = map[string]any{}
	}
	r := &run{thread: thread, env: env}
	r.add("user_input", map[string]any{"text": task})
	return r
}

func (r *run) add(kind string, fields map[string]any) {
	m := map[string]any{"kind": kind, "agent_id": "shell-agent", "thread_id": r.thread, "environment": r.env}
	for k, v := range fields {
		m[k] = v
	}
	r.events = append(r.events, m)
}

// bash runs a command that exits with code and prints out (stdout when it
// worked, stderr when it did not).
func (r *run) bash(cmd string, code int, out string) *run {
	id := fmt.Sprintf("c%d", len(r.events))
	r.add("tool_call", map[string]any{"tool": map[string]any{"name": "bash", "call_id": id, "arguments": map[string]any{"command": cmd}}})
	res := map[string]any{"exit_code": code, "stdout": "", "stderr": ""}
	if code == 0 {
		res["stdout"] = out
	} else {
		res["stderr"] = out
	}
	r.add("tool_output", map[string]any{"tool": map[string]any{"name": "bash", "call_id": id, "result": res}})
	return r
}

func (r *run) end(status string) []map[string]any {
	r.add("outcome", map[string]any{"outcome": map[string]any{"status": status}})
	return r.events
}

// competence retrieves for a task whose error is signal and returns the
// competence layer's items, with why.
func (e *env) competence(signal string) []api.Item {
	e.t.Helper()
	status, body := e.do("POST", "/v1/retrieve", map[string]any{"task": map[string]any{"text": signal, "signals": []string{signal}}})
	require.Equal(e.t, http.StatusOK, status, string(body))
	var res api.RetrieveResult
	require.NoError(e.t, json.Unmarshal(body, &res))
	for _, l := range res.Layers {
		if l.Name == api.LayerCompetence {
			return l.Items
		}
	}
	return nil
}

// followable is the first item retrieval says to follow, with its recipe's
// arguments bound from why.bindings as a client binds them.
func followable(t *testing.T, items []api.Item) (api.Item, []string) {
	t.Helper()
	for _, it := range items {
		if !it.Why.Followable {
			continue
		}
		require.True(t, it.Why.SignatureMatch)
		var p memory.CompetencePayload
		require.NoError(t, json.Unmarshal(it.Record.Payload, &p))
		var cmds []string
		for _, s := range p.Recipe {
			args, _ := s.ArgsSchema["arguments"].(map[string]any)
			cmd, _ := args["command"].(string)
			for name, v := range it.Why.Bindings {
				cmd = strings.ReplaceAll(cmd, "{"+name+"}", v)
			}
			cmds = append(cmds, cmd)
		}
		return it, cmds
	}
	t.Fatalf("no followable procedure among %d items", len(items))
	return api.Item{}, nil
}

// A build error that names its package bare ("tokio-28", no quotes, no
// path) and one that names it in quotes each become one procedure whose
// variable retrieval binds from the next occurrence of the error, with
// another package: the bare value through the error template learned from
// the stream, the quoted one through the fixed normalisation.
func TestBareAndQuotedValuesAreBoundFromTheNextError(t *testing.T) {
	t.Parallel()
	e := setup(t)
	linux := map[string]any{"os": "linux"}
	for i, pkg := range []string{"tokio-28", "numpy-12"} {
		e.post(newRun(fmt.Sprintf("bare-%d", i), "build the service", linux).
			bash("ls", 0, "Cargo.toml src").
			bash("cargo build", 101, fmt.Sprintf("E8949: bundler failed on %s (line %d)", pkg, 100+i)).
			bash("cat Cargo.toml", 0, "[package]").
			bash("pkg install "+pkg, 0, "installed "+pkg).
			bash("cargo build", 0, "Finished release").end("success"))
		mod := []string{"yaml", "requests"}[i]
		e.post(newRun(fmt.Sprintf("quoted-%d", i), "run the app", linux).
			bash("python app.py", 1, fmt.Sprintf("Traceback (most recent call last):\n  File \"app.py\", line 1, in <module>\nModuleNotFoundError: No module named '%s'", mod)).
			bash("pip install "+mod, 0, "Successfully installed "+mod).
			bash("python app.py", 0, "ok").end("success"))
	}
	counts := e.consolidate()
	require.Equal(t, int64(2), counts["competence_created"], counts)

	it, cmds := followable(t, e.competence("E8949: bundler failed on serde-3 (line 7)"))
	require.Equal(t, map[string]string{"package": "serde-3"}, it.Why.Bindings)
	require.Equal(t, []string{"pkg install serde-3", "cargo build"}, cmds, "the probes are no steps; the install is bound")

	it, cmds = followable(t, e.competence("ModuleNotFoundError: No module named 'toml'"))
	require.Equal(t, map[string]string{"package": "toml"}, it.Why.Bindings)
	require.Equal(t, []string{"pip install toml", "python app.py"}, cmds)

	// Another error of the same program is no occurrence of either: related
	// at best, never to follow.
	for _, it := range e.competence("E1212: linker failed on serde-3 (line 7)") {
		require.False(t, it.Why.Followable, it.Why.MatchedSignal)
	}
}

// One run meets three errors and resolves each a few commands later, in
// between reading files, writing one by heredoc and searching for what is
// not there: three problems, each its own procedure once a second run of
// another task resolves them too; a search that finds nothing is no
// error, and the heredoc write is a step of the fix it made.
func TestThreeErrorsResolvedInOneRunAreThreeProblems(t *testing.T) {
	t.Parallel()
	e := setup(t)
	fix := "cat <<'EOF' > src/parse.py\ndef parse(s):\n    return s.strip()\nEOF"
	for i, v := range []struct{ mod, test, prog string }{{"yaml", "test_parse", "jq"}, {"toml", "test_dump", "yq"}} {
		r := newRun(fmt.Sprintf("long-%d", i), fmt.Sprintf("make task %d pass", i), map[string]any{"os": "linux"})
		r.bash("cat README.md", 0, "# project").
			bash("python -m pytest tests/", 1, fmt.Sprintf("ModuleNotFoundError: No module named '%s'", v.mod)).
			bash("pip install "+v.mod, 0, "Successfully installed").
			bash("python -m pytest tests/", 1, fmt.Sprintf("FAILED tests/test_app.py::%s - AssertionError", v.test)).
			bash("grep -rn TODO src", 1, "").
			bash(fix, 0, "").
			bash("python -m pytest tests/", 0, "3 passed").
			bash("git status", 0, "modified: src/parse.py").
			bash("make build", 2, fmt.Sprintf("bash: %s: command not found", v.prog)).
			bash("apt-get install -y "+v.prog, 0, "Setting up "+v.prog).
			bash("make build", 0, "built")
		e.post(r.end("success"))
	}
	counts := e.consolidate()
	require.Equal(t, int64(3), counts["competence_created"], counts)

	_, cmds := followable(t, e.competence("ModuleNotFoundError: No module named 'attrs'"))
	require.Equal(t, []string{"pip install attrs", "python -m pytest tests/"}, cmds)
	_, cmds = followable(t, e.competence("FAILED tests/test_app.py::test_load - AssertionError"))
	require.Equal(t, []string{fix, "python -m pytest tests/"}, cmds, "the heredoc wrote the fix; the empty grep and the probes are no steps")
	it, cmds := followable(t, e.competence("bash: rg: command not found"))
	require.Equal(t, []string{"apt-get install -y rg", "make build"}, cmds)
	require.Equal(t, map[string]string{"package": "rg"}, it.Why.Bindings)
}

// A procedure that keeps failing is retracted by the one rule of its
// lifecycle whether its failures arrive by feedback or are observed in
// later episodes: three failures in a row since its last success.
func TestFeedbackFailuresRetractByTheLifecycleRule(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for i, dir := range []string{"/srv/a-1", "/srv/b-2"} {
		e.post(episode(fmt.Sprintf("fix-%d", i), map[string]any{}, "ld: cache mismatch in "+dir+"/obj.o", []map[string]any{
			step("shell", map[string]any{"command": "rm -rf " + dir + "/cache"}, map[string]any{"exit_code": 0}), buildOK,
		}, "success"))
	}
	e.consolidate()
	require.Len(t, e.procedures(), 1)
	for i := range 3 {
		status, body := e.do("POST", "/v1/retrieve", map[string]any{"task": map[string]any{"signals": []string{"ld: cache mismatch in /srv/c-3/obj.o"}}})
		require.Equal(t, http.StatusOK, status, string(body))
		var res api.RetrieveResult
		require.NoError(t, json.Unmarshal(body, &res))
		live := e.procedures()
		if i < 3 {
			require.Len(t, live, 1, "retracted after %d failures", i)
		}
		status, body = e.do("POST", "/v1/feedback", map[string]any{"retrieval_id": res.RetrievalID, "record_ids": []string{live[0].ID.String()}, "outcome": "used_failure"})
		require.Equal(t, http.StatusOK, status, string(body))
	}
	require.Empty(t, e.procedures(), "three failures in a row retract it")
	gone, err := store.List(t.Context(), e.db.Pool, "acme", store.Filter{Types: []memory.Type{memory.Competence}, Statuses: []memory.Status{memory.Retracted}})
	require.NoError(t, err)
	require.Len(t, gone.Records, 1)
	p := payloadOf(t, gone.Records[0])
	require.Equal(t, 3, p.Performance.Failures)
	require.InDelta(t, 2.0/6, gone.Records[0].Confidence, 0.001, "its confidence fell with each failure: s/(s+f+1)")
	require.Equal(t, "ssfff", p.Performance.Recent)
	audit, err := store.Audit(t.Context(), e.db.Pool, "acme", gone.Records[0].ID)
	require.NoError(t, err)
	require.Contains(t, audit[len(audit)-1].Rationale, "3 failures in a row since its last success")
	require.Contains(t, audit[len(audit)-1].Rationale, "reported by feedback")
}

// Episodes as real agents send them — one step and no error, or a first
// input of 2,000 characters — never wedge consolidation: every pass
// succeeds, learns what it can (a plan of one step, a plan whose id is
// bounded), and the next pass still does; another tenant's procedure is
// learned in the same passes.
func TestOddEpisodesLeaveConsolidationHealthy(t *testing.T) {
	t.Parallel()
	e := setup(t)
	long := strings.Repeat("please fix the flaky integration build ", 52)[:2000]
	for _, th := range []string{"one-a", "one-b"} {
		r := newRun(th, "restart the cache", nil)
		r.add("tool_call", map[string]any{"tool": map[string]any{"name": "svc", "arguments": []any{"restart cache"}}})
		e.post(r.end("success"))
	}
	for _, th := range []string{"long-a", "long-b"} {
		e.post(newRun(th, long, nil).bash("make test", 0, "ok").bash("make build", 0, "ok").end("success"))
	}
	for i, pkg := range []string{"left-pad", "is-odd"} {
		events := newRun(fmt.Sprintf("beta-%d", i), "install", nil).
			bash("node app.js", 1, fmt.Sprintf("Error: Cannot find module '%s'", pkg)).
			bash("npm install "+pkg, 0, "added 1 package").
			bash("node app.js", 0, "ok").end("success")
		status, body := e.doAs(betaKey, "POST", "/v1/events", events)
		require.Equal(t, http.StatusAccepted, status, string(body))
		e.drain()
	}
	counts := e.consolidate()
	require.Equal(t, int64(2), counts["plan_created"], counts)
	require.Equal(t, int64(3), counts["competence_created"], counts, "the two tasks' and beta's")
	status, body := e.doAs(betaKey, "POST", "/v1/retrieve", map[string]any{"task": map[string]any{"signals": []string{"Error: Cannot find module 'chalk'"}}})
	require.Equal(t, http.StatusOK, status, string(body))
	require.Contains(t, string(body), `"bindings":{"package":"chalk"}`, "beta's procedure, learned in the same pass")
	require.Zero(t, counts["skipped_plan_graph"]+counts["skipped_competence"]+counts["tenants_failed"], counts)
	for _, p := range e.plansNow() {
		require.NotNil(t, p.Edges, "a plan's edges are a list, never null")
		require.LessOrEqual(t, len(p.PlanID), 80)
	}
	e.post(newRun("one-c", "restart the cache", nil).bash("svc restart cache", 0, "ok").end("success"))
	e.consolidate()
}

// plansNow are the tenant's live plan payloads.
func (e *env) plansNow() []memory.PlanGraphPayload {
	e.t.Helper()
	page, err := store.List(e.t.Context(), e.db.Pool, "acme", store.Filter{Types: []memory.Type{memory.PlanGraph}})
	require.NoError(e.t, err)
	var out []memory.PlanGraphPayload
	for _, r := range page.Records {
		var p memory.PlanGraphPayload
		require.NoError(e.t, json.Unmarshal(r.Payload, &p))
		out = append(out, p)
	}
	return out
}

// A procedure that later episodes use successfully gains salience as if an
// agent had reported it: its usefulness, observed, keeps it from decaying.
func TestObservedUsesReinforceSalience(t *testing.T) {
	t.Parallel()
	e := setup(t)
	settings, err := decay.NewSettings(decay.DefaultConfig())
	require.NoError(t, err)
	wr := revise.New(e.db.Pool, revise.Config{})
	e.cons = consolidate.New(consolidate.Config{DB: e.db.Pool, Writer: wr, Decay: decay.New(e.db.Pool, wr, settings)})
	fix := func(i int, dir string) {
		e.post(episode(fmt.Sprintf("fix-%d", i), map[string]any{}, "ld: cache mismatch in "+dir+"/obj.o", []map[string]any{
			step("shell", map[string]any{"command": "rm -rf " + dir + "/cache"}, map[string]any{"exit_code": 0}), buildOK,
		}, "success"))
	}
	fix(0, "/srv/a-1")
	fix(1, "/srv/b-2")
	e.consolidate()
	before := e.procedures()[0]
	// As if it had decayed for weeks unused.
	_, err = e.db.Pool.Exec(t.Context(), `UPDATE records SET salience = 0.3 WHERE id = $1`, before.ID)
	require.NoError(t, err)
	fix(2, "/srv/c-3")
	e.consolidate()
	after := e.procedures()[0]
	require.Equal(t, before.ID, after.ID)
	require.Greater(t, after.Salience, 0.3, "a use observed reinforces it")
}

// An error whose path is not ASCII, fixed twice, is learned as any other:
// the two paths normalise alike, and the next one binds (issue 33).
func TestNonASCIIPathsAreLearned(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for i, dir := range []string{"/srv/bü🚀ld-ñ", "/srv/ビルド-2"} {
		e.post(episode(fmt.Sprintf("fix-%d", i), map[string]any{}, "ld: cache mismatch in "+dir+"/obj.o", []map[string]any{
			step("shell", map[string]any{"command": "rm -rf " + dir + "/cache"}, map[string]any{"exit_code": 0}), buildOK,
		}, "success"))
	}
	counts := e.consolidate()
	require.Equal(t, int64(1), counts["competence_created"], counts)
	require.Equal(t, int64(1), counts["plan_created"], counts)
	it, cmds := followable(t, e.competence("ld: cache mismatch in /srv/données-3/obj.o"))
	require.Equal(t, map[string]string{"path": "/srv/données-3"}, it.Why.Bindings)
	require.Equal(t, "rm -rf /srv/données-3/cache", cmds[0])
}
