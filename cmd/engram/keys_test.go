package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
)

// engram keys create prints a new key's secret once; the key works at
// once; keys list shows it, never its secret; keys revoke ends it. Keys
// take an operator key.
func TestKeysCommand(t *testing.T) {
	t.Parallel()
	e := setupMetrics(t)

	r := e.run("", "keys", "list")
	require.Equal(t, 1, exitCode(r.err))
	require.Contains(t, r.stderr, "HTTP 403")

	e.environ["ENGRAM_API_KEY"] = opsKey
	out := e.ok("keys", "create", "planner-7", "--role", "executor", "--tenant", "acme", "--agent", "planner-7", "--domains", "medical, finance", "--clearance", "medium")
	m := regexp.MustCompile(`(?m)^created key planner-7 \(executor of acme\); its secret, shown this once:\n\n    (engk_\S+)\n$`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	secret := m[1]

	out = e.ok("keys", "list")
	require.NotContains(t, out, secret)
	require.Len(t, rows(t, out), 1)
	require.Equal(t, "planner-7 acme executor planner-7 medical,finance medium", strings.Join(strings.Fields(rows(t, out)[0])[:6], " "))
	require.True(t, strings.HasSuffix(strings.TrimSpace(rows(t, out)[0]), "-"), "not revoked: %s", out)

	e.environ["ENGRAM_API_KEY"] = secret
	e.create(working("t1"))
	other := fact("go", nil)
	other["agent_id"] = "someone-else"
	r = e.run("", "records", "create", "-f", e.file("fact.json", other))
	require.Equal(t, 1, exitCode(r.err))
	require.Contains(t, r.stderr, "HTTP 403")
	require.Contains(t, r.stderr, "executor key may write only its own agent's semantic")

	e.environ["ENGRAM_API_KEY"] = opsKey
	require.Contains(t, e.ok("keys", "revoke", "planner-7"), "revoked planner-7 at ")
	var list api.KeyList
	decode(t, e.ok("keys", "list", "--tenant", "acme", "--json"), &list)
	require.Len(t, list.Keys, 1)
	require.NotNil(t, list.Keys[0].RevokedAt)

	e.environ["ENGRAM_API_KEY"] = secret
	r = e.run("", "records", "list")
	require.Equal(t, 1, exitCode(r.err))
	require.Contains(t, r.stderr, "HTTP 401")

	e.environ["ENGRAM_API_KEY"] = opsKey
	for _, args := range [][]string{{"keys"}, {"keys", "create", "x"}, {"keys", "revoke"}, {"keys", "nope"}} {
		require.Equal(t, 2, exitCode(e.run("", args...).err), "engram %s", strings.Join(args, " "))
	}
}
