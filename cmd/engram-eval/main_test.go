package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/eval"
	"github.com/engram-dev/engram/internal/buildtest"
	"github.com/engram-dev/engram/internal/pgtest"
)

// engramd is engramd, built once by TestMain.
var engramd string

func TestMain(m *testing.M) {
	var err error
	if engramd, err = buildtest.Build("engramd"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildtest.Main(m)
}

func getenv(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// `engram-eval run` on a small world writes a report that states the
// command reproducing it and a chart that parses as SVG, and prints each
// agent's curve.
func TestRunWritesTheReport(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two engramd processes")
	}
	t.Parallel()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"run", "--engramd", engramd, "--database-url", pgtest.URL(), "--out", out,
		"--family", "a", "--seeds", "1", "--problems", "3", "--episodes", "24", "--deployment", "6", "--window", "6", "--seed", "5"},
		getenv(nil), &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	report, err := os.ReadFile(filepath.Join(out, reportFile))
	require.NoError(t, err)
	require.Contains(t, string(report), "engram-eval run --family a --seeds 1 --seed 5 --problems 3 --episodes 24 --deployment 6 --drift 12")
	require.Contains(t, string(report), "| (a) | 1 |")
	require.Contains(t, string(report), "](curve.svg)")
	chart, err := os.ReadFile(filepath.Join(out, chartFile))
	require.NoError(t, err)
	dec := xml.NewDecoder(bytes.NewReader(chart))
	for {
		_, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	for _, agent := range []string{"engram", "raw episodes", "no memory"} {
		require.Contains(t, stdout.String(), agent)
	}
	// curve.json: the chart's points as data, the same run as the report.
	b, err := os.ReadFile(filepath.Join(out, curvesFile))
	require.NoError(t, err)
	var curves eval.Curves
	require.NoError(t, json.Unmarshal(b, &curves))
	require.Contains(t, string(report), curves.Command)
	require.Equal(t, eval.CurveX, curves.X)
	require.Equal(t, 6, curves.Window)
	require.Equal(t, 24, curves.Episodes)
	require.Equal(t, 6, curves.Deployment)
	require.WithinDuration(t, time.Now(), curves.Made, time.Hour)
	require.Len(t, curves.Agents, 3)
	for i, agent := range []string{"engram", "raw episodes", "no memory"} {
		require.Equal(t, agent, curves.Agents[i].Agent)
		// Windows of 6 over 24 episodes drifting at 12, then deployment.
		require.Len(t, curves.Agents[i].Points, 5, agent)
	}
	// The no-memory agent's curve is the one its seeded world gives.
	cfg := DefaultWorld
	cfg.Seed, cfg.Problems, cfg.Episodes, cfg.Deployment, cfg.DriftAt, cfg.Window = 5, 3, 24, 6, 12, 6
	none, err := eval.Run(context.Background(), eval.NewWorld(cfg), eval.NoMemory{Seed: 5}, nil, nil)
	require.NoError(t, err)
	require.Equal(t, eval.PhaseCurve(none), curves.Agents[2].Points)
	require.Contains(t, stderr.String(), "family (a), seed 5: 3 problems, 24 acquisition episodes (drift at 12), 6 deployment episodes")
}

// `engram-eval demo` against a database as make run uses it: the curve,
// then a learned procedure and a plan graph, and the commands to look
// further with the key that reads them.
func TestDemoShowsWhatWasLearned(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an engramd process")
	}
	t.Parallel()
	db := pgtest.NewSchema(t)
	schema := db.Name + "_demo"
	t.Cleanup(func() { _ = execSQL(pgtest.URL(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE") })
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"demo", "--engramd", engramd, "--stay=false", "--schema", schema},
		getenv(map[string]string{"DATABASE_URL": db.URL}), &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	got := stdout.String()
	require.Contains(t, got, "A learned procedure: ")
	require.Contains(t, got, "A plan graph: ")
	require.Contains(t, got, "export ENGRAM_URL=http://127.0.0.1:")
	require.Contains(t, got, "bin/engram procedures")
	require.NotContains(t, got, "keeps running")
}

// Bad usage is refused with the reason, before anything starts.
func TestUsageErrors(t *testing.T) {
	for args, want := range map[string]string{
		"":                        "a command is needed",
		"frobnicate":              `unknown command "frobnicate"`,
		"run extra":               `unexpected argument "extra"`,
		"demo --episodes notanum": "invalid value",
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), strings.Fields(args), getenv(nil), &stdout, &stderr)
		require.Error(t, err, args)
		require.Contains(t, err.Error()+stderr.String(), want, args)
	}
}

// `make demo` with `make run` up on the same database: the running daemon
// leads the jobs there (here with an hourly consolidation, so that a demo
// waiting on its passes would never learn), and the demo still learns, on
// passes of its own, and says where its memory stays. Its closing
// commands work after it exits: the engramd it prints serves what it
// learned with the keys it printed.
func TestDemoWithRunUp(t *testing.T) {
	if testing.Short() {
		t.Skip("runs engramd processes")
	}
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewSchema(t)
	up, err := eval.StartDaemon(ctx, eval.DaemonConfig{Bin: engramd, DatabaseURL: db.URL, Consolidate: "@every 1h", Tenant: "default"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = up.Stop(context.Background()) })
	require.Eventually(t, func() bool {
		ov, err := up.Ops.Jobs(ctx)
		return err == nil && ov.Leader
	}, time.Minute, 50*time.Millisecond, "make run's daemon leads")

	schema := db.Name + "_demo"
	t.Cleanup(func() { _ = execSQL(pgtest.URL(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE") })
	var stdout, stderr bytes.Buffer
	start := time.Now()
	err = run(ctx, []string{"demo", "--engramd", engramd, "--stay=false", "--schema", schema},
		getenv(map[string]string{"DATABASE_URL": db.URL}), &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	t.Logf("the demo took %s with make run's daemon up", time.Since(start).Round(time.Second))
	got := stdout.String()
	require.Contains(t, got, "A learned procedure: ")
	require.Contains(t, got, "schema "+schema)
	require.Contains(t, got, "make run")

	// The closing commands, after the demo's engramd has exited.
	var env []string
	for line := range strings.Lines(got) {
		if fields := strings.Fields(line); len(fields) > 0 && strings.HasPrefix(fields[0], "DATABASE_URL=") {
			for _, f := range fields {
				if k, v, ok := strings.Cut(f, "="); ok && (strings.HasPrefix(k, "ENGRAM_") || k == "DATABASE_URL") {
					env = append(env, k+"="+strings.Trim(v, "'"))
				}
			}
		}
	}
	require.NotEmpty(t, env, "the demo says how to serve its memory again:\n%s", got)
	var exports map[string]string
	for line := range strings.Lines(got) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "export "); ok {
			exports = map[string]string{}
			for _, f := range strings.Fields(rest) {
				k, v, _ := strings.Cut(f, "=")
				exports[k] = v
			}
		}
	}
	require.NotEmpty(t, exports["ENGRAM_API_KEY"], got)
	again := exec.Command(engramd, "run")
	again.Env = append(os.Environ(), env...)
	require.NoError(t, again.Start())
	t.Cleanup(func() { _ = again.Process.Kill(); _ = again.Wait() })
	c := &eval.Client{BaseURL: exports["ENGRAM_URL"], Key: exports["ENGRAM_API_KEY"]}
	var procs int
	require.Eventually(t, func() bool {
		recs, err := c.Records(ctx, url.Values{"type": {"competence"}})
		procs = len(recs)
		return err == nil
	}, time.Minute, 100*time.Millisecond, "the engramd the demo printed serves its memory")
	require.Positive(t, procs)
}

// execSQL runs a statement on a connection of its own.
func execSQL(dbURL, stmt string) error {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, stmt)
	return err
}
