package consolidate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/memory"
)

// A procedure drifts on failures in a row since its last success, or on a
// smoothed success rate under the threshold once the window is full.
func TestDrift(t *testing.T) {
	t.Parallel()
	l := Lifecycle{}.withDefaults()
	last := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	drift := func(recent string) string {
		return l.Rule().Verdict(memory.Performance{Successes: 3, Failures: 3, LastSuccessAt: &last, Recent: recent})
	}
	require.Equal(t, "3 failures in a row since its last success on 2026-11-01T12:00:00Z (3 successes, 3 failures in all): retracted after drift",
		drift("sssfff"))
	require.Empty(t, drift("sssff"))
	require.Empty(t, drift("fsfsfsfsfs"), "rate ½")
	require.Equal(t, "smoothed success rate 0.25 over its last 10 uses is under 0.30: retracted after drift",
		drift("sssffsffffsff"))
	require.Empty(t, drift("fsffsff"), "the window is not full")
	require.True(t, Probationary(1, l.ProbationUses))
	require.False(t, Probationary(2, l.ProbationUses))
}
