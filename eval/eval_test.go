package eval_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/consolidate"
	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/eval"
	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

const key = "eval-key-0123456789"

// memRun is a job run kept in memory: its cursor survives between passes.
type memRun struct{ cursor []byte }

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

func (r *memRun) Add(string, int64) {}

// engramd is engram as consolidate's tests build it — the HTTP API over a
// fresh schema, the policy plane drained between episodes — with the
// hooks the protocol calls: Settle drains the policy plane, Consolidate
// runs the consolidation job's pass (the scheduler is not wired in this
// test; the pass is the job's body).
func engramd(t *testing.T) (*eval.Client, eval.Hooks) {
	t.Helper()
	db := pgtest.NewSchema(t)
	wr := revise.New(db.Pool, revise.Config{})
	require.NoError(t, store.EnsureTenant(context.Background(), db.Pool, "eval"))
	w := ingest.NewWorker(ingest.WorkerConfig{DB: db.Pool})
	ds, err := decay.NewSettings(decay.DefaultConfig())
	require.NoError(t, err)
	rs, err := retrieve.NewSettings(retrieve.DefaultConfig())
	require.NoError(t, err)
	srv := httptest.NewServer(server.New(server.Config{
		DB: db.Pool, Writer: wr, Logger: slog.New(slog.DiscardHandler), Decay: decay.New(db.Pool, wr, ds), Retrieve: retrieve.New(db.Pool, rs),
		Ingest: ingest.New(ingest.Config{DB: db.Pool, Policy: w.Policy, Staged: w.Notify}),
		Keys:   []server.Key{{Tenant: "eval", Name: "eval", Secret: key}},
	}))
	t.Cleanup(srv.Close)
	cons := consolidate.New(consolidate.Config{DB: db.Pool, Writer: wr, Registry: prometheus.NewRegistry()})
	run := &memRun{}
	return &eval.Client{BaseURL: srv.URL, Key: key}, eval.Hooks{
		Settle: func(ctx context.Context) error {
			for {
				total := 0
				for p := range ingest.DefaultPartitions {
					n, err := w.RunOnce(ctx, p)
					if err != nil {
						return err
					}
					total += n
				}
				if total == 0 {
					return nil
				}
			}
		},
		Consolidate: func(ctx context.Context) error { return cons.Consolidate(ctx, run) },
	}
}

// The same seeded world twice is the same world, and its episodes meet
// the same flaky steps.
func TestWorldIsDeterministic(t *testing.T) {
	t.Parallel()
	cfg := eval.Config{Seed: 7, Problems: 5, Episodes: 30, DriftAt: 15}
	a, err := eval.Run(context.Background(), eval.NewWorld(cfg), eval.NoMemory{Seed: 7}, eval.Hooks{})
	require.NoError(t, err)
	b, err := eval.Run(context.Background(), eval.NewWorld(cfg), eval.NoMemory{Seed: 7}, eval.Hooks{})
	require.NoError(t, err)
	require.Equal(t, a.Outcomes, b.Outcomes)
	c, err := eval.Run(context.Background(), eval.NewWorld(eval.Config{Seed: 8, Problems: 5, Episodes: 30}), eval.NoMemory{Seed: 8}, eval.Hooks{})
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

// A small world, the same seed for each agent: the engram agent, learning
// through the public API with consolidation between episodes, succeeds
// more often over the last window than the agent without memory; and the
// figures of the raw-episode control are printed beside it (issue 12).
func TestEngramAgentLearns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const seed = 12
	cfg := eval.Config{Seed: seed, Problems: 4, Episodes: 60, DriftAt: 30, MaxSteps: 7, Window: 20}

	none, err := eval.Run(ctx, eval.NewWorld(cfg), eval.NoMemory{Seed: seed}, eval.Hooks{})
	require.NoError(t, err)

	client, hooks := engramd(t)
	learner, err := eval.Run(ctx, eval.NewWorld(cfg), eval.Engram{Client: client, Seed: seed}, hooks)
	require.NoError(t, err)

	client, hooks = engramd(t)
	hooks.Consolidate = nil // a plain episode store learns nothing
	raw, err := eval.Run(ctx, eval.NewWorld(cfg), &eval.Replay{Client: client, Seed: seed}, hooks)
	require.NoError(t, err)

	for _, r := range []eval.Report{learner, raw, none} {
		t.Log(r.String())
	}
	last := cfg.Episodes - cfg.Window
	t.Logf("last window: engram %.2f, raw episodes %.2f, no memory %.2f",
		learner.SuccessRate(last, cfg.Episodes), raw.SuccessRate(last, cfg.Episodes), none.SuccessRate(last, cfg.Episodes))
	require.Greater(t, learner.Sources(0, cfg.Episodes)[eval.FromCompetence], 0, "the engram agent never followed a learned procedure")
	require.Greater(t, learner.SuccessRate(last, cfg.Episodes), none.SuccessRate(last, cfg.Episodes))
}
