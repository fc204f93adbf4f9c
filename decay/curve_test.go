package decay_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/memory"
)

const day = 24 * time.Hour

// Each curve's salience at known ages.
func TestCurvesAtKnownAges(t *testing.T) {
	t.Parallel()
	exp := memory.Decay{Curve: memory.Exponential, HalfLifeSeconds: 86400}
	lin := memory.Decay{Curve: memory.Linear, HalfLifeSeconds: 86400}
	custom := memory.Decay{Curve: memory.Custom, HalfLifeSeconds: 86400, Points: []memory.DecayPoint{
		{AgeSeconds: 86400, Salience: 0.8}, {AgeSeconds: 3 * 86400, Salience: 0.2},
	}}
	withFloor := func(d memory.Decay, f float64) memory.Decay { d.MinSalience = f; return d }

	for _, tc := range []struct {
		name string
		d    memory.Decay
		base float64
		age  time.Duration
		want float64
	}{
		{"exponential at 0", exp, 1, 0, 1},
		{"exponential at one half-life", exp, 1, day, 0.5},
		{"exponential at two half-lives", exp, 1, 2 * day, 0.25},
		{"exponential at half a half-life", exp, 0.8, day / 2, 0.8 / 1.4142135623730951},
		{"exponential with a floor", withFloor(exp, 0.2), 1, day, 0.6},
		{"exponential far past the floor", withFloor(exp, 0.2), 1, 400 * day, 0.2},
		{"linear at one half-life", lin, 1, day, 0.5},
		{"linear at 1.5 half-lives", lin, 0.8, 36 * time.Hour, 0.2},
		{"linear at two half-lives", lin, 1, 2 * day, 0},
		{"linear past the end", lin, 1, 5 * day, 0},
		{"linear with a floor", withFloor(lin, 0.1), 1, 5 * day, 0.1},
		{"custom before its first point, from (0, 1)", custom, 1, day / 2, 0.9},
		{"custom at a point", custom, 1, day, 0.8},
		{"custom between points", custom, 1, 2 * day, 0.5},
		{"custom after its last point stays flat", custom, 1, 30 * day, 0.2},
		{"custom scales the stored salience", custom, 0.5, 2 * day, 0.25},
		{"at or below the floor, salience stays", withFloor(exp, 0.3), 0.2, 10 * day, 0.2},
		{"a negative age (clock skew) changes nothing", exp, 0.7, -time.Hour, 0.7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.InDelta(t, tc.want, decay.At(tc.d, tc.base, tc.age), 1e-12)
		})
	}
}

// Current reads a record's stored salience as of its last reinforcement.
func TestCurrentDecaysFromLastReinforcement(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := memory.Record{Salience: 0.8, Lifecycle: memory.Lifecycle{
		Decay:            memory.Decay{Curve: memory.Exponential, HalfLifeSeconds: 7 * 86400},
		LastReinforcedAt: t0,
	}}
	require.Equal(t, 0.8, decay.Current(rec, t0))
	require.InDelta(t, 0.4, decay.Current(rec, t0.Add(7*day)), 1e-12)
	require.InDelta(t, 0.1, decay.Current(rec, t0.Add(21*day)), 1e-12)
}

// Every curve is monotonic: salience never rises with age (§15A.7).
func TestCurvesNeverRise(t *testing.T) {
	t.Parallel()
	for _, d := range []memory.Decay{
		{Curve: memory.Exponential, HalfLifeSeconds: 3600, MinSalience: 0.1},
		{Curve: memory.Linear, HalfLifeSeconds: 3600},
		{Curve: memory.Custom, HalfLifeSeconds: 1, Points: []memory.DecayPoint{{AgeSeconds: 0, Salience: 1}, {AgeSeconds: 600, Salience: 0.9}, {AgeSeconds: 7200, Salience: 0.9}, {AgeSeconds: 9000, Salience: 0}}},
	} {
		prev := decay.At(d, 1, 0)
		for a := time.Duration(0); a < 4*time.Hour; a += time.Minute {
			s := decay.At(d, 1, a)
			require.LessOrEqual(t, s, prev, "%s at %s", d.Curve, a)
			prev = s
		}
	}
}
