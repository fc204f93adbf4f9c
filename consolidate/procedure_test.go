package consolidate_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/consolidate"
)

func call(tool string, args map[string]any, result string, failed bool) consolidate.Action {
	r, _ := json.Marshal(result)
	return consolidate.Action{Tool: tool, Args: args, Result: r, Failed: failed}
}

func TestReduceDropsWhatDidNotContribute(t *testing.T) {
	t.Parallel()
	got := consolidate.Reduce([]consolidate.Action{
		call("shell", map[string]any{"command": "ls /tmp/build-1"}, "obj.o main.o", false),               // probe, unused
		call("shell", map[string]any{"command": "rm -rf /tmp/build-1/cach"}, "error: no such dir", true), // failed, retried
		call("shell", map[string]any{"command": "rm -rf /tmp/build-1/cache"}, "", false),
		call("make", map[string]any{"args": []any{"build"}}, "ok", false),                    // repeated exactly below
		call("read_file", map[string]any{"path": "Makefile"}, "TARGET=engramd-linux", false), // used below
		call("make", map[string]any{"args": []any{"build"}}, "ok", false),
		call("make", map[string]any{"target": "engramd-linux"}, "ok", false),
	}, consolidate.DefaultProbes)
	require.Len(t, got, 4)
	require.Equal(t, "rm -rf /tmp/build-1/cache", got[0].Args["command"])
	require.Equal(t, "read_file", got[1].Tool, "a probe whose output a later step uses stays")
	require.Equal(t, []any{"build"}, got[2].Args["args"])
	require.Equal(t, "engramd-linux", got[3].Args["target"])
}

func TestTemplatesNameWhatVaried(t *testing.T) {
	t.Parallel()
	eps := [][]consolidate.Action{
		{call("shell", map[string]any{"command": "rm -rf /tmp/build-123/cache"}, "", false), call("go", map[string]any{"package": "./cmd/a", "race": true}, "", false)},
		{call("shell", map[string]any{"command": "rm -rf /var/tmp/b/cache"}, "", false), call("go", map[string]any{"package": "./cmd/b", "race": true}, "", false)},
		{call("shell", map[string]any{"command": "rm -rf /home/ci/w/cache"}, "", false), call("go", map[string]any{"package": "./cmd/c", "race": true}, "", false)},
	}
	tpls := consolidate.Templates(eps)
	require.Len(t, tpls, 2)
	require.Equal(t, "rm -rf {path}/cache", tpls[0].Args["command"])
	require.Equal(t, map[string]string{"path": "command"}, tpls[0].Vars)
	require.Equal(t, "{path2}", tpls[1].Args["package"], "a second path is a second variable")
	require.Equal(t, true, tpls[1].Args["race"], "what never varied stays concrete")

	same := consolidate.Templates([][]consolidate.Action{eps[0][:1], eps[0][:1]})
	require.Equal(t, "rm -rf /tmp/build-123/cache", same[0].Args["command"])
	require.Empty(t, same[0].Vars)

	keyed := consolidate.Templates([][]consolidate.Action{
		{call("npm", map[string]any{"package": "left-pad", "save": true}, "", false)},
		{call("npm", map[string]any{"package": "is-even", "save": true}, "", false)},
	})
	require.Equal(t, "{package}", keyed[0].Args["package"], "named for its argument")

	// One directory named twice is one variable, in one step or two.
	twice := consolidate.Templates([][]consolidate.Action{
		{call("shell", map[string]any{"command": "mv /w/a-1/old /w/a-1/new"}, "", false), call("shell", map[string]any{"command": "ls /w/a-1/new"}, "", false)},
		{call("shell", map[string]any{"command": "mv /w/b-2/old /w/b-2/new"}, "", false), call("shell", map[string]any{"command": "ls /w/b-2/new"}, "", false)},
	})
	require.Equal(t, "mv {path}/old {path}/new", twice[0].Args["command"])
	require.Equal(t, "ls {path}/new", twice[1].Args["command"])
	require.Equal(t, map[string]string{"path": "command"}, twice[0].Vars)
}
