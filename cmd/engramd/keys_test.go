package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/logtest"
	"github.com/engram-dev/engram/internal/pgtest"
)

// A key revoked through one daemon fails at once on another sharing the
// database (write-path RFC §12.8.2): keys kept in the database are looked
// up per request, with nothing cached to go stale.
func TestRevokedKeyFailsAtOnceOnEveryDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs two daemons")
	}
	t.Parallel()
	db := pgtest.NewSchema(t)
	bin := buildEngramd(t)
	var log logtest.Buffer
	a := startWithYAML(t, bin, db, "log_level: warn\n", &log)
	b := startWithYAML(t, bin, db, "log_level: warn\n", &log)

	call := func(d *daemon, method, path, key, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+d.addr+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		out, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(out)
	}

	status, body := call(a, "POST", "/v1/keys", opsKey, `{"name": "agent-9", "tenant": "acme", "role": "executor", "agent_id": "agent-9"}`)
	require.Equal(t, http.StatusCreated, status, body)
	var made struct{ Secret string }
	require.NoError(t, json.Unmarshal([]byte(body), &made))

	working := `{"type": "working", "payload": {"kind": "working", "thread_id": "t1", "state": "executing"}}`
	for _, d := range []*daemon{a, b} {
		status, body = call(d, "POST", "/v1/records", made.Secret, working)
		require.Equal(t, http.StatusCreated, status, "a key made through one daemon works on every one: %s", body)
	}

	status, body = call(a, "POST", "/v1/keys/agent-9:revoke", opsKey, "")
	require.Equal(t, http.StatusOK, status, body)
	for _, d := range []*daemon{b, a} {
		status, body = call(d, "GET", "/v1/records", made.Secret, "")
		require.Equal(t, http.StatusUnauthorized, status, "revoked through one daemon, refused at once by the other: %s", body)
	}
	status, body = call(b, "GET", "/v1/records", testKey, "")
	require.Equal(t, http.StatusOK, status, "configured keys keep working: %s", body)
}
