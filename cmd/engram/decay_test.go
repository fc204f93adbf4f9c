package main

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/jobs"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

// setupDecay is setup with decay and the periodic jobs served.
func setupDecay(t *testing.T) *env {
	t.Helper()
	db := pgtest.NewSchema(t)
	settings, err := decay.NewSettings(decay.DefaultConfig())
	require.NoError(t, err)
	wr := revise.New(db.Pool, revise.Config{Defaults: settings.Defaults})
	require.NoError(t, store.EnsureTenant(t.Context(), db.Pool, "acme"))
	dec := decay.New(db.Pool, wr, settings)
	sched := jobs.New(jobs.Config{Pool: db.Pool, LeaderInterval: 20 * time.Millisecond})
	require.NoError(t, sched.Register(jobs.Job{Name: decay.SweepJob, Schedule: "*/15 * * * *", Run: func(ctx context.Context, r *jobs.Run) error { return dec.Sweep(ctx, r) }}))
	require.NoError(t, sched.Register(jobs.Job{Name: decay.PurgeJob, Schedule: jobs.Off, Run: func(ctx context.Context, r *jobs.Run) error { return dec.Purge(ctx, r) }}))
	require.NoError(t, sched.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, sched.Stop(context.Background())) })
	srv := httptest.NewServer(server.New(server.Config{
		DB: db.Pool, Writer: wr, Decay: dec, Jobs: sched,
		Keys: []server.Key{{Tenant: "acme", Name: "test", Secret: testKey}, {Name: "ops", Secret: opsKey, Role: server.RoleOperator}},
	}))
	t.Cleanup(srv.Close)
	return &env{t: t, url: srv.URL, environ: map[string]string{"ENGRAM_URL": srv.URL, "ENGRAM_API_KEY": testKey}, dir: t.TempDir()}
}

func (e *env) yaml(name, doc string) string {
	e.t.Helper()
	path := filepath.Join(e.dir, name)
	require.NoError(e.t, os.WriteFile(path, []byte(doc), 0o600))
	return path
}

func TestDecayPreviewCommand(t *testing.T) {
	t.Parallel()
	e := setupDecay(t)
	for _, o := range []string{"go", "rust"} {
		rec := fact(o, map[string]any{"lang": o})
		rec["payload"].(map[string]any)["validity"] = map[string]any{"mode": "conditional", "conditions": map[string]any{"lang": o}}
		e.create(rec)
	}
	cfg := e.yaml("new.yaml", `
listen: 127.0.0.1:8080
decay:
  prune_threshold: 0.2
  profiles:
    semantic: {half_life: 1h}
`)
	out := e.ok("decay", "preview", "--config", cfg, "--at", "+1d")
	require.Contains(t, out, "nothing was changed")
	require.Contains(t, out, "Prune threshold: 0.05 in force, 0.20 proposed.")
	lines := strings.Split(out, "\n")
	var semantic []string
	for _, l := range lines {
		if strings.Contains(l, "semantic") {
			semantic = append(semantic, strings.Join(strings.Fields(l), " "))
		}
	}
	require.Len(t, semantic, 4, out)
	require.Regexp(t, `^semantic 2 in force now( 0)+ 2 0 1.00 0$`, semantic[0])
	require.Regexp(t, `^semantic 2 proposed \+1d 2( 0)+ 0.00 2$`, semantic[3], "24 half-lives of an hour: pruned")

	var pv decay.Preview
	decode(t, e.ok("decay", "preview", "--config", cfg, "--json"), &pv)
	require.Equal(t, 2, pv.Types["semantic"].Proposed.PruneAt)

	r := e.run("", "decay", "preview", "--config", e.yaml("bad.yaml", "decay: {profiles: {semantic: {floor: 2, half_life: 1h}}}"))
	require.Error(t, r.err)
	require.Equal(t, 1, exitCode(r.err))
	require.Contains(t, r.stderr, "/proposed/profiles/semantic/floor: 2 is outside [0, 1]")

	r = e.run("", "decay", "preview")
	require.Equal(t, 2, exitCode(r.err))

	stats := e.ok("decay", "stats")
	require.Regexp(t, `semantic\s+2(\s+0)+\s+2\s+0\s+1.00\s+0`, stats)
}

// opsKey is the operator's key of setupDecay.
const opsKey = "operator-key-0123456789"

func TestJobsCommands(t *testing.T) {
	t.Parallel()
	e := setupDecay(t)
	e.environ["ENGRAM_API_KEY"] = opsKey
	out := e.ok("jobs", "run", "decay_sweep", "--wait")
	require.Regexp(t, `^run \d+ of decay_sweep succeeded in \S+: materialised=0 scanned=0 stamped=0\n$`, out)
	out = e.ok("jobs", "run", "decay_purge")
	require.Regexp(t, `^started run \d+ of decay_purge on \S+\n$`, out)

	list := e.ok("jobs", "list")
	require.Regexp(t, `^node \S+, (leader|follower)`, list)
	require.Regexp(t, `\ndecay_purge\s+off\s+-\s+\d+\s`, list)
	require.Regexp(t, `\ndecay_sweep\s+\*/15 \* \* \* \*\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\s+\d+\s+succeeded`, list)

	r := e.run("", "jobs", "run", "nope")
	require.Equal(t, 1, exitCode(r.err))
	require.Contains(t, r.stderr, `no job named "nope"`)
	r = e.run("", "jobs", "sprint")
	require.Equal(t, 2, exitCode(r.err))
}

// The jobs take an operator key and the tenant's commands a tenant's key;
// the wrong one is refused with what to use instead.
func TestWrongKeyKind(t *testing.T) {
	t.Parallel()
	e := setupDecay(t)
	for _, args := range [][]string{{"jobs", "list"}, {"jobs", "run", "decay_sweep"}} {
		r := e.run("", args...)
		require.Equal(t, 1, exitCode(r.err), args)
		require.Contains(t, r.stderr, "engram: Forbidden (HTTP 403): this operation works across every tenant and needs an operator key", args)
		require.Contains(t, r.stderr, "\n  ENGRAM_API_KEY (or --api-key) picks the key: engram jobs takes an operator key", args)
	}
	r := e.run("", "decay", "stats", "--api-key", opsKey)
	require.Equal(t, 1, exitCode(r.err))
	require.Contains(t, r.stderr, "engram: Forbidden (HTTP 403): an operator key reads and writes no tenant's memory")
	require.Contains(t, r.stderr, "the other commands a tenant's key")
}
