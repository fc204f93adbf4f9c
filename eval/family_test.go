package eval_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/eval"
	"github.com/engram-dev/engram/internal/pgtest"
)

// A quick world of each session family runs end to end against real
// engramd processes — the engram agent retrieving at each error,
// streaming its sessions, its engramd consolidating; the controls; the
// offline replay metric on family (b) — and its report renders. It does
// not assert that engram beats the controls: the learning code is being
// rewritten for these worlds; make eval reports how it fares.
func TestSessionFamiliesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs engramd processes")
	}
	t.Parallel()
	for _, family := range []string{"b", "c"} {
		t.Run(family, func(t *testing.T) {
			t.Parallel()
			f, ok := eval.FamilyByName(family)
			require.True(t, ok)
			cfg := f.Config
			cfg.Seed, cfg.Episodes, cfg.Deployment, cfg.DriftAt = 4, 24, 8, 12
			start := func(ctx context.Context, role, schedule string) (*eval.Daemon, error) {
				// The test's pooled schema, already migrated, rather than one
				// the daemon makes and migrates.
				return eval.StartDaemon(ctx, eval.DaemonConfig{Bin: engramdBin, DatabaseURL: pgtest.NewSchema(t).URL, Consolidate: schedule})
			}
			run, err := f.Run(context.Background(), cfg, start, eval.RunOptions{Schedule: "@every 1s", Replay: family == "b"})
			require.NoError(t, err)
			require.Len(t, run.Reports, 4)
			for _, r := range run.Reports {
				t.Log(r.String())
				require.Len(t, r.Outcomes, cfg.Episodes+cfg.Deployment)
				require.GreaterOrEqual(t, len(r.Errors), 2*len(r.Outcomes)/2, "%s: errors met", r.Agent)
			}
			engram := run.Reports[0]
			require.Equal(t, "engram", engram.Agent)
			retrieved := 0
			for _, o := range engram.Errors {
				if o.Retrieved {
					retrieved++
				}
			}
			require.Equal(t, len(engram.Errors), retrieved, "the engram agent retrieves at each error")
			require.Positive(t, engram.Records["episodic"], "engram stored the sessions")
			if family == "b" {
				require.NotNil(t, run.Replay)
				require.Positive(t, run.Replay.Errors)
				t.Logf("replay: %+v", *run.Replay)
			}
		})
	}
}
