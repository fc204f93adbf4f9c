package consolidate

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/store"
)

// An error reported by one tool's output while another call still waits
// for its own opens the problem; the output that arrives after pairs with
// nothing before the error and must not index the actions the error
// cleared (it panicked: a call's index outlived the reset).
func TestOutputAfterTheOpeningErrorPairsSafely(t *testing.T) {
	t.Parallel()
	ev := func(doc string) store.EpisodeEvent {
		return store.EpisodeEvent{ID: uuid.New(), Event: json.RawMessage(doc)}
	}
	evs := []store.EpisodeEvent{
		ev(`{"kind":"tool_call","tool":{"name":"shell","call_id":"c0","arguments":{"cmd":"make"}}}`),
		ev(`{"kind":"tool_call","tool":{"name":"shell","call_id":"c1","arguments":{"cmd":"ls"}}}`),
		ev(`{"kind":"tool_output","tool":{"name":"shell","call_id":"c0","result":"error: ld: cache mismatch"}}`),
		ev(`{"kind":"tool_output","tool":{"name":"shell","call_id":"c1","result":"a.o b.o"}}`),
		ev(`{"kind":"tool_call","tool":{"name":"shell","call_id":"c2","arguments":{"cmd":"rm -rf cache"}}}`),
		ev(`{"kind":"tool_output","tool":{"name":"shell","call_id":"c2","result":"ok"}}`),
	}
	var ep Episode
	require.NotPanics(t, func() { ep = readEpisode(store.ClosedEpisode{Outcome: "success"}, evs) })
	require.Equal(t, "error: ld: cache mismatch", ep.Trigger)
	require.Len(t, ep.Actions, 1)
	require.JSONEq(t, `"ok"`, string(ep.Actions[0].Result))
}
