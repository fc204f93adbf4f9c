package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/internal/buildtest"
	"github.com/engram-dev/engram/internal/logtest"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/policy"
)

const (
	testKey = "crash-test-key-0123456789"
	opsKey  = "crash-test-operator-0123456789"
)

// TestMain keeps SIGHUP from terminating the test binary: the reload test
// sends it to this process, maybe before its handler has registered.
func TestMain(m *testing.M) {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
	buildtest.Main(m)
}

// daemon is an engramd process under test.
type daemon struct {
	cmd  *exec.Cmd
	addr string
}

// buildEngramd returns engramd, built once per test process and linked
// with a version, as a release is (TestVersion).
func buildEngramd(t testing.TB) string {
	t.Helper()
	return buildtest.Command(t, "engramd", "-X "+versionVar+"="+testVersion)
}

// The version the test binary is linked with, and the variable it sets.
const (
	versionVar  = "github.com/engram-dev/engram/internal/version.Version"
	testVersion = "v0.0.0-test"
)

// engramd --version names the build: the version linked in, else
// "devel", with the Go version.
func TestVersion(t *testing.T) {
	out, err := exec.Command(buildEngramd(t), "--version").CombinedOutput()
	require.NoError(t, err, string(out))
	require.True(t, strings.HasPrefix(string(out), "engramd "+testVersion+" ("), string(out))
	require.Contains(t, string(out), runtime.Version())
	var stdout bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"version"}, func(string) string { return "" }, &stdout))
	require.True(t, strings.HasPrefix(stdout.String(), "engramd devel ("), stdout.String())
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// startDaemon starts engramd on dbURL at addr, with env added to its
// environment, and waits until it is ready.
func startDaemon(t *testing.T, bin, dbURL, addr string, env ...string) *daemon {
	t.Helper()
	return startDaemonWith(t, bin, append([]string{"DATABASE_URL=" + dbURL, "ENGRAM_LISTEN=" + addr, "ENGRAM_API_KEYS=curator@acme:" + testKey}, env...)...)
}

// startDaemonWith starts engramd with env (which must set DATABASE_URL and
// ENGRAM_LISTEN) over this process's environment, and waits until it is
// ready.
func startDaemonWith(t *testing.T, bin string, env ...string) *daemon {
	t.Helper()
	var addr string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "ENGRAM_LISTEN="); ok {
			addr = v
		}
	}
	require.NotEmpty(t, addr, "ENGRAM_LISTEN")
	cmd := exec.Command(bin, "run")
	cmd.Env = append(append(os.Environ(), "ENGRAM_LOG_LEVEL=warn"), env...)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	require.NoError(t, cmd.Start())
	d := &daemon{cmd: cmd, addr: addr}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return d
			}
		}
		require.True(t, time.Now().Before(deadline), "engramd did not become ready")
		time.Sleep(50 * time.Millisecond)
	}
}

// Kill the daemon mid-stream and restart it: every acknowledged event is
// classified exactly once.
func TestKillMidStreamThenRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a daemon")
	}
	t.Parallel()
	db := pgtest.NewSchema(t)
	bin := buildEngramd(t)
	addr := freeAddr(t)
	d := startDaemon(t, bin, db.URL, addr)

	pr, pw := io.Pipe()
	req, err := http.NewRequest("POST", "http://"+addr+"/v1/events:stream", pr)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testKey)
	go func() {
		defer pw.Close()
		for i := 0; i < 200_000; i++ {
			ev := map[string]any{"kind": "observation", "agent_id": "agent-1", "thread_id": fmt.Sprintf("t%d", i%7),
				"text": fmt.Sprintf("event %d", i), "idempotency_key": fmt.Sprint(i)}
			b, _ := json.Marshal(ev)
			if _, err := pw.Write(append(b, '\n')); err != nil {
				return // the daemon is gone
			}
		}
	}()
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var acked []string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		var a struct{ ID string }
		require.NoError(t, json.Unmarshal(sc.Bytes(), &a))
		require.NotEmpty(t, a.ID, sc.Text())
		acked = append(acked, a.ID)
		if len(acked) == 3000 {
			require.NoError(t, d.cmd.Process.Signal(syscall.SIGKILL))
			break
		}
	}
	for sc.Scan() { // acknowledgements already on the wire count too
		var a struct{ ID string }
		if json.Unmarshal(sc.Bytes(), &a) == nil && a.ID != "" {
			acked = append(acked, a.ID)
		}
	}
	res.Body.Close()
	_, _ = d.cmd.Process.Wait()
	_ = pr.CloseWithError(io.ErrClosedPipe)
	require.GreaterOrEqual(t, len(acked), 3000)

	startDaemon(t, bin, db.URL, freeAddr(t))
	ctx := context.Background()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var pending int
		require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM candidates WHERE status = 'pending'").Scan(&pending))
		if pending == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "%d events still pending after the restart", pending)
		time.Sleep(100 * time.Millisecond)
	}

	// Every acknowledged event is done, and in exactly one episode's
	// timeline, exactly once.
	var notDone, wrong int
	require.NoError(t, db.Pool.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE c.status IS DISTINCT FROM 'done') FROM unnest($1::uuid[]) a(id)
		LEFT JOIN candidates c ON c.id = a.id`, acked).Scan(&notDone))
	require.Zero(t, notDone)
	require.NoError(t, db.Pool.QueryRow(ctx, `
		WITH refs AS (
			SELECT entry ->> 'ref' AS ref, count(*) AS n
			FROM episode_entries WHERE part = 'timeline' GROUP BY 1
		)
		SELECT count(*) FROM unnest($1::uuid[]) a(id) LEFT JOIN refs ON refs.ref = 'evt://' || a.id
		WHERE refs.n IS DISTINCT FROM 1`, acked).Scan(&wrong))
	require.Zero(t, wrong, "every acknowledged event appears exactly once in the episodes")
}

// A bad policy file on SIGHUP is refused and the policy in force stays; a
// good one replaces it.
func TestPolicyReloadOnSIGHUP(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	require.NoError(t, os.WriteFile(path, []byte("rules: [{name: a, match: {kind: [observation]}, drop: true}]\n"), 0o600))
	first, err := policy.Load(path)
	require.NoError(t, err)
	w := ingest.NewWorker(ingest.WorkerConfig{Policy: first})
	observation := memory.Event{Kind: memory.Observation, AgentID: "a", ThreadID: "t", Text: "x"}
	logs := &logtest.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go reloadPolicyOnHUP(ctx, path, w, slog.New(slog.NewTextHandler(logs, nil)))

	hup := func(wantLog string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(logs.String(), wantLog) {
			// Resend until the reloader has registered and answered.
			require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
			require.True(t, time.Now().Before(deadline), "no %q in the log: %s", wantLog, logs.String())
			time.Sleep(20 * time.Millisecond)
		}
	}
	require.NoError(t, os.WriteFile(path, []byte("rules: [{name: b, set: {sensitivity: secret}}]\n"), 0o600))
	hup("policy reload refused")
	require.True(t, w.Policy().Classify(observation, "").Drop, "the old policy stays in force")
	require.Contains(t, logs.String(), "rules[0] (b).set.sensitivity")

	require.NoError(t, os.WriteFile(path, []byte("rules: [{name: c, set: {sensitivity: hyper}}]\n"), 0o600))
	hup("policy reloaded")
	d := w.Policy().Classify(observation, "")
	require.False(t, d.Drop)
	require.Equal(t, memory.Hyper, d.Sensitivity)
}
