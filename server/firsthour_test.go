package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/retrieve"
)

// recall asks for what helps with text, with the trust options given (none
// when nil), and returns the episodes of the answer and the withheld count.
func (e *ingestEnv) recall(text string, trust map[string]any) ([]memory.Record, int) {
	e.t.Helper()
	body := map[string]any{"task": map[string]any{"text": text}}
	if trust != nil {
		body["trust"] = trust
	}
	res := e.do("POST", "/v1/retrieve", acmeKey, body)
	require.Equal(e.t, http.StatusOK, res.status, string(res.body))
	var out retrieve.Result
	res.decode(e.t, &out)
	var eps []memory.Record
	for _, l := range out.Layers {
		if l.Name == retrieve.LayerEpisodic {
			for _, it := range l.Items {
				eps = append(eps, it.Record)
			}
		}
	}
	return eps, out.Withheld
}

func (e *ingestEnv) post(events ...map[string]any) {
	e.t.Helper()
	res := e.do("POST", "/v1/events", acmeKey, events)
	require.Equal(e.t, http.StatusAccepted, res.status, string(res.body))
	e.drain()
}

// A running task's events are found by their words at once, in an open
// episode as in a closed one, whatever batch they came in (issue 9, item 1);
// an event is matched on its full text, not its 240-byte summary, up to
// [memory.MaxEventSearchBytes], and its tags reach its episode (item 2).
func TestRunningTaskIsFoundByItsWords(t *testing.T) {
	t.Parallel()
	e := setupFull(t)
	long := strings.Repeat("padding words about nothing in particular ", 50) // 2,100 bytes
	e.post(
		event("user_input", "t1", map[string]any{"text": "deploy the payments service", "tags": []string{"project:payments"}}),
		event("tool_call", "t1", map[string]any{"tool": map[string]any{"name": "kubectl", "arguments": map[string]any{"namespace": "zanzibar", "replicas": 3}}}),
	)
	found := func(text string) memory.Record {
		t.Helper()
		eps, withheld := e.recall(text, nil)
		require.Zero(t, withheld, "the tenant's own key sees its own agent's events")
		require.Len(t, eps, 1, "recall %q", text)
		return eps[0]
	}
	ep := found("zanzibar")
	require.Contains(t, ep.Tags, "project:payments")

	// A later batch of the same open episode.
	e.post(
		event("tool_output", "t1", map[string]any{"tool": map[string]any{"name": "kubectl", "result": "error: quokka admission webhook denied"}, "tags": []string{"project:payments", "env:prod"}}),
		event("observation", "t1", map[string]any{"text": long + " the marmoset replica is lagging"}),
		event("observation", "t1", map[string]any{"text": strings.Repeat("x ", memory.MaxEventSearchBytes/2) + " platypus"}),
	)
	require.Equal(t, ep.ID, found("quokka webhook").ID)
	require.Equal(t, ep.ID, found("marmoset lagging").ID, "words past the 240-byte summary")
	ep = found("zanzibar")
	require.Subset(t, ep.Tags, []string{"project:payments", "env:prod"})
	require.Equal(t, 1, strings.Count(strings.Join(ep.Tags, " "), "project:payments"), "tags are carried once")
	eps, _ := e.recall("platypus", nil)
	require.Empty(t, eps, "words past the documented limit of an event are not indexed")

	// Closed with an outcome, every word is still there.
	e.post(event("outcome", "t1", map[string]any{"outcome": map[string]any{"status": "success", "summary": "rolled out"}}))
	for _, q := range []string{"zanzibar", "quokka", "marmoset", "rolled out"} {
		require.Equal(t, ep.ID, found(q).ID, q)
	}
	got := e.do("GET", "/v1/records/"+ep.ID.String(), acmeKey, nil)
	require.Equal(t, http.StatusOK, got.status)
	var rec memory.Record
	got.decode(t, &rec)
	require.Equal(t, memory.Active, rec.Status)
}

// An episode's tags are bounded: events may bring many, the episode keeps
// the first [memory.MaxEpisodeTags].
func TestEpisodeTagsAreBounded(t *testing.T) {
	t.Parallel()
	e := setupFull(t)
	var evs []map[string]any
	for i := range 3 {
		tags := make([]string, 60)
		for j := range tags {
			tags[j] = fmt.Sprintf("t%d-%d", i, j)
		}
		evs = append(evs, event("observation", "t1", map[string]any{"text": "the capybara is here", "tags": tags}))
	}
	e.post(evs...)
	eps, _ := e.recall("capybara", nil)
	require.Len(t, eps, 1)
	require.Len(t, eps[0].Tags, memory.MaxEpisodeTags)
	require.Contains(t, eps[0].Tags, "thread:t1")
}

// What a tenant's authenticated agents write at the default sensitivity is
// retrievable by the same tenant with no trust options; a secret still
// raises the sensitivity beyond it, and an unauthenticated caller stays at
// public (issue 9, item 3).
func TestDefaultsLetATenantRetrieveItsOwnEvents(t *testing.T) {
	t.Parallel()
	e := setupFull(t)
	e.post(
		event("user_input", "chat", map[string]any{"text": "my flight to Lisbon is on Tuesday"}),
		event("observation", "ops", map[string]any{"text": "the Lisbon mirror is slow"}),
		event("observation", "keys", map[string]any{"text": "Lisbon deploy key AKIAIOSFODNN7EXAMPLE"}),
	)
	eps, withheld := e.recall("Lisbon", nil)
	var threads []string
	for _, ep := range eps {
		threads = append(threads, ep.ThreadID)
	}
	require.ElementsMatch(t, []string{"chat", "ops"}, threads)
	require.Equal(t, 1, withheld, "the episode that held a secret is withheld")

	eps, withheld = e.recall("Lisbon", map[string]any{"authenticated": false})
	require.Empty(t, eps)
	require.Equal(t, 3, withheld)
}
