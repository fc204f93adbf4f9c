package memory_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/memory"
)

// A custom curve that names no points (§15A.3 requires none) decays by its
// half-life as the exponential curve does, rather than never.
func TestCustomCurveWithoutPointsDecays(t *testing.T) {
	t.Parallel()
	d := memory.Decay{Curve: memory.Custom, HalfLifeSeconds: 3600}
	require.InDelta(t, 0.5, d.Retention(time.Hour), 1e-9)
	d.Points = []memory.DecayPoint{{AgeSeconds: 7200, Salience: 0.25}}
	require.InDelta(t, 0.625, d.Retention(time.Hour), 1e-9, "points, when named, shape the curve")
}
