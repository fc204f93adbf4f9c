package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/memory"
)

func episode(summary string) map[string]any {
	return map[string]any{"type": "episodic", "payload": map[string]any{"kind": "episodic", "timeline": []any{
		map[string]any{"t": "2026-01-02T03:04:05Z", "event_kind": "observation", "ref": "evt://1", "summary": summary}}}}
}

// A write retried with its Idempotency-Key is made once (write-path RFC
// §12.1.6–12.1.7; issue 28): the retry is answered with the first result,
// marked replayed, and creates no second record. The same key with
// another body is refused; a refused request leaves its key free; another
// tenant's key of the same name is its own.
func TestRetriedWriteWithTheSameKeyCreatesOneRecord(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const key = "7f0c4b9e-retry-1"

	first := e.do("POST", "/v1/records", acmeKey, episode("the build failed"), "Idempotency-Key", key)
	require.Equal(t, http.StatusCreated, first.status, string(first.body))
	require.Empty(t, first.header.Get("Idempotent-Replayed"))
	var rec memory.Record
	first.decode(t, &rec)

	again := e.do("POST", "/v1/records", acmeKey, episode("the build failed"), "Idempotency-Key", key)
	require.Equal(t, http.StatusCreated, again.status, string(again.body))
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	require.Equal(t, first.header.Get("Location"), again.header.Get("Location"))
	require.Equal(t, first.header.Get("Engram-Write-Outcome"), again.header.Get("Engram-Write-Outcome"))
	require.JSONEq(t, string(first.body), string(again.body))
	require.Equal(t, 1, e.count("SELECT count(*) FROM records"), "one record for the write and its retry")

	// The same key for another write is refused, naming the header.
	res := e.do("POST", "/v1/records", acmeKey, episode("the build passed"), "Idempotency-Key", key)
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	p := res.problem(t)
	require.Equal(t, "urn:engram:problem:idempotency-key-reused", p.Type)
	require.Equal(t, "Idempotency-Key", p.Errors[0].Header)
	require.Equal(t, 1, e.count("SELECT count(*) FROM records"))

	// Without a key, a retried episode is another episode.
	require.Equal(t, http.StatusCreated, e.do("POST", "/v1/records", acmeKey, episode("the build failed")).status)
	require.Equal(t, 2, e.count("SELECT count(*) FROM records"))

	// Another tenant's key of the same name is its own.
	res = e.do("POST", "/v1/records", otherKey, episode("the build failed"), "Idempotency-Key", key)
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	require.Empty(t, res.header.Get("Idempotent-Replayed"))

	// A refused write keeps nothing under its key: corrected, it is made.
	bad := episode("x")
	bad["created_at"] = "2999-01-01T00:00:00Z"
	res = e.do("POST", "/v1/records", acmeKey, bad, "Idempotency-Key", "retry-2")
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	res = e.do("POST", "/v1/records", acmeKey, episode("x"), "Idempotency-Key", "retry-2")
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
}

// Every write route takes an Idempotency-Key: a working-memory update
// retried with its key is one revision, not two (the second would be
// refused as a stale version without it).
func TestIdempotencyKeyOnEveryWriteRoute(t *testing.T) {
	t.Parallel()
	e := setup(t)
	res := e.do("POST", "/v1/records", acmeKey, working(nil))
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	var rec memory.Record
	res.decode(t, &rec)
	update := map[string]any{"version": 1, "payload": map[string]any{"kind": "working", "thread_id": "t1", "state": "executing"}}
	first := e.do("PATCH", "/v1/records/"+rec.ID.String(), acmeKey, update, "Idempotency-Key", "patch-1")
	require.Equal(t, http.StatusOK, first.status, string(first.body))
	again := e.do("PATCH", "/v1/records/"+rec.ID.String(), acmeKey, update, "Idempotency-Key", "patch-1")
	require.Equal(t, http.StatusOK, again.status, string(again.body))
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	require.Equal(t, 2, e.count("SELECT max(version) FROM records"), "one revision")

	res = e.do("DELETE", "/v1/records/"+rec.ID.String(), acmeKey, nil, "Idempotency-Key", "delete-1")
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	res = e.do("DELETE", "/v1/records/"+rec.ID.String(), acmeKey, nil, "Idempotency-Key", "delete-1")
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Equal(t, "true", res.header.Get("Idempotent-Replayed"))

	for name, c := range map[string]struct {
		method, path, key string
	}{
		"a read":      {"GET", "/v1/records", "read-1"},
		"too long":    {"POST", "/v1/records", strings.Repeat("k", 256)},
		"not ASCII":   {"POST", "/v1/records", "clé"},
		"on a stream": {"POST", "/v1/events:stream", "stream-1"},
	} {
		res := e.do(c.method, c.path, acmeKey, nil, "Idempotency-Key", c.key)
		require.Equal(t, http.StatusBadRequest, res.status, "%s: %s", name, res.body)
		require.Equal(t, "Idempotency-Key", res.problem(t).Errors[0].Header, name)
	}
}
