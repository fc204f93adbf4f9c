package consolidate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/consolidate"
	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

const (
	key     = "acme-key-0123456789"
	betaKey = "beta-key-0123456789"
)

// memRun is a job run kept in memory: its cursor survives between passes
// of one test.
type memRun struct {
	mu     sync.Mutex
	cursor []byte
	counts map[string]int64
}

func (r *memRun) Cursor(_ context.Context, v any) (bool, error) {
	if r.cursor == nil {
		return false, nil
	}
	return true, json.Unmarshal(r.cursor, v)
}

func (r *memRun) SaveCursor(_ context.Context, v any) error {
	b, err := json.Marshal(v)
	r.cursor = b
	return err
}

func (r *memRun) Add(name string, n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counts == nil {
		r.counts = map[string]int64{}
	}
	r.counts[name] += n
}

type env struct {
	t      *testing.T
	url    string
	db     *pgtest.Schema
	worker *ingest.Worker
	cons   *consolidate.Consolidator
	run    *memRun
	reg    *prometheus.Registry
}

// setup is engramd as a new user runs it — events in through the API,
// classified by the policy plane, retrieval with the default
// configuration — with a consolidator over the same database.
func setup(t *testing.T) *env {
	t.Helper()
	return setupWith(t, revise.Gates{}, consolidate.Config{})
}

// setupWith is setup with the API's write path configured by gates, and
// the consolidator by cfg (its DB, Writer and Registry are the test's).
func setupWith(t *testing.T, gates revise.Gates, cfg consolidate.Config) *env {
	t.Helper()
	db := pgtest.NewSchema(t)
	wr := revise.New(db.Pool, revise.Config{Gates: gates})
	require.NoError(t, store.EnsureTenant(context.Background(), db.Pool, "acme"))
	require.NoError(t, store.EnsureTenant(context.Background(), db.Pool, "beta"))
	w := ingest.NewWorker(ingest.WorkerConfig{DB: db.Pool})
	settings, err := decay.NewSettings(decay.DefaultConfig())
	require.NoError(t, err)
	rs, err := retrieve.NewSettings(retrieve.DefaultConfig())
	require.NoError(t, err)
	srv := httptest.NewServer(server.New(server.Config{
		DB: db.Pool, Writer: wr, Logger: slog.New(slog.DiscardHandler), Decay: decay.New(db.Pool, wr, settings), Retrieve: retrieve.New(db.Pool, rs),
		Ingest: ingest.New(ingest.Config{DB: db.Pool, Policy: w.Policy, Staged: w.Notify}),
		Keys:   []server.Key{{Tenant: "acme", Name: "acme-test", Secret: key, Role: server.RoleCurator}, {Tenant: "beta", Name: "beta-test", Secret: betaKey, Role: server.RoleCurator}},
	}))
	t.Cleanup(srv.Close)
	reg := prometheus.NewRegistry()
	cfg.DB, cfg.Writer, cfg.Registry = db.Pool, revise.New(db.Pool, revise.Config{}), reg
	return &env{t: t, url: srv.URL, db: db, worker: w, run: &memRun{}, reg: reg, cons: consolidate.New(cfg)}
}

func (e *env) do(method, path string, body any) (int, []byte) {
	e.t.Helper()
	return e.doAs(key, method, path, body)
}

// doAs is do with another tenant's key.
func (e *env) doAs(secret, method, path string, body any) (int, []byte) {
	e.t.Helper()
	b, err := json.Marshal(body)
	require.NoError(e.t, err)
	req, err := http.NewRequest(method, e.url+path, bytes.NewReader(b))
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	return res.StatusCode, out
}

// post sends events and drains the policy plane.
func (e *env) post(events []map[string]any) {
	e.t.Helper()
	status, body := e.do("POST", "/v1/events", events)
	require.Equal(e.t, http.StatusAccepted, status, string(body))
	e.drain()
}

// drain runs the policy plane until the backlog is empty.
func (e *env) drain() {
	e.t.Helper()
	_, err := e.worker.Drain(context.Background())
	require.NoError(e.t, err)
}

func (e *env) consolidate() map[string]int64 {
	e.t.Helper()
	e.run.counts = nil
	require.NoError(e.t, e.cons.Consolidate(context.Background(), e.run))
	return e.run.counts
}

// procedures are the tenant's live competence records.
func (e *env) procedures() []memory.Record {
	e.t.Helper()
	page, err := store.List(context.Background(), e.db.Pool, "acme", store.Filter{Types: []memory.Type{memory.Competence}})
	require.NoError(e.t, err)
	return page.Records
}

// written is engram_consolidation_records_total for competence, by outcome.
func (e *env) written() map[string]float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	require.NoError(e.t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "engram_consolidation_records_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["type"] == "competence" {
				out[labels["outcome"]] += m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// recall retrieves for a task text, under conditions, and returns the
// competence layer.
func (e *env) recall(text string, conds map[string]any) []memory.Record {
	e.t.Helper()
	task := map[string]any{"text": text}
	if conds != nil {
		task["conditions"] = conds
	}
	return e.layer(task, retrieve.LayerCompetence)
}

// layer retrieves for a task and returns the records of one layer.
func (e *env) layer(task map[string]any, name retrieve.LayerName) []memory.Record {
	e.t.Helper()
	status, body := e.do("POST", "/v1/retrieve", map[string]any{"task": task})
	require.Equal(e.t, http.StatusOK, status, string(body))
	var res retrieve.Result
	require.NoError(e.t, json.Unmarshal(body, &res))
	var out []memory.Record
	for _, l := range res.Layers {
		if l.Name == name {
			for _, it := range l.Items {
				out = append(out, it.Record)
			}
		}
	}
	return out
}

// episode is one thread's events: the build breaks with errMsg, the agent
// runs fix (tool calls with their results), then builds, and the thread ends
// with status.
func episode(thread string, envv map[string]any, errMsg string, fix []map[string]any, status string) []map[string]any {
	ev := func(kind string, fields map[string]any) map[string]any {
		m := map[string]any{"kind": kind, "agent_id": "coder", "thread_id": thread, "environment": envv}
		for k, v := range fields {
			m[k] = v
		}
		return m
	}
	out := []map[string]any{
		ev("user_input", map[string]any{"text": "build the project"}),
		ev("tool_call", map[string]any{"tool": map[string]any{"name": "make", "call_id": "c0", "arguments": []any{"build"}}}),
		ev("error", map[string]any{"error": map[string]any{"message": errMsg, "tool": "make"}}),
	}
	for i, f := range fix {
		id := fmt.Sprintf("c%d", i+1)
		out = append(out,
			ev("tool_call", map[string]any{"tool": map[string]any{"name": f["tool"], "call_id": id, "arguments": f["args"]}}),
			ev("tool_output", map[string]any{"tool": map[string]any{"name": f["tool"], "call_id": id, "result": f["result"]}}))
	}
	return append(out, ev("outcome", map[string]any{"outcome": map[string]any{"status": status}}))
}

func step(tool string, args, result any) map[string]any {
	return map[string]any{"tool": tool, "args": args, "result": result}
}

func payloadOf(t *testing.T, r memory.Record) memory.CompetencePayload {
	t.Helper()
	var p memory.CompetencePayload
	require.NoError(t, json.Unmarshal(r.Payload, &p))
	return p
}

var buildOK = step("make", []any{"build"}, "build ok: bin/engramd\n2 targets")

// Three successful episodes of one fix, with different paths, and the same
// fix failing on another toolchain: one competence record, the path a
// variable bound from the trigger, the condition that sets it apart, the
// failure mode seen (issue 11).
func TestThreeFixesBecomeOneProcedure(t *testing.T) {
	t.Parallel()
	e := setup(t)
	gcc := map[string]any{"os": "linux", "toolchain": "gcc"}
	for i, dir := range []string{"/tmp/build-123", "/home/ci/proj-7/build", "/var/tmp/work/b"} {
		e.post(episode(fmt.Sprintf("fix-%d", i), gcc, fmt.Sprintf("ld: cache mismatch in %s/obj.o", dir), []map[string]any{
			step("shell", map[string]any{"command": "ls " + dir}, "obj.o main.o"), // a probe nothing uses
			step("shell", map[string]any{"command": "rm -rf " + dir + "/cache"}, map[string]any{"exit_code": 0}),
			buildOK,
		}, "success"))
	}
	e.post(episode("fail-1", map[string]any{"os": "linux", "toolchain": "clang"}, "ld: cache mismatch in /tmp/build-9/obj.o", []map[string]any{
		step("shell", map[string]any{"command": "rm -rf /tmp/build-9/cache"}, map[string]any{"exit_code": 0}),
		step("make", []any{"build"}, "ld: cache mismatch in /tmp/build-9/obj.o"),
	}, "failure"))

	counts := e.consolidate()
	require.Equal(t, int64(1), counts["competence_created"], counts)
	recs := e.procedures()
	require.Len(t, recs, 1)
	rec := recs[0]
	p := payloadOf(t, rec)
	require.Equal(t, "fix ld: cache mismatch in <path> (toolchain=gcc)", p.SkillName)
	require.Len(t, p.Triggers, 1)
	require.Equal(t, memory.Conditions{"toolchain": "gcc"}, p.Triggers[0].Conditions)
	require.Contains(t, p.Triggers[0].Signal, "ld: cache mismatch in")
	require.Len(t, p.Recipe, 2, "the probe is not a step")
	require.Equal(t, "run shell rm -rf {path}/cache", p.Recipe[0].Step)
	require.Equal(t, "exit code 0", p.Recipe[0].Validation)
	require.Equal(t, "rm -rf {path}/cache", p.Recipe[0].ArgsSchema["arguments"].(map[string]any)["command"])
	require.Equal(t, map[string]any{"path": map[string]any{"type": "string", "from_argument": "command",
		"from_signal": map[string]any{"placeholder": "<path>", "index": float64(0), "trim_suffix": "/obj.o"}}}, p.Recipe[0].ArgsSchema["variables"])
	require.Equal(t, "run make build", p.Recipe[1].Step)
	require.Equal(t, "output starts with: build ok: bin/engramd", p.Recipe[1].Validation)
	require.Equal(t, []string{"shell", "make"}, p.RequiredTools)
	require.Equal(t, []string{"run shell rm -rf <path>; then run make build did not fix it: ld: cache mismatch in <path>"}, p.FailureModes,
		"what was tried, without the failed episode's own path")
	require.Equal(t, 3, p.Performance.Successes)
	require.Equal(t, 0, p.Performance.Failures, "the failure was under other conditions")
	require.InDelta(t, 0.75, rec.Confidence, 1e-9)
	require.Contains(t, rec.Tags, consolidate.LearnedTag)
	require.Len(t, rec.Provenance.Sources, 3)
	require.Len(t, rec.Relations, 3)
	for _, rel := range rec.Relations {
		require.Equal(t, memory.DerivedFrom, rel.Predicate)
	}
	audit, err := store.Audit(context.Background(), e.db.Pool, "acme", rec.ID)
	require.NoError(t, err)
	require.Contains(t, audit[0].Rationale, "3 successful episodes, 0 failed, conditions toolchain=gcc")

	// A repeated pass changes nothing; nor does one from scratch.
	require.Equal(t, map[string]int64{"episodes": 0}, e.consolidate())
	e.run.cursor = nil
	counts = e.consolidate()
	require.Equal(t, int64(1), counts["competence_unchanged"], counts)
	again := e.procedures()
	require.Len(t, again, 1)
	require.Equal(t, rec.ID, again[0].ID)
	require.Equal(t, rec.Version, again[0].Version)

	// A fourth success revises it: the same record amended as its next
	// version, with its evidence and statistics, audited.
	e.post(episode("fix-3", gcc, "ld: cache mismatch in /opt/x/obj.o", []map[string]any{
		step("shell", map[string]any{"command": "rm -rf /opt/x/cache"}, map[string]any{"exit_code": 0}), buildOK,
	}, "success"))
	counts = e.consolidate()
	require.Equal(t, int64(1), counts["competence_revised"], counts)
	recs = e.procedures()
	require.Len(t, recs, 1)
	require.Equal(t, 4, payloadOf(t, recs[0]).Performance.Successes)
	require.Len(t, recs[0].Provenance.Sources, 4)
	require.Equal(t, rec.ID, recs[0].ID, "the procedure keeps its id")
	require.Equal(t, rec.Version+1, recs[0].Version)
	status, body := e.do("GET", "/v1/records/"+rec.ID.String()+"/audit", nil)
	require.Equal(t, http.StatusOK, status, string(body))
	require.Contains(t, string(body), `"action":"amend"`)
	require.Contains(t, string(body), "4 successful episodes")

	// Retrieval with the same error worded differently finds it.
	found := e.recall("linker failed: ld: cache mismatch in /srv/job-42/main.o", nil)
	require.NotEmpty(t, found)
	require.Equal(t, recs[0].ID, found[0].ID)
}

// The same error fixed one way on linux and another on darwin: two
// records with disjoint conditions, and retrieval picks by the task's os.
func TestOneErrorTwoProceduresByCondition(t *testing.T) {
	t.Parallel()
	e := setup(t)
	msg := "ld: cache mismatch in %s/obj.o"
	for i, dir := range []string{"/tmp/a1", "/tmp/a2"} {
		e.post(episode(fmt.Sprintf("linux-%d", i), map[string]any{"os": "linux", "host": fmt.Sprintf("h%d", i)}, fmt.Sprintf(msg, dir), []map[string]any{
			step("shell", map[string]any{"command": "rm -rf " + dir + "/cache"}, map[string]any{"exit_code": 0}), buildOK,
		}, "success"))
	}
	for i, dir := range []string{"/Users/a/p", "/Users/b/q"} {
		e.post(episode(fmt.Sprintf("darwin-%d", i), map[string]any{"os": "darwin", "host": fmt.Sprintf("m%d", i)}, fmt.Sprintf(msg, dir), []map[string]any{
			step("shell", map[string]any{"command": "xcrun --kill-cache"}, map[string]any{"exit_code": 0}), buildOK,
		}, "success"))
	}
	counts := e.consolidate()
	require.Equal(t, int64(2), counts["competence_created"], counts)
	recs := e.procedures()
	require.Len(t, recs, 2)
	byOS := map[any]memory.Record{}
	for _, r := range recs {
		p := payloadOf(t, r)
		require.Len(t, p.Triggers[0].Conditions, 1, "host varies: not a condition")
		byOS[p.Triggers[0].Conditions["os"]] = r
		require.Len(t, p.Fallbacks, 1, "the other procedure")
	}
	require.Contains(t, payloadOf(t, byOS["linux"]).Recipe[0].Step, "rm -rf {path}/cache")
	require.Equal(t, "run shell xcrun --kill-cache", payloadOf(t, byOS["darwin"]).Recipe[0].Step)

	for os, want := range byOS {
		found := e.recall("ld: cache mismatch in /work/z/obj.o", map[string]any{"os": os})
		require.Len(t, found, 1, "os %v", os)
		require.Equal(t, want.ID, found[0].ID)
	}

	e.run.cursor = nil
	counts = e.consolidate()
	require.Equal(t, int64(2), counts["competence_unchanged"], counts)
	require.Equal(t, map[string]float64{"created": 2, "unchanged": 2}, e.written())
	again := e.procedures()
	require.Len(t, again, 2)
	for _, r := range again {
		require.Equal(t, 1, r.Version)
	}
}
