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

// In an episode whose runtime named the task (an intent tag), a call that
// failed is the problem only when the episode fixed it — ran it again,
// after other steps, and it worked; a wrong try that fails with a generic
// message and is never run again is part of the work, and the episode
// stays filed under its intent.
func TestAFailedTryIsNotTheTasksProblem(t *testing.T) {
	t.Parallel()
	ev := func(doc string) store.EpisodeEvent {
		return store.EpisodeEvent{ID: uuid.New(), Event: json.RawMessage(doc)}
	}
	call := func(id, cmd string) store.EpisodeEvent {
		return ev(`{"kind":"tool_call","tags":["intent:release_billing"],"tool":{"name":"shell","call_id":"` + id + `","arguments":{"command":"` + cmd + `"}}}`)
	}
	output := func(id, result string) store.EpisodeEvent {
		return ev(`{"kind":"tool_output","tool":{"name":"shell","call_id":"` + id + `","result":` + result + `}}`)
	}
	input := ev(`{"kind":"user_input","text":"release the billing service","tags":["intent:release_billing"]}`)
	wrong := []store.EpisodeEvent{input,
		call("c0", "npm test"), output("c0", `{"exit_code":1,"stderr":"error: that did not help"}`),
		call("c1", "make test"), output("c1", `{"exit_code":0}`),
		call("c2", "make dist"), output("c2", `{"exit_code":0}`),
	}
	ep := readEpisode(store.ClosedEpisode{Outcome: "success"}, wrong)
	require.Empty(t, ep.Trigger)
	require.Equal(t, "intent:release_billing", ep.Signature)
	require.Len(t, ep.Actions, 3, "the wrong try is one of the task's actions")
	require.Equal(t, []string{"error: that did not help"}, ep.Errors)

	flaky := []store.EpisodeEvent{input,
		call("c0", "make test"), output("c0", `{"exit_code":75,"stderr":"error: connection reset"}`),
		call("c1", "make test"), output("c1", `{"exit_code":0}`),
	}
	ep = readEpisode(store.ClosedEpisode{Outcome: "success"}, flaky)
	require.Equal(t, "intent:release_billing", ep.Signature, "run again at once: a flaky step, not a problem")

	fixed := []store.EpisodeEvent{input,
		call("c0", "make dist"), output("c0", `{"exit_code":2,"stderr":"ld: cache mismatch in /srv/a/obj.o"}`),
		call("c1", "rm -rf /srv/a/cache"), output("c1", `{"exit_code":0}`),
		call("c2", "make dist"), output("c2", `{"exit_code":0}`),
	}
	ep = readEpisode(store.ClosedEpisode{Outcome: "success"}, fixed)
	require.Equal(t, "ld: cache mismatch in /srv/a/obj.o", ep.Trigger, "fixed: the problem the steps between solved")
	require.Len(t, ep.Actions, 2)
}
