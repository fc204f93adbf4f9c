package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/cmd/engramd/config"
	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/extract"
	"github.com/engram-dev/engram/internal/logtest"
	"github.com/engram-dev/engram/internal/openaitest"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/jobs"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

// A reload puts a valid file's decay section and schedules in force; an
// invalid one is refused with the field named and the old one stays.
func TestReloadConfiguration(t *testing.T) {
	t.Parallel()
	db := pgtest.NewSchema(t)
	path := filepath.Join(t.TempDir(), "engram.yaml")
	write := func(doc string) { require.NoError(t, os.WriteFile(path, []byte(doc), 0o600)) }
	write("decay: {profiles: {semantic: {half_life: 30d}}}\n")
	load := func() (config.Config, error) {
		return config.Load([]string{"--config", path}, func(string) string { return "" })
	}
	cfg, err := load()
	require.NoError(t, err)

	var logs logtest.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	writer, settings, err := newWriter(db.Pool, cfg, nil)
	require.NoError(t, err)
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	ret, err := newRetrieval(cfg, db.Pool, nil, reg, logger)
	require.NoError(t, err)
	p, err := startPeriodic(ctx, cfg, load, db.Pool, writer, settings, ret, reg, logger)
	require.NoError(t, err)
	t.Cleanup(func() { p.stop(ctx, 10*time.Second) })
	require.Equal(t, decay.Duration(30*24*time.Hour), settings.Config().Profiles[memory.Semantic].HalfLife)

	write("decay: {profiles: {semantic: {half_life: 10d}}}\njobs: {decay_sweep: \"@every 1m\", decay_purge: \"off\"}\nretention: {pii: {max_age: 30d}}\n")
	p.reload(ctx)
	require.Equal(t, decay.Duration(10*24*time.Hour), settings.Config().Profiles[memory.Semantic].HalfLife)
	require.Equal(t, decay.Duration(30*24*time.Hour), ret.retention.Config().PII.MaxAge, "retention reloads too")
	ov, err := p.scheduler.Jobs(ctx)
	require.NoError(t, err)
	require.Equal(t, "audit_provenance", ov.Jobs[0].Name)
	require.Equal(t, "compliance", ov.Jobs[1].Name)
	require.Equal(t, "@every 30s", ov.Jobs[2].Schedule, "consolidate keeps its default")
	require.Equal(t, "off", ov.Jobs[3].Schedule)
	require.Equal(t, "@every 1m", ov.Jobs[4].Schedule)

	for doc, field := range map[string]string{
		"decay: {profiles: {semantic: {floor: 2}}}\n":   "decay.profiles.semantic.floor",
		"decay: {profiles: {semantic: {curve: cubic}}}": "decay.profiles.semantic.curve",
		"jobs: {decay_sweeep: \"@hourly\"}\n":           "jobs.decay_sweeep: no such job",
		"decay: [not, a, mapping]\n":                    "decay: must be a mapping",
		"retention: {pii: {action: archive}}\n":         "retention.pii.action",
	} {
		write(doc)
		p.reload(ctx)
		require.Contains(t, logs.String(), "configuration reload refused", doc)
		require.Contains(t, logs.String(), field, doc)
		require.Equal(t, decay.Duration(10*24*time.Hour), settings.Config().Profiles[memory.Semantic].HalfLife, "the configuration in force stays")
		ov, err := p.scheduler.Jobs(ctx)
		require.NoError(t, err)
		require.Equal(t, "@every 1m", ov.Jobs[4].Schedule)
		require.Equal(t, decay.Duration(30*24*time.Hour), ret.retention.Config().PII.MaxAge)
	}
}

// A schedule for a job engramd does not have is refused at start.
func TestUnknownJobRefusedAtStart(t *testing.T) {
	t.Parallel()
	db := pgtest.NewSchema(t)
	cfg := config.Default()
	cfg.Jobs = map[string]string{"compact": "@hourly"}
	writer, settings, err := newWriter(db.Pool, cfg, nil)
	require.NoError(t, err)
	ret, err := newRetrieval(cfg, db.Pool, nil, nil, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	_, err = startPeriodic(context.Background(), cfg, nil, db.Pool, writer, settings, ret, nil, slog.New(slog.DiscardHandler))
	require.EqualError(t, err, "configuration: jobs.compact: no such job (there are audit_provenance, compliance, consolidate, decay_purge, decay_sweep, embedding_backfill, embedding_reindex, retention, retrieval_stats, review_escalation)")
}

// With embedding.provider none engramd has no embedding jobs, and its
// default schedules name none.
func TestProviderNoneHasNoEmbeddingJobs(t *testing.T) {
	t.Parallel()
	db := pgtest.NewSchema(t)
	path := filepath.Join(t.TempDir(), "engram.yaml")
	require.NoError(t, os.WriteFile(path, []byte("embedding: {provider: none}\n"), 0o600))
	cfg, err := config.Load([]string{"--config", path}, func(string) string { return "" })
	require.NoError(t, err)
	writer, settings, err := newWriter(db.Pool, cfg, nil)
	require.NoError(t, err)
	ret, err := newRetrieval(cfg, db.Pool, nil, nil, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	p, err := startPeriodic(context.Background(), cfg, nil, db.Pool, writer, settings, ret, nil, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { p.stop(context.Background(), 10*time.Second) })
	require.Equal(t, []string{"audit_provenance", "compliance", "consolidate", "decay_purge", "decay_sweep", "retention", "retrieval_stats", "review_escalation"}, p.scheduler.Names())
}

// engramd starts with embedding.provider none and retrieves lexically.
func TestProviderNoneStartsAndRetrieves(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a daemon")
	}
	t.Parallel()
	db := pgtest.NewSchema(t)
	bin := buildEngramd(t)
	cfg := filepath.Join(t.TempDir(), "engram.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("embedding: {provider: none}\n"), 0o600))
	var log logtest.Buffer
	d := startWithConfig(t, bin, db.URL, cfg, &log)

	call := func(method, path, key, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+d.addr+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(b)
	}
	status, body := call("POST", "/v1/records", testKey, `{"type": "semantic", "payload": {"kind": "semantic",
		"subject": "deploy", "predicate": "command", "object": "kubectl apply -k overlays/prod", "validity": {"mode": "global"}}}`)
	require.Equal(t, http.StatusCreated, status, body)

	status, body = call("POST", "/v1/retrieve", testKey, `{"task": {"text": "how do we deploy with kubectl"}}`)
	require.Equal(t, http.StatusOK, status, body)
	var res struct {
		LexicalOnly bool `json:"lexical_only"`
		Layers      []struct {
			Items []struct {
				Record struct {
					Payload struct{ Object string }
				}
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(body), &res))
	require.True(t, res.LexicalOnly, body)
	var found bool
	for _, l := range res.Layers {
		for _, it := range l.Items {
			found = found || it.Record.Payload.Object == "kubectl apply -k overlays/prod"
		}
	}
	require.True(t, found, body)

	status, body = call("GET", "/v1/jobs", opsKey, "")
	require.Equal(t, http.StatusOK, status, body)
	require.NotContains(t, body, "embedding_")
	require.Contains(t, body, "retrieval_stats")
}

// startWithYAML starts an engramd on db with a configuration file holding
// doc; its log goes to log.
func startWithYAML(t testing.TB, bin string, db *pgtest.Schema, doc string, log io.Writer) *daemon {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "engram.yaml")
	require.NoError(t, os.WriteFile(conf, []byte(doc), 0o600))
	return startWithConfig(t, bin, db.URL, conf, log)
}

// startWithConfig starts an engramd with a configuration file; its log goes
// to log.
func startWithConfig(t testing.TB, bin, dbURL, config string, log io.Writer) *daemon {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(bin, "run")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "ENGRAM_LISTEN="+addr, "ENGRAM_CONFIG="+config,
		"ENGRAM_API_KEYS=curator@acme:"+testKey+",*:"+opsKey, "ENGRAM_LOG_LEVEL=info")
	cmd.Stdout, cmd.Stderr = io.Discard, log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	require.Eventually(t, func() bool {
		res, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, 20*time.Second, 50*time.Millisecond, "engramd did not become ready")
	return &daemon{cmd: cmd, addr: addr}
}

type sweepRun struct {
	node    string
	started time.Time
}

func sweepRuns(t *testing.T, db *pgtest.Schema) []sweepRun {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), `SELECT node, started_at FROM job_runs WHERE job = 'decay_sweep' AND status = 'succeeded' ORDER BY id`)
	require.NoError(t, err)
	defer rows.Close()
	var out []sweepRun
	for rows.Next() {
		var r sweepRun
		require.NoError(t, rows.Scan(&r.node, &r.started))
		out = append(out, r)
	}
	return out
}

// Two engramd processes on one database: the sweep runs once per tick, on
// one of them; when it stops, the other takes over. SIGHUP reloads the
// schedules; an invalid file is refused with the field named.
func TestTwoDaemonsSweepOncePerTick(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs two daemons")
	}
	t.Parallel()
	db := pgtest.NewSchema(t)
	bin := buildEngramd(t)
	cfg := filepath.Join(t.TempDir(), "engram.yaml")
	write := func(doc string) { require.NoError(t, os.WriteFile(cfg, []byte(doc), 0o600)) }
	write("jobs: {decay_sweep: \"@every 1s\", decay_purge: \"off\"}\n")
	var logA, logB logtest.Buffer
	a := startWithConfig(t, bin, db.URL, cfg, &logA)
	b := startWithConfig(t, bin, db.URL, cfg, &logB)

	require.Eventually(t, func() bool { return len(sweepRuns(t, db)) >= 4 }, 30*time.Second, 50*time.Millisecond)
	runs := sweepRuns(t, db)
	ticks := map[time.Time]bool{}
	for _, r := range runs {
		require.Equal(t, runs[0].node, r.node, "one daemon leads")
		tick := r.started.Truncate(time.Second)
		require.False(t, ticks[tick], "two runs in the tick of %s", tick)
		ticks[tick] = true
	}

	// An invalid file is refused on SIGHUP; the schedule in force stays.
	write("decay: {profiles: {semantic: {half_life: -1h}}}\njobs: {decay_sweep: \"off\"}\n")
	for _, d := range []*daemon{a, b} {
		require.NoError(t, d.cmd.Process.Signal(syscall.SIGHUP))
	}
	require.Eventually(t, func() bool {
		return strings.Contains(logA.String(), "decay.profiles.semantic.half_life: must be positive") &&
			strings.Contains(logB.String(), "decay.profiles.semantic.half_life: must be positive")
	}, 10*time.Second, 20*time.Millisecond)
	n := len(sweepRuns(t, db))
	require.Eventually(t, func() bool { return len(sweepRuns(t, db)) >= n+2 }, 10*time.Second, 50*time.Millisecond, "still sweeping")

	// The leader stops; the other takes over.
	leader, other := a, b
	if !strings.HasSuffix(runs[0].node, ":"+strconv.Itoa(a.cmd.Process.Pid)) {
		leader, other = b, a
	}
	require.NoError(t, leader.cmd.Process.Signal(syscall.SIGTERM))
	_, _ = leader.cmd.Process.Wait()
	want := ":" + strconv.Itoa(other.cmd.Process.Pid)
	require.Eventually(t, func() bool {
		runs := sweepRuns(t, db)
		return strings.HasSuffix(runs[len(runs)-1].node, want)
	}, 30*time.Second, 50*time.Millisecond, "the other daemon sweeps")
}

// The review_escalation job is registered with its default schedule and
// escalates the reviews past their SLA, counting them in its run.
func TestReviewEscalationJob(t *testing.T) {
	t.Parallel()
	db := pgtest.NewSchema(t)
	cfg := config.Default()
	require.Equal(t, revise.DefaultEscalationSchedule, cfg.Jobs[revise.EscalationJob])
	writer, settings, err := newWriter(db.Pool, cfg, nil)
	require.NoError(t, err)
	ret, err := newRetrieval(cfg, db.Pool, nil, nil, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	ctx := context.Background()
	p, err := startPeriodic(ctx, cfg, nil, db.Pool, writer, settings, ret, nil, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { p.stop(ctx, 10*time.Second) })

	require.NoError(t, store.EnsureTenant(ctx, db.Pool, "acme"))
	payload := []byte(`{"kind": "semantic", "subject": "repo", "predicate": "build_tool", "object": "bazel", "validity": {"mode": "global"}}`)
	_, rv, err := writer.SubmitForReview(ctx, "acme", memory.Record{Type: memory.Semantic, Confidence: 0.6, Payload: payload},
		revise.Change{Actor: "agent"}, revise.ReviewRequest{Tier: revise.TierAsync, Risk: 0.5, SLA: time.Microsecond})
	require.NoError(t, err)

	run, err := p.scheduler.RunNow(ctx, revise.EscalationJob)
	require.NoError(t, err)
	var ended jobs.RunInfo
	require.Eventually(t, func() bool {
		r, err := p.scheduler.GetRun(ctx, run.ID)
		ended = r
		return err == nil && r.Status != "running"
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, "succeeded", ended.Status, ended.Error)
	require.Equal(t, map[string]int64{"escalated": 1, "expired": 0, "pending": 1}, ended.Counts)
	got, err := store.GetReview(ctx, db.Pool, "acme", rv.ID)
	require.NoError(t, err)
	require.NotNil(t, got.EscalatedAt)
}

// No language model unless consolidate.model names one; one that does is
// asked with its key, its calls counted, and the log names the model, never
// the key.
func TestConsolidationModel(t *testing.T) {
	t.Parallel()
	x, err := newExtractor(config.Default(), nil, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Nil(t, x, "off by default")

	const key = "sk-engramd-test-0123456789"
	srv := openaitest.NewServer(t, func(r openaitest.Request) openaitest.Reply {
		return openaitest.Completion(r.Model, `{"facts": [{"subject": "repo", "predicate": "build_tool", "object": "make", "conditions": []}]}`, "")
	})
	path := filepath.Join(t.TempDir(), "engram.yaml")
	require.NoError(t, os.WriteFile(path, []byte("consolidate: {model: {base_url: \""+srv.URL+"\", model: llama3.1}}\n"), 0o600))
	cfg, err := config.Load([]string{"--config", path}, func(k string) string {
		if k == "ENGRAM_MODEL_API_KEY" {
			return key
		}
		return ""
	})
	require.NoError(t, err)
	var logs logtest.Buffer
	reg := prometheus.NewRegistry()
	x, err = newExtractor(cfg, reg, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	require.NotNil(t, x)
	facts, err := x.Facts(context.Background(), "the repo builds with make")
	require.NoError(t, err)
	require.Equal(t, []extract.Fact{{Subject: "repo", Predicate: "build_tool", Object: "make"}}, facts)
	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "llama3.1", reqs[0].Model)
	require.Equal(t, "Bearer "+key, reqs[0].Authorization)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	require.Contains(t, names, "engram_model_calls_total")
	require.Contains(t, logs.String(), "model=llama3.1")
	require.NotContains(t, logs.String(), key)

	// engramd starts with it.
	db := pgtest.NewSchema(t)
	writer, settings, err := newWriter(db.Pool, cfg, nil)
	require.NoError(t, err)
	ret, err := newRetrieval(cfg, db.Pool, nil, nil, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	p, err := startPeriodic(context.Background(), cfg, nil, db.Pool, writer, settings, ret, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	p.stop(context.Background(), 10*time.Second)
}
