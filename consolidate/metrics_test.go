package consolidate_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// metricValue is the value of a counter or gauge in the test's registry,
// summed over the series whose labels include labels.
func (e *env) metricValue(name string, labels map[string]string) float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	require.NoError(e.t, err)
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			if c := m.GetCounter(); c != nil {
				total += c.GetValue()
			} else {
				total += m.GetGauge().GetValue()
			}
		}
	}
	return total
}

// Consolidation's metrics follow what it learns (issue 11, item 8): a
// procedure's and a plan's later uses count as uses and reuse, and after a
// pass the watermark is at the newest closed episode, no lag.
func TestMetricsFollowLearning(t *testing.T) {
	t.Parallel()
	e := setup(t)
	steps := func(dir string) []map[string]any { return []map[string]any{gitInit(dir), npmTest} }
	e.post(setupEpisode("s1", steps("/w/a"), "success"))
	e.post(setupEpisode("s2", steps("/w/b"), "success"))
	e.consolidate()
	require.Len(t, e.plans(), 1)
	require.Zero(t, e.metricValue("engram_plan_reuse_total", nil))
	require.Zero(t, e.metricValue("engram_consolidation_lag_seconds", nil))
	require.Positive(t, e.metricValue("engram_consolidation_watermark_timestamp_seconds", nil))

	e.post(setupEpisode("s3", steps("/w/c"), "success"))
	e.consolidate()
	require.Equal(t, 1.0, e.metricValue("engram_plan_reuse_total", nil), "the third episode followed the plan learned from the first two")

	fix := []map[string]any{step("edit", map[string]any{"path": "/src/a/go.mod"}, "ok"), buildOK}
	for i, p := range []string{"/src/a", "/src/b"} {
		fix[0] = step("edit", map[string]any{"path": p + "/go.mod"}, "ok")
		e.post(episode("f"+string(rune('0'+i)), map[string]any{"os": "linux"}, "undefined: modA in "+p+"/main.go:3:1", fix, "success"))
	}
	e.consolidate()
	require.NotEmpty(t, e.procedures())
	// The setup episodes were a procedure too ("Set up the project"): the
	// third was its first use.
	used := e.metricValue("engram_procedure_uses_total", map[string]string{"outcome": "success"})
	require.Equal(t, 1.0, used)
	fix[0] = step("edit", map[string]any{"path": "/src/c/go.mod"}, "ok")
	e.post(episode("f3", map[string]any{"os": "linux"}, "undefined: modA in /src/c/main.go:9:1", fix, "success"))
	e.consolidate()
	require.Equal(t, used+1, e.metricValue("engram_procedure_uses_total", map[string]string{"outcome": "success"}))
}
