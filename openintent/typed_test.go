package openintent_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/openintent"
)

// v1 calls engramd's own API with a bearer key.
func (e env) v1(t *testing.T, key, method, path string, body any) answer {
	t.Helper()
	return e.do(t, method, path, body, "Authorization", "Bearer "+key)
}

// retrieved is what POST /v1/retrieve answers for agent's task text,
// layer by layer: each item's record. (An agent's episodes are retrieved
// for its own tasks: their visibility is agent.)
func (e env) retrieved(t *testing.T, key, agent, text string) map[string][]map[string]any {
	t.Helper()
	res := e.v1(t, key, "POST", "/v1/retrieve", map[string]any{"task": map[string]any{"text": text, "agent_id": agent}})
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	var out struct {
		Layers []struct {
			Layer string `json:"layer"`
			Items []struct {
				Record map[string]any `json:"record"`
			} `json:"items"`
		} `json:"layers"`
	}
	require.NoError(t, json.Unmarshal(res.body, &out))
	layers := map[string][]map[string]any{}
	for _, l := range out.Layers {
		for _, it := range l.Items {
			layers[l.Layer] = append(layers[l.Layer], it.Record)
		}
	}
	return layers
}

func payloadOf(t *testing.T, rec map[string]any) map[string]any {
	t.Helper()
	p, ok := rec["payload"].(map[string]any)
	require.True(t, ok, "%v", rec)
	return p
}

// What an agent stores through OpenIntent is typed memory (issue 27): an
// episodic entry is an episode and a semantic entry a fact, found by
// /v1/retrieve in the episodic and semantic layers; an update is a new
// observation of the episode, a fact superseded by one with the new value;
// a deletion takes both with it.
func TestTypedMemory(t *testing.T) {
	t.Parallel()
	e := setup(t, openintent.Config{})
	res := e.sdk(t, executorKey, "a1", "POST", "/api/v1/memory", createBody("a1", "learned_patterns", "stripe_thursdays",
		map[string]any{"observation": "Stripe returns elevated 500 rates on Thursdays", "confidence": 0.85}, "episodic",
		map[string]any{"tags": []string{"stripe", "reliability"}}))
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	episodic := res.object(t)
	res = e.sdk(t, executorKey, "a1", "POST", "/api/v1/memory", createBody("a1", "company_policies", "charge_approval_threshold",
		map[string]any{"rule": "Charges exceeding 10000 USD require manager approval"}, "semantic", nil))
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	semantic := res.object(t)

	layers := e.retrieved(t, executorKey, "a1", "stripe elevated 500 rates thursdays")
	require.Len(t, layers["episodic"], 1, "%v", layers)
	episode := layers["episodic"][0]
	require.Equal(t, "a1", episode["agent_id"])
	require.Equal(t, "learned_patterns", episode["scope"])
	timeline := payloadOf(t, episode)["timeline"].([]any)
	require.Len(t, timeline, 1)
	require.Contains(t, timeline[0].(map[string]any)["summary"], "Stripe returns elevated 500 rates on Thursdays")
	require.Equal(t, episodic["id"], payloadOf(t, episode)["openintent"].(map[string]any)["entry_id"])
	require.Empty(t, layers["semantic"], "%v", layers)

	layers = e.retrieved(t, executorKey, "a1", "charge approval threshold manager")
	require.Len(t, layers["semantic"], 1, "%v", layers)
	fact := payloadOf(t, layers["semantic"][0])
	require.Equal(t, "company_policies/charge_approval_threshold", fact["subject"])
	require.Equal(t, openintent.FactPredicate, fact["predicate"])
	require.Equal(t, map[string]any{"rule": "Charges exceeding 10000 USD require manager approval"}, fact["object"])
	require.Equal(t, "company_policies", layers["semantic"][0]["scope"])

	// Updates: the episode gains an observation; the fact is superseded.
	res = e.sdk(t, executorKey, "a1", "PATCH", "/api/v1/memory/"+episodic["id"].(string),
		map[string]any{"value": map[string]any{"observation": "Stripe 500s on Thursdays stopped in March"}}, "If-Match", "1")
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	res = e.sdk(t, executorKey, "a1", "PATCH", "/api/v1/memory/"+semantic["id"].(string),
		map[string]any{"value": map[string]any{"rule": "Charges exceeding 5000 USD require manager approval"}}, "If-Match", "1")
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	require.Equal(t, 2.0, res.object(t)["version"])
	require.Equal(t, semantic["id"], res.object(t)["id"], "an entry keeps its id")

	layers = e.retrieved(t, executorKey, "a1", "stripe thursdays")
	require.Len(t, layers["episodic"], 1, "%v", layers)
	require.Len(t, payloadOf(t, layers["episodic"][0])["timeline"], 2)
	layers = e.retrieved(t, executorKey, "a1", "charge approval threshold manager")
	require.Len(t, layers["semantic"], 1, "only the fact in force: %v", layers)
	require.Equal(t, map[string]any{"rule": "Charges exceeding 5000 USD require manager approval"}, payloadOf(t, layers["semantic"][0])["object"])

	// The entries read as before.
	res = e.sdk(t, executorKey, "a1", "GET", "/api/v1/memory/"+semantic["id"].(string), nil)
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	requireEntry(t, res.object(t))
	require.Equal(t, map[string]any{"rule": "Charges exceeding 5000 USD require manager approval"}, res.object(t)["value"])

	// A deletion takes the episode and the fact with it.
	for _, id := range []string{episodic["id"].(string), semantic["id"].(string)} {
		res = e.sdk(t, executorKey, "a1", "DELETE", "/api/v1/memory/"+id, nil)
		require.Equal(t, http.StatusNoContent, res.status, "%s", res.body)
	}
	layers = e.retrieved(t, executorKey, "a1", "stripe thursdays charge approval threshold manager")
	require.Empty(t, layers["episodic"], "%v", layers)
	require.Empty(t, layers["semantic"], "%v", layers)
}

// A batch is one transaction of the write path (substrate RFC §15.7): an
// entry the write path refuses after others were accepted leaves nothing
// written — no entry created and deleted again, no version written back.
func TestBatchIsOneTransaction(t *testing.T) {
	t.Parallel()
	e := setup(t, openintent.Config{})
	res := e.sdk(t, acmeKey, "a1", "POST", "/api/v1/memory", createBody("a1", "ns", "kept", map[string]any{"n": 1}, "episodic", nil))
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	kept := res.object(t)
	history := func() int {
		t.Helper()
		res := e.v1(t, acmeKey, "GET", "/v1/records/"+kept["id"].(string)+"/history", nil)
		require.Equal(t, http.StatusOK, res.status, "%s", res.body)
		var h struct{ Versions []any }
		require.NoError(t, json.Unmarshal(res.body, &h))
		return len(h.Versions)
	}
	versions := history()

	// The last entry passes the adapter's checks (its value is under
	// 64 KiB) but not the write path's payload limit.
	big := map[string]any{"text": strings.Repeat("x", openintent.MaxValueBytes-100)}
	res = e.sdk(t, acmeKey, "a1", "POST", "/api/v1/memory/batch", map[string]any{"entries": []any{
		createBody("a1", "ns", "new", map[string]any{"n": 1}, "working", nil),
		map[string]any{"id": kept["id"], "version": 1, "value": map[string]any{"n": 2}},
		createBody("a1", "ns", "big", big, "semantic", nil),
	}})
	require.Equal(t, http.StatusBadRequest, res.status, "%s", res.body)
	refusal := res.object(t)

	res = e.sdk(t, acmeKey, "a1", "GET", "/api/v1/memory/"+kept["id"].(string), nil)
	require.Equal(t, 1.0, res.object(t)["version"], "%s", res.body)
	require.Equal(t, map[string]any{"n": 1.0}, res.object(t)["value"])
	require.Equal(t, versions, history(), "no version was written and written back")
	for _, status := range []string{"active", "deleted"} {
		res = e.v1(t, acmeKey, "GET", "/v1/records?type=working,semantic&status="+status, nil)
		require.Equal(t, http.StatusOK, res.status, "%s", res.body)
		require.NotContains(t, string(res.body), `"key":"new"`, "no entry was created and deleted again")
		require.NotContains(t, string(res.body), `"key":"big"`)
	}
	require.Contains(t, refusal["message"], "entries/2")
	require.Contains(t, refusal["message"], "nothing was written")
}

// A create whose key an entry holds is a key collision (KEY_EXISTS), a
// stale If-Match a version mismatch (VERSION_MISMATCH): SDK users tell
// them apart by the error code.
func TestKeyExistsAndVersionMismatch(t *testing.T) {
	t.Parallel()
	e := setup(t, openintent.Config{})
	body := createBody("a1", "ns", "k", map[string]any{"n": 1}, "working", nil)
	res := e.sdk(t, acmeKey, "a1", "POST", "/api/v1/memory", body)
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	entry := res.object(t)

	res = e.sdk(t, acmeKey, "a1", "POST", "/api/v1/memory", body)
	require.Equal(t, http.StatusConflict, res.status, "%s", res.body)
	dup := res.object(t)
	require.Equal(t, "KEY_EXISTS", dup["error"], "%s", res.body)
	require.Contains(t, dup["message"], `key "k" exists`)
	require.Equal(t, entry["id"], dup["current"].(map[string]any)["id"])

	res = e.sdk(t, acmeKey, "a1", "PATCH", "/api/v1/memory/"+entry["id"].(string), map[string]any{"value": map[string]any{"n": 2}}, "If-Match", "1")
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	res = e.sdk(t, acmeKey, "a1", "PATCH", "/api/v1/memory/"+entry["id"].(string), map[string]any{"value": map[string]any{"n": 3}}, "If-Match", "1")
	require.Equal(t, http.StatusConflict, res.status, "%s", res.body)
	stale := res.object(t)
	require.Equal(t, "VERSION_MISMATCH", stale["error"], "%s", res.body)
	require.Equal(t, 2.0, stale["current_version"])

	// In a batch too.
	res = e.sdk(t, acmeKey, "a1", "POST", "/api/v1/memory/batch", map[string]any{"entries": []any{
		map[string]any{"id": entry["id"], "version": 1, "value": map[string]any{"n": 4}},
	}})
	require.Equal(t, http.StatusConflict, res.status, "%s", res.body)
	require.Equal(t, "VERSION_MISMATCH", res.object(t)["error"])
}

// GET /.well-known/openintent.json is the discovery document the SDK's
// discover() reads: no key needed, JSON, the memory capability and where
// it is served.
func TestDiscovery(t *testing.T) {
	t.Parallel()
	e := setup(t, openintent.Config{EpisodicCapacity: 7})
	res, err := http.Get(e.url + "/.well-known/openintent.json")
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "application/json", res.Header.Get("Content-Type"))
	var d map[string]any
	require.NoError(t, json.NewDecoder(res.Body).Decode(&d))
	require.Equal(t, "OpenIntent Coordination Protocol", d["protocol"])
	require.NotEmpty(t, d["version"])
	require.Contains(t, d["capabilities"], "memory")
	require.Equal(t, "/api/v1/memory", d["endpoints"].(map[string]any)["memory"])
	memory := d["memory"].(map[string]any)
	require.Equal(t, []any{"working", "episodic", "semantic"}, memory["tiers"])
	require.Equal(t, 7.0, memory["episodic_capacity"])
	require.Equal(t, "/v1/retrieve", d["extensions"].(map[string]any)["retrieve"])
}

// ungrammatical finds "a" before a vowel: "a executor key".
var ungrammatical = regexp.MustCompile(`\ba [aeiouAEIOU]`)

// An agent's own key (executor) completes create → update → delete of its
// own entries in every tier; another agent's entries it may read but not
// change, and the refusal says so in a sentence.
func TestExecutorOwnEntries(t *testing.T) {
	t.Parallel()
	e := setup(t, openintent.Config{})
	for _, tier := range []string{"working", "episodic", "semantic"} {
		res := e.sdk(t, executorKey, "a1", "POST", "/api/v1/memory", createBody("a1", "ns."+tier, "k", map[string]any{"n": 1}, tier, nil))
		require.Equal(t, http.StatusCreated, res.status, "%s: %s", tier, res.body)
		id := res.object(t)["id"].(string)
		res = e.sdk(t, executorKey, "a1", "PATCH", "/api/v1/memory/"+id, map[string]any{"value": map[string]any{"n": 2}}, "If-Match", "1")
		require.Equal(t, http.StatusOK, res.status, "%s: %s", tier, res.body)
		res = e.sdk(t, executorKey, "a1", "DELETE", "/api/v1/memory/"+id, nil)
		require.Equal(t, http.StatusNoContent, res.status, "%s: %s", tier, res.body)
		res = e.sdk(t, executorKey, "a1", "GET", "/api/v1/memory/"+id, nil)
		require.Equal(t, http.StatusNotFound, res.status, "%s: %s", tier, res.body)
	}

	// Agent a2's entries, written with its own key.
	others := map[string]string{}
	for _, tier := range []string{"episodic", "semantic"} {
		res := e.sdk(t, executorA2Key, "a2", "POST", "/api/v1/memory", createBody("a2", "theirs", "k", map[string]any{"n": 1}, tier, nil))
		require.Equal(t, http.StatusCreated, res.status, "%s: %s", tier, res.body)
		others[tier] = res.object(t)["id"].(string)
	}
	// As itself, a1 may not change them; naming itself a2, its key still
	// may not.
	for tier, id := range others {
		for _, agent := range []string{"a1", "a2"} {
			res := e.sdk(t, executorKey, agent, "DELETE", "/api/v1/memory/"+id, nil)
			require.Equal(t, http.StatusForbidden, res.status, "%s as %s: %s", tier, agent, res.body)
			got := res.object(t)
			require.Equal(t, "ACCESS_DENIED", got["error"])
			require.NotRegexp(t, ungrammatical, got["message"], "%s as %s", tier, agent)
			res = e.sdk(t, executorKey, agent, "PATCH", "/api/v1/memory/"+id, map[string]any{"value": map[string]any{}}, "If-Match", "1")
			require.Equal(t, http.StatusForbidden, res.status, "%s as %s: %s", tier, agent, res.body)
			require.NotRegexp(t, ungrammatical, res.object(t)["message"], "%s as %s", tier, agent)
		}
		res := e.sdk(t, executorA2Key, "a2", "GET", "/api/v1/memory/"+id, nil)
		require.Equal(t, http.StatusOK, res.status, "%s: untouched: %s", tier, res.body)
		require.Equal(t, 1.0, res.object(t)["version"])
	}
}

// The SDK's wire sequence (TestPythonReplay's requests: create_memory,
// get_memory, list_memory, update_memory, a stale and a missing If-Match,
// a bad create, delete_memory) with an agent's own key, executor, as an
// agent built on the SDK runs — then discover(), as the SDK sends it.
func TestExecutorWireSequence(t *testing.T) {
	t.Parallel()
	e := setup(t, openintent.Config{})
	sdk := func(method, path string, body any, headers ...string) answer {
		t.Helper()
		return e.sdk(t, executorKey, "a1", method, path, body, headers...)
	}
	res := sdk("POST", "/api/v1/memory", map[string]any{"agent_id": "a1", "namespace": "research", "key": "competitors",
		"value": map[string]any{"competitors": []string{"Acme", "Globex"}}, "memory_type": "episodic", "tags": []string{"research", "2026"}})
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	created := res.object(t)
	requireEntry(t, created)
	id := created["id"].(string)
	res = sdk("GET", "/api/v1/memory/"+id, nil)
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	require.Equal(t, created, res.object(t))
	res = sdk("GET", "/api/v1/agents/a1/memory?namespace=research&memory_type=episodic&tags=research,2026&limit=50&offset=0", nil)
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	var listed []map[string]any
	require.NoError(t, json.Unmarshal(res.body, &listed))
	require.Len(t, listed, 1)
	require.Equal(t, id, listed[0]["id"])
	res = sdk("PATCH", "/api/v1/memory/"+id, map[string]any{"value": map[string]any{"competitors": []string{"Acme"}}}, "If-Match", "1")
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	require.Equal(t, 2.0, res.object(t)["version"])
	res = sdk("PATCH", "/api/v1/memory/"+id, map[string]any{"value": map[string]any{}}, "If-Match", "1")
	require.Equal(t, http.StatusConflict, res.status, "%s", res.body)
	require.Equal(t, "VERSION_MISMATCH", res.object(t)["error"])
	require.Equal(t, 2.0, res.object(t)["current_version"])
	require.NotContains(t, strings.ToLower(string(res.body)), "lease")
	res = sdk("PATCH", "/api/v1/memory/"+id, map[string]any{"value": map[string]any{}})
	require.Equal(t, http.StatusPreconditionRequired, res.status, "%s", res.body)
	require.NotEmpty(t, res.object(t)["message"])
	res = sdk("POST", "/api/v1/memory", map[string]any{"agent_id": "a1", "key": "k", "value": map[string]any{}})
	require.Equal(t, http.StatusBadRequest, res.status, "%s", res.body)
	require.NotEmpty(t, res.object(t)["errors"])
	res = sdk("DELETE", "/api/v1/memory/"+id, nil)
	require.Equal(t, http.StatusNoContent, res.status, "%s", res.body)
	res = sdk("GET", "/api/v1/memory/"+id, nil)
	require.Equal(t, http.StatusNotFound, res.status, "%s", res.body)
	require.Equal(t, "ENTRY_NOT_FOUND", res.object(t)["error"])
	res = sdk("GET", "/api/v1/agents/a1/memory?namespace=research", nil)
	require.Equal(t, "[]\n", string(res.body))

	// discover(): the SDK's client sends its headers on this GET too.
	res = sdk("GET", "/.well-known/openintent.json", nil)
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	require.Contains(t, res.object(t)["capabilities"], "memory")
}
