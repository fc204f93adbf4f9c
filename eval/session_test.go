package eval_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/eval"
)

// sessionWorld is a session family's world for a test.
func sessionWorld(t *testing.T, family string, cfg eval.Config) *eval.SessionWorld {
	t.Helper()
	f, ok := eval.FamilyByName(family)
	require.True(t, ok)
	return eval.NewSessionWorld(cfg, f)
}

// The session worlds are sane for an agent without memory: every session
// meets two errors or more, runs 20–60 commands, and its events are JSON;
// the agent succeeds sometimes, not always; deployment meets each problem
// in its held-out environment with values acquisition never used.
func TestSessionWorldsAreSane(t *testing.T) {
	t.Parallel()
	for _, family := range []string{"b", "c"} {
		t.Run(family, func(t *testing.T) {
			t.Parallel()
			cfg := eval.SessionConfig
			cfg.Seed = 3
			w := sessionWorld(t, family, cfg)
			rep, err := eval.RunSessions(context.Background(), w, eval.SessionNoMemory{Seed: 3}, nil, nil)
			require.NoError(t, err)
			acq := rep.SuccessRate(0, cfg.Episodes)
			dep := rep.SuccessRate(cfg.Episodes, cfg.Episodes+cfg.Deployment)
			resolved := 0
			for _, o := range rep.Errors {
				if o.Success {
					resolved++
				}
			}
			t.Logf("no memory: acquisition %.2f, deployment %.2f, %d of %d errors resolved", acq, dep, resolved, len(rep.Errors))
			require.InDelta(t, 0.35, acq, 0.3, "no memory's success in acquisition")
			values := map[string]bool{}
			solved, calls := 0, 0
			for i := range cfg.Episodes + cfg.Deployment {
				s := w.Start(i)
				_, err := eval.SessionNoMemory{Seed: 3}.Solve(context.Background(), s)
				require.NoError(t, err)
				require.GreaterOrEqual(t, len(s.Troubles), 2, "session %d", i)
				if s.Solved() {
					solved++
					calls += len(s.Steps)
				}
				for _, ev := range eval.SessionEvents("test", s) {
					if ev.Tool != nil {
						require.True(t, json.Valid(ev.Tool.Arguments) || ev.Tool.Arguments == nil)
						require.True(t, json.Valid(ev.Tool.Result) || ev.Tool.Result == nil)
					}
				}
				for _, tr := range s.Troubles {
					if !s.Deployment {
						require.NotEqual(t, tr.Problem.HeldOut, s.Env)
						for _, v := range tr.Vars {
							values[tr.Problem.Kind+v] = true
						}
						continue
					}
					require.Equal(t, tr.Problem.HeldOut, s.Env)
					for name, v := range tr.Vars {
						if name != "line" && name != "code" {
							require.False(t, values[tr.Problem.Kind+v], "session %d reuses %s=%s", i, name, v)
						}
					}
				}
			}
			mean := float64(calls) / float64(solved)
			t.Logf("%.1f calls a successful session", mean)
			require.InDelta(t, 40, mean, 20, "calls a successful session")
		})
	}
}
