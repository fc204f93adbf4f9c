package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

const testKey = "0123456789abcdef"

// env is an engramd (the real server over a real store) and the
// environment the CLI runs in against it.
type env struct {
	t       *testing.T
	url     string
	environ map[string]string
	dir     string
}

func setup(t *testing.T) *env {
	t.Helper()
	pool := pgtest.NewSchema(t).Pool
	require.NoError(t, store.EnsureTenant(t.Context(), pool, "acme"))
	srv := httptest.NewServer(server.New(server.Config{
		DB: pool, Writer: revise.New(pool, revise.Config{}),
		Keys: []server.Key{{Tenant: "acme", Name: "test", Secret: testKey, Role: server.RoleCurator}},
	}))
	t.Cleanup(srv.Close)
	return &env{
		t:       t,
		url:     srv.URL,
		environ: map[string]string{"ENGRAM_URL": srv.URL, "ENGRAM_API_KEY": testKey},
		dir:     t.TempDir(),
	}
}

type result struct {
	stdout, stderr string
	err            error
}

// run runs the CLI with stdin as its standard input.
func (e *env) run(stdin string, args ...string) result {
	e.t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(e.t.Context(), args, func(k string) string { return e.environ[k] }, strings.NewReader(stdin), &stdout, &stderr)
	return result{stdout: stdout.String(), stderr: stderr.String(), err: err}
}

// ok runs the CLI, requires it to succeed and returns its output.
func (e *env) ok(args ...string) string {
	e.t.Helper()
	r := e.run("", args...)
	require.NoError(e.t, r.err, "engram %s\n%s", strings.Join(args, " "), r.stderr)
	require.Empty(e.t, r.stderr)
	return r.stdout
}

// file writes v as JSON to a file and returns its path.
func (e *env) file(name string, v any) string {
	e.t.Helper()
	b, err := json.Marshal(v)
	require.NoError(e.t, err)
	path := filepath.Join(e.dir, name)
	require.NoError(e.t, os.WriteFile(path, b, 0o600))
	return path
}

// create creates rec with engram records create and returns its id.
func (e *env) create(rec any) string {
	e.t.Helper()
	var out struct{ ID string }
	decode(e.t, e.ok("records", "create", "-f", e.file("new.json", rec)), &out)
	require.NotEmpty(e.t, out.ID)
	return out.ID
}

func decode(t *testing.T, s string, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal([]byte(s), v), s)
}

// rows returns the data rows of a table, without its header.
func rows(t *testing.T, table string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	require.NotEmpty(t, lines)
	return lines[1:]
}

func fact(object string, conds map[string]any) map[string]any {
	validity := map[string]any{"mode": "global"}
	if conds != nil {
		validity = map[string]any{"mode": "conditional", "conditions": conds}
	}
	return map[string]any{"type": "semantic", "confidence": 0.9, "payload": map[string]any{
		"kind": "semantic", "subject": "user", "predicate": "prefers_language", "object": object, "validity": validity}}
}

// stated is rec with one source of evidence of kind.
func stated(rec map[string]any, kind string) map[string]any {
	rec["provenance"] = map[string]any{"sources": []any{map[string]any{"kind": kind, "ref": kind + "://1"}}}
	return rec
}

func working(thread string, tags ...string) map[string]any {
	return map[string]any{"type": "working", "tags": tags, "payload": map[string]any{"kind": "working", "thread_id": thread, "state": "planning"}}
}

// The operator's walk-through: create a fact, find it, read it, supersede
// it, and read its history, audit trail and relations.
func TestRecordsWalkThrough(t *testing.T) {
	t.Parallel()
	e := setup(t)

	b, err := json.Marshal(fact("go", nil))
	require.NoError(t, err)
	r := e.run(string(b), "records", "create", "-f", "-", "--rationale", "the user said so")
	require.NoError(t, r.err, r.stderr)
	require.Contains(t, r.stdout, "\n  \"id\": ", "create prints the record indented")
	var f struct {
		ID      string
		Version int
	}
	decode(t, r.stdout, &f)
	require.Equal(t, 1, f.Version)

	list := e.ok("records", "list")
	require.Regexp(t, `^ID\s+TYPE\s+STATUS\s+VERSION\s+SENSITIVITY\s+SALIENCE\s+SUMMARY\n`, list)
	require.Len(t, rows(t, list), 1)
	require.Regexp(t, f.ID+`\s+semantic\s+active\s+1\s+low\s+1.00\s+user prefers_language = go\n`, list)

	raw := e.ok("records", "get", f.ID, "--json")
	require.Equal(t, 1, strings.Count(raw, "\n"), "--json prints the API's JSON as it came")
	var got struct {
		ID      string
		Payload struct{ Object string }
	}
	decode(t, raw, &got)
	require.Equal(t, f.ID, got.ID)
	require.Equal(t, "go", got.Payload.Object)
	beforeSupersede := time.Now().UTC()

	out := e.ok("records", "supersede", f.ID, "-f", e.file("next.json", fact("rust", nil)), "--version", "1", "--rationale", "switched to Rust")
	var sup struct {
		Superseded struct{ Status string }
		Record     struct{ ID, Status string }
	}
	decode(t, out, &sup)
	require.Equal(t, "superseded", sup.Superseded.Status)
	require.Equal(t, "active", sup.Record.Status)

	history := e.ok("records", "history", f.ID)
	require.Regexp(t, `^VERSION\s+RECORDED\s+STATUS`, history)
	versions := rows(t, history)
	require.Len(t, versions, 2)
	require.Regexp(t, `^1\s.*\sactive\s+low\s+1.00\s+user prefers_language = go$`, versions[0])
	require.Regexp(t, `^2\s.*\ssuperseded\s`, versions[1])

	audit := rows(t, e.ok("records", "audit", f.ID))
	require.Len(t, audit, 2)
	require.Regexp(t, `\screate\s+1\s+key:test\s+0\s+the user said so$`, audit[0])
	require.Regexp(t, `\ssupersede\s+2\s+key:test\s+0\s+switched to Rust$`, audit[1])

	rels := rows(t, e.ok("records", "relations", sup.Record.ID))
	require.Len(t, rels, 1)
	require.Regexp(t, sup.Record.ID+`\s+supersedes\s+`+f.ID+`\s+-\s`, rels[0])

	list = e.ok("records", "list", "--subject", "user", "--predicate", "prefers_language")
	require.Len(t, rows(t, list), 1)
	require.Contains(t, list, "user prefers_language = rust")
	require.Len(t, rows(t, e.ok("records", "list", "--status", "all")), 2)

	var then struct{ Status string }
	decode(t, e.ok("records", "get", "--as-of", beforeSupersede.Format(time.RFC3339Nano), f.ID), &then)
	require.Equal(t, "active", then.Status)
}

func TestListFollowsEveryPage(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for i := range 5 {
		tags := []string{"odd"}
		if i%2 == 0 {
			tags = []string{"even"}
		}
		e.create(working(fmt.Sprintf("thread-%d", i), tags...))
	}

	r := e.run("", "records", "list", "--limit", "2")
	require.NoError(t, r.err)
	require.Len(t, rows(t, r.stdout), 2)
	require.Contains(t, r.stdout, "thread-0: planning")
	require.Regexp(t, `^more records: --cursor \S+ \(or --all\)\n$`, r.stderr)

	all := rows(t, e.ok("records", "list", "--limit", "2", "--all"))
	require.Len(t, all, 5)
	for i, line := range all {
		require.Contains(t, line, fmt.Sprintf("thread-%d: planning", i), "in creation order")
	}

	var page struct {
		Records    []struct{ ID string }
		NextCursor *string `json:"next_cursor"`
	}
	decode(t, e.ok("records", "list", "--all", "--limit", "2", "--json"), &page)
	require.Len(t, page.Records, 5)
	require.Nil(t, page.NextCursor)

	require.Len(t, rows(t, e.ok("records", "list", "--tag", "even", "--limit", "1", "--all")), 3)
	require.Len(t, rows(t, e.ok("records", "list", "--type", "semantic,competence", "--type", "plan_graph")), 0)
	require.Len(t, rows(t, e.ok("records", "list", "--scope", "")), 5, "scope= lists the unscoped records")
}

// Each revision command reaches its API operation, and the tables
// summarize each type of payload.
func TestRevisions(t *testing.T) {
	t.Parallel()
	e := setup(t)

	factID := e.create(fact("go", nil))
	var forked struct {
		Records []struct{ ID string }
	}
	decode(t, e.ok("records", "fork", factID, "-f", e.file("variants.json", []any{
		fact("go", map[string]any{"project_kind": "backend"}),
		fact("python", map[string]any{"project_kind": "data"}),
	})), &forked)
	require.Len(t, forked.Records, 2)
	list := e.ok("records", "list", "--type", "semantic")
	require.Contains(t, list, "user prefers_language = go when project_kind=backend")
	require.Contains(t, list, "user prefers_language = python when project_kind=data")

	var contested struct {
		Records []struct{ Status string }
	}
	decode(t, e.ok("records", "contest", forked.Records[0].ID, "-f", e.file("contra.json", fact("zig", map[string]any{"project_kind": "backend"})), "--rationale", "new evidence"), &contested)
	require.Len(t, contested.Records, 2)
	require.Equal(t, "contested", contested.Records[1].Status)

	var retracted struct{ Status string }
	decode(t, e.ok("records", "retract", forked.Records[1].ID, "--version", "1"), &retracted)
	require.Equal(t, "retracted", retracted.Status)
	var deleted struct{ Status string }
	decode(t, e.ok("records", "delete", forked.Records[1].ID, "--rationale", "cleanup"), &deleted)
	require.Equal(t, "deleted", deleted.Status)
	require.Equal(t, "purged "+forked.Records[1].ID+"\n", e.ok("records", "purge", forked.Records[1].ID))
	audit := rows(t, e.ok("records", "audit", forked.Records[1].ID))
	require.Len(t, audit, 4)
	require.Contains(t, audit[3], " purge ")

	taskID := e.create(working("t1"))
	var task struct {
		Version int
		Payload struct{ State string }
	}
	decode(t, e.ok("records", "update", taskID, "--version", "1", "-f", e.file("task.json", map[string]any{"kind": "working", "thread_id": "t1", "state": "executing"})), &task)
	require.Equal(t, 2, task.Version)
	require.Equal(t, "executing", task.Payload.State)

	episodeID := e.create(map[string]any{"type": "episodic", "payload": map[string]any{"kind": "episodic", "timeline": []any{}}})
	e.ok("records", "append", episodeID, "--rationale", "build ran", "-f", e.file("events.json", map[string]any{
		"timeline": []any{map[string]any{"t": "2026-01-28T10:00:00Z", "event_kind": "tool_call", "ref": "evt://build/1"}},
		"outcome":  "success",
	}))
	require.Contains(t, e.ok("records", "list", "--type", "episodic"), "1 event, success")

	skill := func(confidence float64, signal string) map[string]any {
		return map[string]any{"type": "competence", "confidence": confidence, "payload": map[string]any{
			"kind": "competence", "skill_name": "fix_linker_cache", "triggers": []any{map[string]any{"signal": signal}},
			"recipe": []any{map[string]any{"step": "clear the cache"}}}}
	}
	// The same procedure written twice is one record (the write path's
	// dedup gate); one for another signal is a second, to be merged.
	a := e.create(skill(0.6, "ld: cache mismatch"))
	require.Equal(t, a, e.create(skill(0.6, "ld: cache mismatch")))
	b := e.create(skill(0.8, "ld: cache mismatch in the linker"))
	var merged struct {
		ID         string
		Confidence float64
	}
	decode(t, e.ok("records", "merge", a, b, "--rationale", "duplicates"), &merged)
	require.Equal(t, 0.8, merged.Confidence)
	competence := rows(t, e.ok("records", "list", "--type", "competence"))
	require.Len(t, competence, 1)
	require.Regexp(t, merged.ID+`\s+competence\s+active\s+1\s+low\s+1.00\s+procedure fix_linker_cache for "ld: cache mismatch in the linker"$`, competence[0])

	e.create(map[string]any{"type": "plan_graph", "payload": map[string]any{
		"kind": "plan_graph", "plan_id": "p1", "version": "1", "intent": "setup_project", "nodes": []any{}, "edges": []any{}}})
	require.Contains(t, e.ok("records", "list", "--type", "plan_graph"), "setup_project (p1)")
}

// An API problem is reported with its title, detail and field errors, and
// the command fails.
func TestAPIErrors(t *testing.T) {
	t.Parallel()
	e := setup(t)

	bad := map[string]any{"type": "semantic", "confidence": 2, "payload": map[string]any{
		"kind": "semantic", "predicate": "prefers_language", "object": "go", "validity": map[string]any{"mode": "global"}}}
	r := e.run("", "records", "create", "-f", e.file("bad.json", bad))
	require.Error(t, r.err)
	require.Equal(t, 1, exitCode(r.err))
	require.Empty(t, r.stdout)
	require.Contains(t, r.stderr, "engram: Validation failed (HTTP 422): ")
	require.Contains(t, r.stderr, "\n  /confidence: ")
	require.Contains(t, r.stderr, "\n  /payload/subject: is required\n")

	// The same fact again is absorbed: the answer is the record in force.
	id := e.create(stated(fact("go", nil), "human"))
	require.Equal(t, id, e.create(fact("go", nil)))
	// A contradicting one on clearly weaker evidence is refused by the
	// write path's contradiction gate, naming the fact in force.
	r = e.run("", "records", "create", "-f", e.file("other.json", stated(fact("python", nil), "observation")))
	require.Error(t, r.err)
	require.Contains(t, r.stderr, "engram: Write rejected (HTTP 422): contradicts 1 live fact(s)")
	require.Contains(t, r.stderr, "\n  records: "+id+"\n")

	r = e.run("", "records", "supersede", id, "--version", "7", "-f", e.file("next.json", fact("rust", nil)))
	require.Error(t, r.err)
	require.Contains(t, r.stderr, "is at version 1, not 7")

	r = e.run("", "records", "list", "--limit", "5000")
	require.Error(t, r.err)
	require.Contains(t, r.stderr, "\n  parameter limit: must be a whole number from 1 to 1000\n")

	r = e.run("", "records", "get", "0190a1b2-0000-7000-8000-000000000000")
	require.Error(t, r.err)
	require.Contains(t, r.stderr, "engram: Not found (HTTP 404)")

	r = e.run("{", "records", "create", "-f", "-")
	require.Error(t, r.err)
	require.Contains(t, r.stderr, "engram: read -: not JSON")
}

func TestMissingAPIKey(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"records", "list"}, func(string) string { return "" }, strings.NewReader(""), &stdout, &stderr)
	require.Error(t, err)
	require.Equal(t, 2, exitCode(err))
	require.Equal(t, "engram: no API key: set ENGRAM_API_KEY or pass --api-key\nRun 'engram help' for usage.\n", stderr.String())
	require.Empty(t, stdout.String())
}

// Flags override the environment, before or after the command.
func TestFlagsOverrideEnvironment(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.environ = map[string]string{"ENGRAM_URL": "http://127.0.0.1:1", "ENGRAM_API_KEY": "wrong-key"}

	r := e.run("", "records", "list")
	require.Error(t, r.err)
	require.Contains(t, r.stderr, "engram: no engramd answers at http://127.0.0.1:1 (ENGRAM_URL): is it running?")

	r = e.run("", "--url", e.url, "records", "list")
	require.Error(t, r.err)
	require.Contains(t, r.stderr, "engram: Unauthorized (HTTP 401)")

	e.ok("--url", e.url, "records", "list", "--api-key", testKey)
	e.ok("records", "list", "--api-key="+testKey, "--url="+e.url, "--actor", "agent-7")
}

func TestUsage(t *testing.T) {
	t.Parallel()
	e := &env{t: t, environ: map[string]string{"ENGRAM_API_KEY": testKey}}

	for _, args := range [][]string{{"help"}, {"--help"}, {"records", "help"}, {"records", "get", "-h"}} {
		r := e.run("", args...)
		require.NoError(t, r.err, args)
		require.Equal(t, usage, r.stdout, args)
	}
	for cmd := range recordCommands {
		require.Contains(t, usage, "\n  records "+cmd+" ", "the usage text explains records %s", cmd)
	}

	for _, c := range []struct {
		args   []string
		stdin  string
		stderr string
	}{
		{nil, "", "no command"},
		{[]string{"recrods"}, "", "unknown command recrods"},
		{[]string{"records"}, "", "records needs a command"},
		{[]string{"records", "show", "x"}, "", "unknown command records show"},
		{[]string{"records", "get"}, "", "usage: engram records get ID [--as-of TIME] [--form rfc]"},
		{[]string{"records", "get", "a", "b"}, "", "usage: engram records get ID"},
		{[]string{"records", "list", "--limit", "many"}, "", `invalid value "many" for flag -limit`},
		{[]string{"records", "list", "--colour", "red"}, "", "flag provided but not defined: -colour"},
		{[]string{"records", "create"}, "", "-f FILE is required"},
		{[]string{"records", "fork", "x", "-f", "-"}, "{}", "FILE must hold a JSON array"},
		{[]string{"records", "merge", "x"}, "", "usage: engram records merge ID ID..."},
		{[]string{"--url", "ftp://x", "records", "get", "x"}, "", `"ftp://x" is not an engramd URL`},
	} {
		r := e.run(c.stdin, c.args...)
		require.Error(t, r.err, c.args)
		require.Equal(t, 2, exitCode(r.err), c.args)
		require.Contains(t, r.stderr, c.stderr, c.args)
		require.True(t, strings.HasSuffix(r.stderr, "\nRun 'engram help' for usage.\n"), r.stderr)
	}
}

// The list table: one line a record, with a summary of its payload.
func Example_listTable() {
	c := &cli{stdout: os.Stdout}
	_ = c.recordTable([]json.RawMessage{
		json.RawMessage(`{"id": "0190a7b4-7c1e-7b3a-9d2f-3c4e5f6a7b8c", "type": "semantic", "status": "active", "version": 2, "sensitivity": "low", "salience": 0.8,
			"payload": {"kind": "semantic", "subject": "user", "predicate": "prefers_language", "object": "go", "validity": {"mode": "conditional", "conditions": {"project_kind": "backend"}}}}`),
		json.RawMessage(`{"id": "0190a7b4-7c1e-7b3a-9d2f-3c4e5f6a7b8d", "type": "working", "status": "active", "version": 5, "sensitivity": "medium", "salience": 1,
			"payload": {"kind": "working", "thread_id": "deploy-42", "state": "blocked"}}`),
		json.RawMessage(`{"id": "0190a7b4-7c1e-7b3a-9d2f-3c4e5f6a7b8e", "type": "episodic", "status": "active", "version": 1, "sensitivity": "low", "salience": 0.35,
			"payload": {"kind": "episodic", "timeline": [{}, {}, {}], "outcome": "failure"}}`),
	})
	// Output:
	// ID                                    TYPE      STATUS  VERSION  SENSITIVITY  SALIENCE  SUMMARY
	// 0190a7b4-7c1e-7b3a-9d2f-3c4e5f6a7b8c  semantic  active  2        low          0.80      user prefers_language = go when project_kind=backend
	// 0190a7b4-7c1e-7b3a-9d2f-3c4e5f6a7b8d  working   active  5        medium       1.00      thread deploy-42: blocked
	// 0190a7b4-7c1e-7b3a-9d2f-3c4e5f6a7b8e  episodic  active  1        low          0.35      3 events, failure
}

// A daemon that does not answer is named with the URL the CLI tried and
// where that URL came from, so that an unexported ENGRAM_URL shows.
func TestUnreachableNamesTheURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{map[string]string{"ENGRAM_URL": closed, "ENGRAM_API_KEY": testKey}, nil, "no engramd answers at " + closed + " (ENGRAM_URL): is it running?"},
		{map[string]string{"ENGRAM_API_KEY": testKey}, []string{"--url", closed}, "no engramd answers at " + closed + " (--url)"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(t.Context(), append([]string{"records", "list"}, tc.args...), func(k string) string { return tc.env[k] },
			strings.NewReader(""), &stdout, &stderr)
		require.Error(t, err)
		require.Equal(t, 1, exitCode(err))
		require.Contains(t, stderr.String(), tc.want)
		require.Contains(t, stderr.String(), "connection refused")
	}
	c := &cli{url: DefaultURL}
	err = c.unreachable(&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}, "")
	require.EqualError(t, err, "no engramd answers at "+DefaultURL+" (the default; set ENGRAM_URL or pass --url for another): is it running? (connect: connection refused)")
}

// engram --version names the build, whatever else the line holds.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}, {"-version"}} {
		var stdout, stderr bytes.Buffer
		require.NoError(t, run(t.Context(), args, func(string) string { return "" }, strings.NewReader(""), &stdout, &stderr), stderr.String())
		require.True(t, strings.HasPrefix(stdout.String(), "engram devel ("), stdout.String())
		require.Contains(t, stdout.String(), runtime.Version())
	}
}
