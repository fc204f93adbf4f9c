package server

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The write acceptance rate scores 1 inside its target range 0.4–0.8 and
// 0.5 at each of the spec's alert thresholds, 0.95 and 0.3 (write-path RFC
// §12.12.3).
func TestAcceptanceScore(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ v, want float64 }{
		{0.4, 1}, {0.6, 1}, {0.8, 1},
		{0.95, 0.5}, {0.875, 0.75}, {1, 1.0 / 3},
		{0.3, 0.5}, {0.35, 0.75}, {0.2, 0}, {0, 0},
	} {
		require.InDelta(t, c.want, acceptanceScore(c.v), 1e-9, "%v", c.v)
	}
}
