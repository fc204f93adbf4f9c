package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// engram erase --wait erases a subject, shows the progress and prints the
// certificate; erase status prints it again; a request naming no one is
// refused with the field at fault.
func TestErase(t *testing.T) {
	t.Parallel()
	e := setup(t)
	named := fact("fr", nil)
	named["payload"].(map[string]any)["subject"] = "Jane Roe"
	id := e.create(named)
	kept := e.create(fact("go", nil))

	r := e.run("", "erase", "--name", "jane roe", "--user-id", "u-1", "--email", "jane.roe@example.com", "--wait")
	require.NoError(t, r.err, r.stderr)
	require.Contains(t, r.stderr, ": matching\n", "progress")
	require.Contains(t, r.stdout, "semantic=1")
	require.Contains(t, r.stdout, "verified: nothing of the subject remains")
	require.NotContains(t, strings.ToLower(r.stdout), "jane")
	erasure := regexp.MustCompile(`erasure\s+([0-9a-f-]{36})`).FindStringSubmatch(r.stdout)
	require.Len(t, erasure, 2, r.stdout)

	require.Error(t, e.run("", "records", "get", id).err)
	e.ok("records", "get", kept)
	status := e.ok("erase", "status", erasure[1])
	require.Contains(t, status, "completed (done)")
	require.Contains(t, status, "semantic=1")

	r = e.run("", "erase")
	require.Error(t, r.err)
	require.Equal(t, 1, exitCode(r.err))
	require.Contains(t, r.stderr, "HTTP 400")
	require.Contains(t, r.stderr, "at least one identifier")
	r = e.run("", "erase", "--email", "not-an-email")
	require.Error(t, r.err)
	require.Contains(t, r.stderr, "/emails/0")
	require.NotContains(t, r.stderr, "not-an-email")
}
