package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/client"
	"github.com/engram-dev/engram/memory"
)

func workingBody(agent, scope string, tags []string, entry map[string]any) map[string]any {
	p := map[string]any{"kind": "working", "thread_id": "t-" + agent, "state": "executing"}
	if entry != nil {
		p["openintent"] = entry
	}
	return map[string]any{"type": "working", "agent_id": agent, "thread_id": "t-" + agent, "scope": scope, "tags": tags, "payload": p}
}

// GET /v1/records selects by agent, thread, scope prefix, any of some tags and
// update time, alone and together, through the Go client too.
func TestListRecordFilters(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c, err := client.New(client.Config{URL: e.url, Key: acmeKey})
	require.NoError(t, err)
	ctx := t.Context()
	made := map[string]*memory.Record{}
	for _, r := range []struct {
		name, agent, scope string
		tags               []string
	}{
		{"a", "agent-1", "billing.invoices", []string{"x"}},
		{"b", "agent-1", "billing.refunds", []string{"y"}},
		{"c", "agent-2", "billing.invoices", []string{"z"}},
		{"d", "agent-2", "support", []string{"x", "z"}},
	} {
		rec, err := c.CreateRecord(ctx, workingBody(r.agent, r.scope, r.tags, nil), "")
		require.NoError(t, err)
		made[r.name] = rec
	}
	names := func(f client.RecordFilter) []string {
		t.Helper()
		page, err := c.ListRecords(ctx, f)
		require.NoError(t, err)
		var out []string
		for _, rec := range page.Records {
			for n, m := range made {
				if m.ID == rec.ID {
					out = append(out, n)
				}
			}
		}
		return out
	}
	require.Equal(t, []string{"a", "b"}, names(client.RecordFilter{AgentID: "agent-1"}))
	require.Equal(t, []string{"a", "b", "c"}, names(client.RecordFilter{ScopePrefix: "billing."}))
	require.Equal(t, []string{"b", "c", "d"}, names(client.RecordFilter{AnyTags: []string{"y", "z"}}))
	require.Equal(t, []string{"c"}, names(client.RecordFilter{AgentID: "agent-2", ScopePrefix: "bill", AnyTags: []string{"z"}}))
	require.Equal(t, []string{"b", "c", "d"}, names(client.RecordFilter{UpdatedAfter: made["a"].UpdatedAt}))
	require.Equal(t, []string{"a"}, names(client.RecordFilter{UpdatedBefore: made["b"].UpdatedAt}))
	require.Empty(t, names(client.RecordFilter{AgentID: "agent-3"}))
	require.Equal(t, []string{"c", "d"}, names(client.RecordFilter{ThreadID: "t-agent-2"}))
	// As query parameters, comma-separated.
	var page struct{ Records []memory.Record }
	res := e.do("GET", "/v1/records?tag_any=y,x&agent_id=agent-1", acmeKey, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	res.decode(t, &page)
	require.Len(t, page.Records, 2)
	// Another tenant's key sees none of them.
	res = e.do("GET", "/v1/records?agent_id=agent-1", otherKey, nil)
	res.decode(t, &page)
	require.Empty(t, page.Records)

	res = e.do("GET", "/v1/records?updated_after=yesterday", acmeKey, nil)
	require.Equal(t, http.StatusBadRequest, res.status)
	require.Equal(t, "updated_after", res.problem(t).Errors[0].Parameter)
}

// An OpenIntent entry's (agent, namespace, key) is unique, in the
// database (migration 024): a second record holding it is a 409
// entry-key-taken; a semantic entry's (namespace, key) whatever its
// agent; a deleted one frees it.
func TestEntryKeyUnique(t *testing.T) {
	t.Parallel()
	e := setup(t)
	entry := func(agent, tier string) map[string]any {
		return map[string]any{"agent_id": agent, "namespace": "ns", "key": "k", "memory_type": tier, "value": map[string]any{}}
	}
	res := e.do("POST", "/v1/records", acmeKey, workingBody("a1", "ns", nil, entry("a1", "episodic")))
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	var first memory.Record
	res.decode(t, &first)
	res = e.do("POST", "/v1/records", acmeKey, workingBody("a1", "ns", []string{"other"}, entry("a1", "episodic")))
	require.Equal(t, http.StatusConflict, res.status, string(res.body))
	require.Equal(t, "urn:engram:problem:entry-key-taken", res.problem(t).Type)
	res = e.do("POST", "/v1/records", acmeKey, workingBody("a2", "ns", nil, entry("a2", "episodic")))
	require.Equal(t, http.StatusCreated, res.status, "another agent: %s", res.body)
	res = e.do("POST", "/v1/records", otherKey, workingBody("a1", "ns", nil, entry("a1", "episodic")))
	require.Equal(t, http.StatusCreated, res.status, "another tenant: %s", res.body)

	res = e.do("POST", "/v1/records", acmeKey, workingBody("a1", "ns", nil, entry("a1", "semantic")))
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	res = e.do("POST", "/v1/records", acmeKey, workingBody("a2", "ns", nil, entry("a2", "semantic")))
	require.Equal(t, http.StatusConflict, res.status, "semantic keys belong to no agent: %s", res.body)

	require.Equal(t, http.StatusOK, e.do("DELETE", "/v1/records/"+first.ID.String(), acmeKey, nil).status)
	res = e.do("POST", "/v1/records", acmeKey, workingBody("a1", "ns", nil, entry("a1", "episodic")))
	require.Equal(t, http.StatusCreated, res.status, "a deleted entry frees its key: %s", res.body)
}
