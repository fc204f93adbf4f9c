package eval

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// script builds a report from one token per episode: the problem, + for a
// success or - for a failure, the steps, and ~ when the problem's fix had
// drifted ("1+4~"). Episodes from cfg.Episodes on are deployment's.
func script(t *testing.T, agent string, cfg Config, episodes string) Report {
	t.Helper()
	r := Report{Agent: agent, Config: cfg}
	for i, tok := range strings.Fields(episodes) {
		o := Outcome{Episode: i, Phase: Acquisition, Drifted: strings.HasSuffix(tok, "~")}
		if i >= cfg.Episodes {
			o.Phase = Deployment
		}
		var sign rune
		_, err := fmt.Sscanf(strings.TrimSuffix(tok, "~"), "%d%c%d", &o.Problem, &sign, &o.Steps)
		require.NoError(t, err, tok)
		o.Success = sign == '+'
		r.Outcomes = append(r.Outcomes, o)
	}
	return r
}

// run is a hand-made run of the three agents over two problems: 0 never
// drifts, 1 drifts at episode 4; episodes 8 and 9 are deployment.
type run struct {
	cfg               Config
	engram, raw, none Report
}

func newRun(t *testing.T) run {
	t.Helper()
	cfg := Config{Seed: 12, Problems: 2, Episodes: 8, DriftAt: 4, Window: 3}
	r := run{cfg: cfg,
		engram: script(t, engramAgent, cfg, "0-9 1+4 0+3 1+3 0+3 1-9~ 0+3 1+3~ 0+3 1+5~"),
		raw:    script(t, rawAgent, cfg, "0-9 1+6 0+6 1-9 0+6 1-9~ 0+6 1-9~ 0+7 1-9~"),
		none:   script(t, noMemoryAgent, cfg, "0-9 1-9 0-9 1-9 0-9 1-9~ 0-9 1-9~ 0-9 1-9~"),
	}
	// The engram agent retrieved every time, followed seven records, and
	// six of them worked: the first five, and after drift the second
	// attempt of problem 1.
	for i := range r.engram.Outcomes {
		o := &r.engram.Outcomes[i]
		o.Retrieved, o.Followed, o.Useful = true, i < 6 || i == 7, i < 5 || i == 7
	}
	r.engram.Records = map[string]int{"competence": 2, "episodic": 10}
	r.raw.Records = map[string]int{"episodic": 10}
	return r
}

func TestMeasureThreeAgents(t *testing.T) {
	t.Parallel()
	r := newRun(t)
	m := Measure(r.engram, r.raw, r.none)
	require.Len(t, m.Agents, 3)
	e, raw, none := m.Agents[0], m.Agents[1], m.Agents[2]
	require.Equal(t, engramAgent, e.Agent)

	// Episodes 0–3: F, S4, S3, S3. Episodes 4–7: S3, F, S3, S3. Deployment: S3, S5.
	require.Equal(t, Tally{Episodes: 4, Successes: 3, Steps: 10}, e.BeforeDrift)
	require.InDelta(t, 10.0/3, e.BeforeDrift.StepsPerSuccess(), 1e-9)
	require.Equal(t, Tally{Episodes: 4, Successes: 3, Steps: 9}, e.AfterDrift)
	require.Equal(t, Tally{Episodes: 2, Successes: 2, Steps: 8}, e.Deployment)
	require.Equal(t, 1.0, e.Deployment.SuccessRate())
	require.Equal(t, 4.0, e.Deployment.StepsPerSuccess())

	// Problem 0: F S S S, reliable after its first success; it never
	// drifts. Problem 1: S S before drift (reliable from the start),
	// F S after (back after one attempt); deployment is not counted.
	require.Equal(t, []ProblemMetrics{
		{Problem: 0, Before: 4, UntilReliable: 1, Lag: -1, Relearn: -1},
		{Problem: 1, Drifted: true, Before: 2, After: 2, UntilReliable: 0, Lag: 1, Relearn: 1},
	}, nanSafe(e.Problems))
	require.Equal(t, 1.0, e.RelearnMax, "what engram offers for problem 1 works again after one attempt")
	require.Equal(t, 1.0, e.UntilReliableMax)
	require.Equal(t, 0.5, e.UntilReliableMedian)
	require.Equal(t, 1.0, e.LagMax)

	// Raw episodes: problem 1 goes S F before drift and F F after.
	require.Equal(t, Never, raw.Problems[1].UntilReliable)
	require.Equal(t, Never, raw.Problems[1].Lag)
	require.Equal(t, Never, raw.UntilReliableMax)
	require.Equal(t, Never, raw.UntilReliableMedian, "the middle of 1 and never")

	// No memory succeeds nowhere.
	require.Equal(t, 0.0, none.Deployment.SuccessRate())
	require.True(t, math.IsNaN(none.Deployment.StepsPerSuccess()))
	require.Equal(t, Never, none.UntilReliableMax)
	require.Equal(t, Never, none.LagMax)

	// 8 of 10 against 0 of 10; in deployment 2 of 2 against 0, and
	// against raw episodes' 1 of 2 in 7 steps.
	require.InDelta(t, 0.8, m.Impact, 1e-9)
	require.Equal(t, 1.0, m.DeploymentImpact)
	require.Equal(t, 0.5, m.Margin)
	require.Equal(t, -3.0, m.StepsMargin)

	require.Equal(t, Retrieval{Retrieved: 10, Followed: 7, Useful: 6}, e.Retrieval)
	require.Equal(t, 0.6, e.Retrieval.UsefulShare())
	require.Equal(t, 0.7, e.Retrieval.FollowedShare())
	require.True(t, math.IsNaN(raw.Retrieval.UsefulShare()), "no retrieval: nothing to measure")
	require.Equal(t, map[string]int{"competence": 2, "episodic": 10}, e.Records)

	require.Len(t, m.Targets, 5)
	for _, tg := range m.Targets {
		require.True(t, tg.Met, tg.Name)
	}
	require.Equal(t, []float64{1, 1, 0.8, 0.5, -3}, roundedValues(m.Targets))
}

// Without drift and without deployment, the figures that need them are
// not measured and their targets are not met; those that remain are.
func TestMeasureNoDriftNoDeployment(t *testing.T) {
	t.Parallel()
	cfg := Config{Seed: 1, Episodes: 4}
	e := script(t, engramAgent, cfg, "0-9 0+3 0+3 0+3")
	none := script(t, noMemoryAgent, cfg, "0-9 0-9 0+5 0-9")
	m := Measure(e, none)
	a := m.Agents[0]
	require.Equal(t, Tally{Episodes: 4, Successes: 3, Steps: 9}, a.BeforeDrift)
	require.Zero(t, a.AfterDrift)
	require.True(t, math.IsNaN(a.AfterDrift.SuccessRate()))
	require.Zero(t, a.Deployment)
	require.Equal(t, 1.0, a.UntilReliableMax)
	require.True(t, math.IsNaN(a.LagMax))
	require.InDelta(t, 0.5, m.Impact, 1e-9, "3 of 4 against 1 of 4")
	require.True(t, math.IsNaN(m.DeploymentImpact))
	require.True(t, math.IsNaN(m.Margin), "no raw-episode report")

	// Reliable ✓, lag not measured, impact ✓, margin and steps not measured.
	require.Equal(t, []bool{true, false, true, false, false}, metInOrder(m.Targets))
}

// Without an engram report, no target is measured.
func TestMeasureWithoutEngram(t *testing.T) {
	t.Parallel()
	r := newRun(t)
	m := Measure(r.raw, r.none)
	for _, tg := range m.Targets {
		require.True(t, math.IsNaN(tg.Value), tg.Name)
		require.False(t, tg.Met, tg.Name)
	}
}

func TestSuccessesUntilReliable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		attempts string
		want     float64
	}{
		{"", NotMeasured},
		{"SSS", 0},
		{"FSSS", 1},
		// After one success: F S S S S is 4 in 5; after two: S S S.
		{"FFSFSSSS", 2},
		// The only success is the last attempt: nothing shows it holds.
		{"FS", Never},
		{"FFF", Never},
		// 38 in 40 is exactly 95%.
		{"FF" + strings.Repeat("S", 38), 0},
		{"FFF" + strings.Repeat("S", 37), 1},
	} {
		got := successesUntilReliable(attempts(tc.attempts), ReliableShare)
		requireSameFigure(t, tc.want, got, tc.attempts)
	}
}

func TestAttemptsUntilReliable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		attempts string
		want     float64
	}{
		{"", NotMeasured},
		{"SS", 0},
		{"FSS", 1},
		// 9 in 12, 9 in 11, then 9 in 10: 90%.
		{"FFFSSSSSSSSS", 2},
		// 10 in 11 holds a failure.
		{"FSFSSSSSSSSS", 1},
		{"SF", Never},
	} {
		got := attemptsUntilReliable(attempts(tc.attempts), RecoveredShare)
		requireSameFigure(t, tc.want, got, tc.attempts)
	}
}

func TestTargetComparisons(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value float64
		op    string
		bound float64
		met   bool
	}{
		{3, "≤", 3, true},
		{4, "≤", 3, false},
		{Never, "≤", 3, false},
		{NotMeasured, "≤", 3, false},
		{0.5, "≥", 0.5, true},
		{0.49, "≥", 0.5, false},
		{NotMeasured, "≥", 0.5, false},
		{-0.1, "<", 0, true},
		{0, "<", 0, false},
	} {
		require.Equal(t, tc.met, newTarget("t", tc.value, tc.op, tc.bound).Met, "%v %s %v", tc.value, tc.op, tc.bound)
	}
}

// attempts reads S as a success and F as a failure.
func attempts(s string) []bool {
	var out []bool
	for _, c := range s {
		out = append(out, c == 'S')
	}
	return out
}

// requireSameFigure compares figures that may be NotMeasured.
func requireSameFigure(t *testing.T, want, got float64, msg string) {
	t.Helper()
	if math.IsNaN(want) {
		require.True(t, math.IsNaN(got), "%s: got %v, want not measured", msg, got)
		return
	}
	require.Equal(t, want, got, msg)
}

// nanSafe replaces NotMeasured by -1 in the problems' figures, so that
// require.Equal can compare them.
func nanSafe(ps []ProblemMetrics) []ProblemMetrics {
	out := make([]ProblemMetrics, len(ps))
	for i, p := range ps {
		if math.IsNaN(p.UntilReliable) {
			p.UntilReliable = -1
		}
		if math.IsNaN(p.Lag) {
			p.Lag = -1
		}
		if math.IsNaN(p.Relearn) {
			p.Relearn = -1
		}
		out[i] = p
	}
	return out
}

func roundedValues(ts []Target) []float64 {
	var out []float64
	for _, tg := range ts {
		out = append(out, math.Round(tg.Value*100)/100)
	}
	return out
}

func metInOrder(ts []Target) []bool {
	var out []bool
	for _, tg := range ts {
		out = append(out, tg.Met)
	}
	return out
}
