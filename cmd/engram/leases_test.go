package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
)

// An agent leases a record from the command line, writes under the lease
// with its fencing token, renews and releases it; another agent is denied
// meanwhile, and a stale token is refused once the record is leased again.
func TestLeasesCommands(t *testing.T) {
	t.Parallel()
	e := setup(t)
	id := e.create(map[string]any{"type": "working", "scope": "cli",
		"payload": map[string]any{"kind": "working", "thread_id": "t1", "state": "planning"}})
	update := func(state string) string {
		return e.file("update.json", map[string]any{"kind": "working", "thread_id": "t1", "state": state})
	}

	var a api.Lease
	decode(t, e.ok("leases", "acquire", "--record", id, "--agent", "agent-a", "--ttl", "30s", "--json"), &a)
	require.Equal(t, api.LeaseGranted, a.Outcome)
	require.Equal(t, 30.0, a.ExpiresAt.Sub(a.GrantedAt).Seconds())

	r := e.run("", "leases", "acquire", "--record", id, "--actor", "agent-b")
	require.Error(t, r.err)
	require.Contains(t, r.stderr, "Leased by another agent (HTTP 409)")
	require.Contains(t, r.stderr, `"agent-a"`)
	r = e.run("", "records", "update", id, "-f", update("executing"), "--version", "1", "--actor", "agent-b")
	require.Error(t, r.err)
	require.Contains(t, r.stderr, "Leased by another agent")

	token := strconv.FormatInt(a.FencingToken, 10)
	e.ok("records", "update", id, "-f", update("executing"), "--version", "1", "--actor", "agent-a", "--fencing-token", token)

	var renewed api.Lease
	decode(t, e.ok("leases", "renew", a.ID.String(), "--agent", "agent-a", "--ttl", "90", "--json"), &renewed)
	require.Equal(t, a.FencingToken, renewed.FencingToken)
	require.True(t, renewed.ExpiresAt.Sub(a.GrantedAt).Seconds() >= 90, "renewed for 90 s from now")

	r = e.run("", "leases", "get", a.ID.String())
	require.NoError(t, r.err, r.stderr)
	require.Contains(t, r.stdout, "FENCING TOKEN  "+token)
	require.Contains(t, r.stdout, "record "+id)
	require.Contains(t, r.stderr, "--fencing-token "+token)

	var released api.Lease
	decode(t, e.ok("leases", "release", a.ID.String(), "--agent", "agent-a", "--json"), &released)
	require.Equal(t, api.LeaseReleased, released.Status)

	// B leases the record next; A's token is stale, from the flag or from
	// the environment.
	var b api.Lease
	decode(t, e.ok("leases", "acquire", "--record", id, "--actor", "agent-b", "--json"), &b)
	require.Greater(t, b.FencingToken, a.FencingToken)
	e.environ["ENGRAM_FENCING_TOKEN"] = token
	r = e.run("", "records", "update", id, "-f", update("done"), "--version", "2", "--actor", "agent-a")
	require.Error(t, r.err)
	require.Contains(t, r.stderr, "Stale fencing token (HTTP 409)")
	delete(e.environ, "ENGRAM_FENCING_TOKEN")

	r = e.run("", "leases", "acquire", "--scope", "cli", "--agent", "agent-c", "--ttl", "5")
	require.Error(t, r.err)
	require.Contains(t, r.stderr, "/ttl_seconds: must be from 30 to 120 seconds")
	for _, args := range [][]string{
		{"leases", "acquire", "--agent", "a"},
		{"leases", "acquire", "--record", id, "--scope", "cli"},
		{"leases", "acquire", "--record", "nope"},
		{"leases", "acquire", "--scope", "cli", "--ttl", "1.5s"},
		{"leases", "renew"},
		{"leases", "steal", id},
	} {
		r := e.run("", args...)
		require.Equal(t, 2, exitCode(r.err), "%s: %v", strings.Join(args, " "), r.err)
	}
}
