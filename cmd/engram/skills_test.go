package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/engram-dev/engram/consolidate"
	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/jobs/jobstest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

const (
	otherKey  = "fedcba9876543210"
	publicKey = "public0123456789"
)

// skillsEnv is engramd with its policy plane and a consolidator over the
// same database: events in over HTTP, procedures learned the way engramd's
// consolidate job learns them.
type skillsEnv struct {
	*env
	worker *ingest.Worker
	cons   *consolidate.Consolidator
}

func setupSkills(t *testing.T) *skillsEnv {
	t.Helper()
	db := pgtest.NewSchema(t)
	wr := revise.New(db.Pool, revise.Config{})
	for _, tenant := range []string{"acme", "other"} {
		require.NoError(t, store.EnsureTenant(t.Context(), db.Pool, tenant))
	}
	w := ingest.NewWorker(ingest.WorkerConfig{DB: db.Pool})
	srv := httptest.NewServer(server.New(server.Config{
		DB: db.Pool, Writer: wr, Logger: slog.New(slog.DiscardHandler),
		Ingest: ingest.New(ingest.Config{DB: db.Pool, Policy: w.Policy, Staged: w.Notify}),
		Keys: []server.Key{{Tenant: "acme", Name: "test", Secret: testKey, Role: server.RoleCurator}, {Tenant: "other", Name: "other", Secret: otherKey, Role: server.RoleCurator},
			{Tenant: "acme", Name: "public", Secret: publicKey, Clearance: memory.Public}},
	}))
	t.Cleanup(srv.Close)
	return &skillsEnv{
		env:    &env{t: t, url: srv.URL, environ: map[string]string{"ENGRAM_URL": srv.URL, "ENGRAM_API_KEY": testKey}, dir: t.TempDir()},
		worker: w,
		cons:   consolidate.New(consolidate.Config{DB: db.Pool, Writer: revise.New(db.Pool, revise.Config{})}),
	}
}

// stream sends events as NDJSON over POST /v1/events:stream, requires
// every line acknowledged, and drains the policy plane.
func (e *skillsEnv) stream(events []map[string]any) {
	e.t.Helper()
	var body strings.Builder
	for _, ev := range events {
		b, err := json.Marshal(ev)
		require.NoError(e.t, err)
		body.Write(b)
		body.WriteByte('\n')
	}
	req, err := http.NewRequest("POST", e.url+"/v1/events:stream", strings.NewReader(body.String()))
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+testKey)
	res, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	require.Equal(e.t, http.StatusOK, res.StatusCode)
	sc := bufio.NewScanner(res.Body)
	acks := 0
	for sc.Scan() {
		require.NotContains(e.t, sc.Text(), `"error"`)
		acks++
	}
	require.Equal(e.t, len(events), acks)
	_, err = e.worker.Drain(e.t.Context())
	require.NoError(e.t, err)
}

// episode is one thread: the build breaks with errMsg, the agent runs the
// fix (tool, arguments, result), builds again, and the thread ends with
// status.
func episode(thread string, environment map[string]any, errMsg string, fix [][3]any, status string) []map[string]any {
	ev := func(kind string, fields map[string]any) map[string]any {
		m := map[string]any{"kind": kind, "agent_id": "coder", "thread_id": thread, "environment": environment}
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
	fix = append(fix, [3]any{"make", []any{"build"}, "build ok: bin/engramd\n2 targets"})
	for i, f := range fix {
		id := fmt.Sprintf("c%d", i+1)
		out = append(out,
			ev("tool_call", map[string]any{"tool": map[string]any{"name": f[0], "call_id": id, "arguments": f[1]}}),
			ev("tool_output", map[string]any{"tool": map[string]any{"name": f[0], "call_id": id, "result": f[2]}}))
	}
	return append(out, ev("outcome", map[string]any{"outcome": map[string]any{"status": status}}))
}

// get calls the API with key and returns the status, content type and body.
func (e *skillsEnv) get(key, path string) (int, string, string) {
	e.t.Helper()
	req, err := http.NewRequest("GET", e.url+path, nil)
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	return res.StatusCode, res.Header.Get("Content-Type"), string(b)
}

// agentSkillName is the specification's rule for name
// (https://agentskills.io/specification).
var agentSkillName = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// checkSkill holds md to the Agent Skills rules — front matter with a
// name fit for folder, a description of at most 1,024 characters, only the
// specification's fields, a body under 500 lines — and to what engram puts
// in the body: the sections, and evidence links that resolve to records.
// It returns the record ids the body links to.
func (e *skillsEnv) checkSkill(md, folder string) []string {
	t := e.t
	t.Helper()
	require.True(t, strings.HasPrefix(md, "---\n"), md)
	front, body, ok := strings.Cut(md[4:], "\n---\n")
	require.True(t, ok, "front matter closes")
	var fm map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(front), &fm), front)
	for k := range fm {
		require.Contains(t, []string{"name", "description", "license", "compatibility", "metadata", "allowed-tools"}, k, "a field of the specification")
	}
	name, _ := fm["name"].(string)
	require.Regexp(t, agentSkillName, name)
	require.LessOrEqual(t, len(name), 64)
	require.Equal(t, folder, name, "name equals the folder's")
	desc, _ := fm["description"].(string)
	require.NotEmpty(t, desc)
	require.LessOrEqual(t, utf8.RuneCountInString(desc), 1024)
	require.Less(t, strings.Count(body, "\n"), 500)
	for _, section := range []string{"## When to use", "## Steps", "## If it fails", "## Success record", "## Evidence in engram"} {
		require.Contains(t, body, "\n"+section+"\n")
	}
	require.Contains(t, body, "- Check: ")
	require.Contains(t, body, "- Successes: ")
	links := regexp.MustCompile("`GET (/v1/records/[0-9a-f-]{36})`").FindAllStringSubmatch(body, -1)
	require.NotEmpty(t, links)
	var ids []string
	for _, l := range links {
		status, _, got := e.get(testKey, l[1])
		require.Equal(t, http.StatusOK, status, "%s: %s", l[1], got)
		ids = append(ids, strings.TrimPrefix(l[1], "/v1/records/"))
	}
	return ids
}

// A learned procedure — episodes streamed over the API, consolidated —
// exported as SKILL.md by GET /v1/records/{id}/skill.md and by engram
// skills export: valid Agent Skills, linking back to the procedure and its
// episodes (issue 15, part 4).
func TestSkillsExport(t *testing.T) {
	t.Parallel()
	e := setupSkills(t)
	msg := "ld: cache mismatch in %s/obj.o"
	for i, dir := range []string{"/tmp/a1", "/tmp/a2", "/tmp/a3"} {
		e.stream(episode(fmt.Sprintf("linux-%d", i), map[string]any{"os": "linux", "host": fmt.Sprintf("h%d", i)}, fmt.Sprintf(msg, dir),
			[][3]any{{"shell", map[string]any{"command": "rm -rf " + dir + "/cache"}, map[string]any{"exit_code": 0}}}, "success"))
	}
	for i, dir := range []string{"/Users/a/p", "/Users/b/q"} {
		e.stream(episode(fmt.Sprintf("darwin-%d", i), map[string]any{"os": "darwin", "host": fmt.Sprintf("m%d", i)}, fmt.Sprintf(msg, dir),
			[][3]any{{"shell", map[string]any{"command": "xcrun --kill-cache"}, map[string]any{"exit_code": 0}}}, "success"))
	}
	require.NoError(t, e.cons.Consolidate(t.Context(), &jobstest.Run{}))

	var page struct{ Records []memory.Record }
	decode(t, e.ok("records", "list", "--type", "competence", "--json"), &page)
	require.Len(t, page.Records, 2)
	byOS := map[any]memory.Record{}
	for _, r := range page.Records {
		var p memory.CompetencePayload
		require.NoError(t, json.Unmarshal(r.Payload, &p))
		byOS[p.Triggers[0].Conditions["os"]] = r
	}
	linux, darwin := byOS["linux"], byOS["darwin"]
	require.NotEmpty(t, linux.ID)
	require.NotEmpty(t, darwin.ID)

	// The route.
	status, ctype, md := e.get(testKey, "/v1/records/"+linux.ID.String()+"/skill.md")
	require.Equal(t, http.StatusOK, status, md)
	require.Equal(t, "text/markdown; charset=utf-8", ctype)
	name := regexp.MustCompile(`(?m)^name: (.*)$`).FindStringSubmatch(md)[1]
	require.True(t, strings.HasPrefix(name, "fix-ld-cache-mismatch-in-path-os-linux-"), name)
	ids := e.checkSkill(md, name)
	require.Equal(t, linux.ID.String(), ids[0], "the first link is the procedure")
	require.Len(t, ids, 4, "the procedure and its three episodes")
	for _, rel := range linux.Relations {
		require.Contains(t, ids, rel.TargetID.String())
	}
	for _, want := range []string{`"command":"rm -rf {path}/cache"`, "`{path}`", "Check: exit code 0", "- Successes: 3\n", "- Failures: 0\n", "Then try:", "xcrun --kill-cache", "os=linux"} {
		require.Contains(t, md, want)
	}

	// Not a procedure, not the caller's tenant, not an id.
	fact := e.create(fact("go", nil))
	status, ctype, body := e.get(testKey, "/v1/records/"+fact+"/skill.md")
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "application/problem+json", ctype)
	require.Contains(t, body, "not-a-procedure")
	require.Contains(t, body, "is a semantic record")
	status, _, body = e.get(otherKey, "/v1/records/"+linux.ID.String()+"/skill.md")
	require.Equal(t, http.StatusNotFound, status, body)
	require.NotContains(t, body, "cache")
	// A key cleared below the procedure is refused as GET /v1/records/{id}
	// refuses it, and sees none of it.
	require.NotEqual(t, memory.Public, linux.Sensitivity)
	status, _, body = e.get(publicKey, "/v1/records/"+linux.ID.String()+"/skill.md")
	require.Equal(t, http.StatusForbidden, status, body)
	require.Contains(t, body, "access-denied")
	require.NotContains(t, body, "cache")
	plain, _, _ := e.get(publicKey, "/v1/records/"+linux.ID.String())
	require.Equal(t, plain, status)
	status, _, _ = e.get(testKey, "/v1/records/nope/skill.md")
	require.Equal(t, http.StatusNotFound, status)

	// The CLI: every procedure, a folder each, progress on stderr.
	dir := filepath.Join(t.TempDir(), "skills")
	r := e.run("", "skills", "export", dir)
	require.NoError(t, r.err, r.stderr)
	require.Equal(t, "exported 2 skills to "+dir+"\n", r.stdout)
	require.Contains(t, r.stderr, "[1/2] ")
	require.Contains(t, r.stderr, "[2/2] ")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 2)
	for _, ent := range entries {
		require.True(t, ent.IsDir())
		b, err := os.ReadFile(filepath.Join(dir, ent.Name(), "SKILL.md"))
		require.NoError(t, err)
		e.checkSkill(string(b), ent.Name())
	}
	got, err := os.ReadFile(filepath.Join(dir, name, "SKILL.md"))
	require.NoError(t, err)
	require.Equal(t, md, string(got), "the file is what the route serves")

	// Again, with a floor: linux's 4/5 passes 0.78, darwin's 3/4 does not;
	// the names are stable, so the folder is the same one.
	dir2 := filepath.Join(t.TempDir(), "best")
	r = e.run("", "skills", "export", dir2, "--min-success-rate", "0.78")
	require.NoError(t, r.err, r.stderr)
	require.Equal(t, "exported 1 skill to "+dir2+" (1 below success rate 0.78 left out)\n", r.stdout)
	entries, err = os.ReadDir(dir2)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, name, entries[0].Name())

	r = e.run("", "skills", "export", dir2, "--min-success-rate", "1.5")
	require.Error(t, r.err)
	require.Equal(t, 2, exitCode(r.err))
	require.Contains(t, r.stderr, "not a rate from 0 to 1")
	r = e.run("", "skills", "export")
	require.Equal(t, 2, exitCode(r.err))
}
