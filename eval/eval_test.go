package eval_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/eval"
	"github.com/engram-dev/engram/internal/buildtest"
	"github.com/engram-dev/engram/internal/pgtest"
)

// engramdBin is engramd, built once by TestMain for the package's tests.
var engramdBin string

func TestMain(m *testing.M) {
	var err error
	if engramdBin, err = buildtest.Build("engramd"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildtest.Main(m)
}

// daemon starts an engramd of its own for a test, in a fresh schema of the
// test database, consolidating on the schedule given ("off" for none). The
// schema is the test's, already migrated, rather than one the daemon makes
// and migrates.
func daemon(t *testing.T, consolidate string) *eval.Daemon {
	t.Helper()
	d, err := eval.StartDaemon(context.Background(), eval.DaemonConfig{Bin: engramdBin, DatabaseURL: pgtest.NewSchema(t).URL,
		Consolidate: consolidate})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Stop(context.Background())) })
	return d
}

// The same seeded world twice is the same world, and its episodes meet
// the same flaky steps.
func TestWorldIsDeterministic(t *testing.T) {
	t.Parallel()
	cfg := eval.Config{Seed: 7, Problems: 5, Episodes: 30, DriftAt: 15}
	a, err := eval.Run(context.Background(), eval.NewWorld(cfg), eval.NoMemory{Seed: 7}, nil, nil)
	require.NoError(t, err)
	b, err := eval.Run(context.Background(), eval.NewWorld(cfg), eval.NoMemory{Seed: 7}, nil, nil)
	require.NoError(t, err)
	require.Equal(t, a.Outcomes, b.Outcomes)
	c, err := eval.Run(context.Background(), eval.NewWorld(eval.Config{Seed: 8, Problems: 5, Episodes: 30}), eval.NoMemory{Seed: 8}, nil, nil)
	require.NoError(t, err)
	require.NotEqual(t, a.Outcomes, c.Outcomes)
	w := eval.NewWorld(cfg)
	drifted := 0
	for _, p := range w.Problems {
		if len(p.Drifted) > 0 {
			drifted++
		}
	}
	require.Equal(t, 3, drifted, "half of five problems, rounded")
}

// Deployment meets each problem in the one environment acquisition never
// showed it, with arguments acquisition never used.
func TestDeploymentIsHeldOut(t *testing.T) {
	t.Parallel()
	w := eval.NewWorld(eval.Config{Seed: 3, Problems: 6, Episodes: 120, Deployment: 12})
	paths := map[string]bool{}
	for i := range w.Config.Episodes {
		in := w.Instance(i)
		require.NotEqual(t, in.Problem.HeldOut, in.Env, "episode %d", i)
		paths[in.Vars["path"]] = true
	}
	for i := w.Config.Episodes; i < w.Config.Episodes+w.Config.Deployment; i++ {
		in := w.Instance(i)
		require.Equal(t, in.Problem.HeldOut, in.Env, "episode %d", i)
		require.False(t, paths[in.Vars["path"]], "episode %d reuses an acquisition path", i)
	}
}

// A small world, the same seed for each agent, each learning agent with an
// engramd of its own: the engram agent, learning through the public API
// while engramd consolidates on its scheduler, succeeds more often than
// both the agent without memory and the raw-episode agent (engram's
// episodic layer, consolidation off), over the last acquisition window
// and in deployment (issue 12).
func TestEngramAgentLearns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two engramd processes")
	}
	t.Parallel()
	ctx := context.Background()
	const seed = 12
	cfg := eval.Config{Seed: seed, Problems: 4, Episodes: 60, DriftAt: 30, Deployment: 12, Window: 20}

	none, err := eval.Run(ctx, eval.NewWorld(cfg), eval.NoMemory{Seed: seed}, nil, nil)
	require.NoError(t, err)
	var learner, raw eval.Report
	var errL, errR error
	var wg sync.WaitGroup
	wg.Go(func() {
		d := daemon(t, "@every 1s")
		learner, errL = eval.Run(ctx, eval.NewWorld(cfg), eval.Engram{Client: d.Client, Seed: seed}, d, nil)
	})
	wg.Go(func() {
		d := daemon(t, "off")
		raw, errR = eval.Run(ctx, eval.NewWorld(cfg), &eval.Replay{Client: d.Client, Seed: seed}, d, nil)
	})
	wg.Wait()
	require.NoError(t, errL)
	require.NoError(t, errR)

	for _, r := range []eval.Report{learner, raw, none} {
		t.Log(r.String())
	}
	last, end, all := cfg.Episodes-cfg.Window, cfg.Episodes, cfg.Episodes+cfg.Deployment
	t.Logf("last window: engram %.2f, raw episodes %.2f, no memory %.2f",
		learner.SuccessRate(last, end), raw.SuccessRate(last, end), none.SuccessRate(last, end))
	t.Logf("deployment: engram %.2f, raw episodes %.2f, no memory %.2f",
		learner.SuccessRate(end, all), raw.SuccessRate(end, all), none.SuccessRate(end, all))
	t.Logf("records learned: %v; the raw-episode store: %v", learner.Records, raw.Records)
	require.Positive(t, learner.Sources(0, all)[eval.FromCompetence], "the engram agent never followed a learned procedure")
	require.Zero(t, raw.Records["competence"], "the raw-episode store consolidated")
	for _, control := range []eval.Report{none, raw} {
		require.Greater(t, learner.SuccessRate(last, end), control.SuccessRate(last, end), "last window, against %s", control.Agent)
		require.Greater(t, learner.SuccessRate(end, all), control.SuccessRate(end, all), "deployment, against %s", control.Agent)
	}
}
