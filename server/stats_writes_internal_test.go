package server

import (
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// The quantile estimate interpolates within the bucket that holds the
// rank, as Prometheus' histogram_quantile does: 10 observations at most 1,
// 20 in (1, 2], 10 in (2, 4] and 10 above 4.
func TestBucketQuantile(t *testing.T) {
	t.Parallel()
	bounds := []float64{1, 2, 4}
	cumulative := []uint64{10, 30, 40}
	for _, c := range []struct{ q, want float64 }{
		{0.1, 0.5},   // rank 5 of the first bucket's 10, from 0 to 1
		{0.2, 1},     // rank 10: the first bucket's upper bound
		{0.5, 1.75},  // rank 25: the 15th of 20 in (1, 2]
		{0.7, 3},     // rank 35: the 5th of 10 in (2, 4]
		{0.8, 4},     // rank 40: the last finite bound
		{0.95, 4},    // in the +Inf bucket: the last finite bound
		{1, 4},       // likewise
		{0.01, 0.05}, // rank 0.5
	} {
		require.InDelta(t, c.want, bucketQuantile(c.q, bounds, cumulative, 50), 1e-9, "q=%v", c.q)
	}
	require.True(t, math.IsNaN(bucketQuantile(0.5, bounds, []uint64{0, 0, 0}, 0)), "no observation")
	require.True(t, math.IsNaN(bucketQuantile(0.5, nil, nil, 3)), "no finite bucket")
	require.Equal(t, -1.0, bucketQuantile(0.5, []float64{-1, 1}, []uint64{5, 6}, 6), "a first bound at or below 0 is the answer")

	// The same buckets as a client histogram, read back from a registry.
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gate_seconds", Buckets: bounds}, []string{"gate"})
	reg.MustRegister(h)
	for v, n := range map[float64]int{0.5: 10, 1.5: 20, 3: 10, 10: 10} {
		for range n {
			h.WithLabelValues("dedup").Observe(v)
		}
	}
	h.WithLabelValues("schema")
	mfs, err := reg.Gather()
	require.NoError(t, err)
	gates := gateLatencies(mfs[0])
	require.Len(t, gates, 1, "a gate with no observation is left out")
	g := gates[0]
	require.Equal(t, "dedup", g.Gate)
	require.Equal(t, int64(50), g.Count)
	require.InDelta(t, (5+30+30+100)/50.0, g.MeanSeconds, 1e-9)
	require.InDelta(t, 1.75, g.P50Seconds, 1e-9)
	require.InDelta(t, 4, g.P95Seconds, 1e-9)
	require.InDelta(t, 4, g.P99Seconds, 1e-9)
}
