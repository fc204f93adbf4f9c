package consolidate_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/consolidate"
	"github.com/engram-dev/engram/revise"
)

// learnedState is what a tenant has learned, for comparing two databases:
// each live procedure and plan by its key tag, with what it says and how
// strongly. What depends on when the events arrived — the times of a
// procedure's last success and failure, a plan's latency — is left out, as
// the two databases received the same episodes at other times.
func (e *env) learnedState() map[string]string {
	e.t.Helper()
	out := map[string]string{}
	for _, r := range append(e.procedures(), e.plans()...) {
		var key string
		for _, tag := range r.Tags {
			if strings.HasPrefix(tag, "procedure:") || strings.HasPrefix(tag, "plan:") {
				key = tag
			}
		}
		var p map[string]any
		require.NoError(e.t, json.Unmarshal(r.Payload, &p))
		if perf, ok := p["performance"].(map[string]any); ok {
			delete(perf, "last_success_at")
			delete(perf, "last_failure_at")
		}
		if m, ok := p["metrics"].(map[string]any); ok {
			delete(m, "avg_latency_ms")
		}
		b, err := json.Marshal(map[string]any{"status": r.Status, "payload": p, "confidence": r.Confidence,
			"sensitivity": r.Sensitivity, "sources": len(r.Provenance.Sources)})
		require.NoError(e.t, err)
		require.NotContains(e.t, out, key)
		out[key] = string(b)
	}
	return out
}

// A pass after new episodes learns what a full pass over all of them
// learns: the procedures and plans of its incremental passes are those of
// one pass over the same episodes in another database, and a full pass
// over them from an empty watermark changes none of them. When the new
// episodes push old ones out of the window a pass regroups, only the
// latter holds: a procedure counts the uses it saw before they left the
// window (lifecycle.go), which a pass over another database never saw,
// and which of the episodes closed at one instant fall out of the window
// is theirs to decide.
func TestIncrementalPassLearnsWhatAFullPassLearns(t *testing.T) {
	t.Parallel()
	for name, maxEpisodes := range map[string]int{"every episode": 0, "a window of 20": 20} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const triggers, first, all = 3, 12, 33 // episodes 27–29 fail
			cfg := consolidate.Config{MaxEpisodes: maxEpisodes}
			post := func(e *env, from, to int) {
				var evs []map[string]any
				for i := from; i < to; i++ {
					evs = append(evs, benchEpisode(i, triggers)...)
				}
				e.post(evs)
			}

			inc := setupWith(t, revise.Gates{}, cfg)
			post(inc, 0, first)
			counts := inc.consolidate()
			require.Equal(t, int64(triggers), counts["competence_created"], counts)
			post(inc, first, all)
			counts = inc.consolidate()
			require.Equal(t, int64(all-first), counts["episodes"], "the second pass reads only the new episodes")
			require.Positive(t, counts["competence_revised"], counts)
			learned := inc.learnedState()

			if maxEpisodes == 0 {
				full := setupWith(t, revise.Gates{}, cfg)
				post(full, 0, all)
				full.consolidate()
				require.Equal(t, full.learnedState(), learned)
			}

			inc.run.cursor = nil
			counts = inc.consolidate()
			require.Equal(t, int64(all), counts["episodes"])
			for k, n := range counts {
				if strings.HasPrefix(k, "competence_") || strings.HasPrefix(k, "plan_") {
					require.True(t, strings.HasSuffix(k, "_unchanged"), "a full pass after the incremental ones wrote %s: %v", k, counts)
					require.Positive(t, n)
				}
			}
			require.Equal(t, learned, inc.learnedState())
		})
	}
}
