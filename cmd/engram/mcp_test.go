package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// engram mcp is in the usage text, and refuses what it cannot serve with
// a usage error on stderr, leaving standard output (the protocol's) empty.
// The MCP sessions themselves are tested in package mcpserver, which runs
// this command's binary.
func TestMCPUsage(t *testing.T) {
	t.Parallel()
	require.Contains(t, usage, "\n  mcp ")
	for _, c := range []struct {
		environ map[string]string
		args    []string
		stderr  string
	}{
		{map[string]string{}, []string{"mcp"}, "no API key"},
		{map[string]string{"ENGRAM_API_KEY": testKey}, []string{"mcp", "extra"}, "usage: engram mcp"},
		{map[string]string{"ENGRAM_API_KEY": testKey}, []string{"mcp", "--url", "ftp://x"}, `"ftp://x" is not an engramd URL`},
	} {
		e := &env{t: t, environ: c.environ}
		r := e.run("", c.args...)
		require.Error(t, r.err, c.args)
		require.Equal(t, 2, exitCode(r.err), c.args)
		require.Contains(t, r.stderr, c.stderr, c.args)
		require.Empty(t, r.stdout, c.args)
		require.True(t, strings.HasSuffix(r.stderr, "\nRun 'engram help' for usage.\n"), r.stderr)
	}
}

// A client that closes its end at once ends the server cleanly, having
// written nothing.
func TestMCPEndOfInput(t *testing.T) {
	t.Parallel()
	e := &env{t: t, environ: map[string]string{"ENGRAM_API_KEY": testKey}}
	r := e.run("", "mcp")
	require.NoError(t, r.err, r.stderr)
	require.Empty(t, r.stdout)
}
