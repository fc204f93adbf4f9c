package eval

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// curve.json holds each agent's curve with the chart's points, what the
// axes are, and how and when the run was made; it reads back as written.
func TestCurvesJSON(t *testing.T) {
	t.Parallel()
	r := newRun(t)
	made := time.Date(2026, 11, 26, 3, 0, 0, 0, time.FixedZone("CET", 3600))
	c, err := NewCurves([]Report{r.engram, r.raw, r.none}, "engram-eval run --seed 12", made)
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, c.WriteJSON(&b))

	var doc map[string]any
	require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
	require.Equal(t, "engram-eval run --seed 12", doc["command"])
	require.Equal(t, "2026-11-26T02:00:00Z", doc["made"])
	require.Equal(t, "episode", doc["x"])
	require.Equal(t, "success rate", doc["y"])
	require.EqualValues(t, 3, doc["window"])
	require.EqualValues(t, 4, doc["drift_at"])
	require.EqualValues(t, 8, doc["episodes"])
	require.EqualValues(t, 2, doc["deployment"])

	var back Curves
	require.NoError(t, json.Unmarshal(b.Bytes(), &back))
	require.Len(t, back.Agents, 3)
	for i, rep := range []Report{r.engram, r.raw, r.none} {
		require.Equal(t, rep.Agent, back.Agents[i].Agent)
		require.Equal(t, PhaseCurve(rep), back.Agents[i].Points, rep.Agent)
	}
	// Windows of 3 restart at the drift (4) and at deployment (8).
	require.Equal(t, []Point{{0, 3, 2.0 / 3}, {3, 4, 1}, {4, 7, 2.0 / 3}, {7, 8, 1}, {8, 10, 1}}, back.Agents[0].Points)
}

func TestCurvesRefuses(t *testing.T) {
	t.Parallel()
	_, err := NewCurves(nil, "", time.Now())
	require.Error(t, err)
	r := newRun(t)
	other := r.raw
	other.Config.Seed++
	_, err = NewCurves([]Report{r.engram, other}, "", time.Now())
	require.ErrorContains(t, err, "another configuration")
}
