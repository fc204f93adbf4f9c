package consolidate_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/consolidate"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/signature"
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
	tpls := consolidate.Templates(eps, nil)
	require.Len(t, tpls, 2)
	require.Equal(t, "rm -rf {path}/cache", tpls[0].Args["command"])
	require.Equal(t, map[string]string{"path": "command"}, tpls[0].Vars)
	require.Equal(t, "{path2}", tpls[1].Args["package"], "a second path is a second variable")
	require.Equal(t, true, tpls[1].Args["race"], "what never varied stays concrete")

	same := consolidate.Templates([][]consolidate.Action{eps[0][:1], eps[0][:1]}, nil)
	require.Equal(t, "rm -rf /tmp/build-123/cache", same[0].Args["command"])
	require.Empty(t, same[0].Vars)

	keyed := consolidate.Templates([][]consolidate.Action{
		{call("npm", map[string]any{"package": "left-pad", "save": true}, "", false)},
		{call("npm", map[string]any{"package": "is-even", "save": true}, "", false)},
	}, nil)
	require.Equal(t, "{package}", keyed[0].Args["package"], "named for its argument")

	// One directory named twice is one variable, in one step or two.
	twice := consolidate.Templates([][]consolidate.Action{
		{call("shell", map[string]any{"command": "mv /w/a-1/old /w/a-1/new"}, "", false), call("shell", map[string]any{"command": "ls /w/a-1/new"}, "", false)},
		{call("shell", map[string]any{"command": "mv /w/b-2/old /w/b-2/new"}, "", false), call("shell", map[string]any{"command": "ls /w/b-2/new"}, "", false)},
	}, nil)
	require.Equal(t, "mv {path}/old {path}/new", twice[0].Args["command"])
	require.Equal(t, "ls {path}/new", twice[1].Args["command"])
	require.Equal(t, map[string]string{"path": "command"}, twice[0].Vars)
}

// attempt is a closed episode of the world's kind: an error naming a
// path and, quoted, a package, fixed (or not) by the steps given, in env.
type attempt struct {
	dir, pkg string
	env      map[string]any
	success  bool
	steps    []string // shell commands, "pkg:<manager>" for a package step
}

// learn runs competence extraction over episodes, in order, with the
// default configuration.
func learn(t *testing.T, msg string, eps []attempt) []consolidate.Procedure {
	t.Helper()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	group := make([]consolidate.Episode, len(eps))
	for i, fe := range eps {
		trigger := fmt.Sprintf(msg, fe.dir, fe.pkg)
		ep := consolidate.Episode{ID: uuid.New(), ClosedAt: t0.Add(time.Duration(i) * time.Minute), Success: fe.success,
			Environment: fe.env, Trigger: trigger, Signature: signature.Of(trigger)}
		for _, s := range fe.steps {
			a := call("shell", map[string]any{"command": strings.ReplaceAll(s, "{dir}", fe.dir)}, "", false)
			if manager, ok := strings.CutPrefix(s, "pkg:"); ok {
				a = call("pkg", map[string]any{"manager": manager, "action": "install", "package": fe.pkg}, "", false)
			}
			a.Result = json.RawMessage(`{"exit_code": 0}`)
			ep.Actions = append(ep.Actions, a)
		}
		group[i] = ep
	}
	return consolidate.New(consolidate.Config{}).Learn(group)
}

const worldError = "npm: checksum failure in %s/obj.o (package '%s')"

// Episodes whose fix names the package and the directory the error names
// are one procedure whatever the package: its variables are bound from
// the trigger (substrate RFC §15A.9), and say where in it they are.
func TestProcedureVariablesFromTheTrigger(t *testing.T) {
	t.Parallel()
	linux := map[string]any{"os": "linux"}
	fix := []string{"rm -rf {dir}/cache", "pkg:apt", "make build"}
	procs := learn(t, worldError, []attempt{
		{dir: "/srv/app-3fa20c", pkg: "libapp-3fa20c", env: linux, success: true, steps: fix},
		{dir: "/home/ci/web-01be77", pkg: "libweb-01be77", env: linux, success: true, steps: fix},
		{dir: "/tmp/kit-9d0e11", pkg: "libhub-9d0e11", env: linux, success: true, steps: fix},
	})
	require.Len(t, procs, 1, "one procedure, whatever the package")
	p := procs[0].Payload
	require.Equal(t, 3, p.Performance.Successes)
	require.Len(t, p.Recipe, 3)
	require.Equal(t, "rm -rf {path}/cache", p.Recipe[0].ArgsSchema["arguments"].(map[string]any)["command"])
	require.Equal(t, "{package}", p.Recipe[1].ArgsSchema["arguments"].(map[string]any)["package"])
	require.Equal(t, "run pkg action=install manager=apt package={package}", p.Recipe[1].Step)
	require.Equal(t, map[string]any{"path": map[string]any{"type": "string", "from_argument": "command",
		"from_signal": signature.Source{Placeholder: signature.Path, Index: 0, TrimSuffix: "/obj.o"}}}, p.Recipe[0].ArgsSchema["variables"])
	require.Equal(t, map[string]any{"package": map[string]any{"type": "string", "from_argument": "package",
		"from_signal": signature.Source{Placeholder: signature.Quoted, Index: 0}}}, p.Recipe[1].ArgsSchema["variables"])
	require.Nil(t, p.Recipe[2].ArgsSchema["variables"])
	require.Empty(t, p.Triggers[0].Conditions, "one procedure and nothing contrary: no conditions")
}

// A word of an argument is bound from the trigger only when every episode
// has it at the same place of its trigger; otherwise it is a variable of
// its own, as before.
func TestTemplatesFromTrigger(t *testing.T) {
	t.Parallel()
	steps := [][]consolidate.Action{
		{call("pip", map[string]any{"spec": "--pkg=left-pad", "dir": "/w/a-1/src"}, "", false)},
		{call("pip", map[string]any{"spec": "--pkg=is-even", "dir": "/w/b-2/lib"}, "", false)},
	}
	tpls := consolidate.Templates(steps, []string{"cannot find 'left-pad' in /w/a-1/src/x.js", "cannot find 'is-even' in /w/b-2/lib/x.js"})
	require.Equal(t, "--pkg={spec}", tpls[0].Args["spec"], "the quoted name, inside a longer word")
	require.Equal(t, signature.Source{Placeholder: signature.Quoted, Index: 0}, tpls[0].From["spec"])
	require.Equal(t, "{path}", tpls[0].Args["dir"])
	require.Equal(t, signature.Source{Placeholder: signature.Path, Index: 0, TrimSuffix: "/x.js"}, tpls[0].From["path"])

	// The second episode's directory is not its trigger's: not bound.
	tpls = consolidate.Templates([][]consolidate.Action{
		{call("shell", map[string]any{"command": "rm -rf /w/a-1/cache"}, "", false)},
		{call("shell", map[string]any{"command": "rm -rf /w/c-3/cache"}, "", false)},
	}, []string{"ld: cache mismatch in /w/a-1/obj.o", "ld: cache mismatch in /w/b-2/obj.o"})
	require.Equal(t, "rm -rf {path}/cache", tpls[0].Args["command"])
	require.Equal(t, map[string]string{"path": "command"}, tpls[0].Vars)
	require.Empty(t, tpls[0].From)

	// A name that only contains the quoted one is not it.
	tpls = consolidate.Templates([][]consolidate.Action{
		{call("npm", map[string]any{"package": "left-pad-x"}, "", false)},
		{call("npm", map[string]any{"package": "is-even-x"}, "", false)},
	}, []string{"cannot find 'left-pad'", "cannot find 'is-even'"})
	require.Equal(t, "{package}", tpls[0].Args["package"])
	require.Empty(t, tpls[0].From)
}

// conditions are the conditions of each procedure learned, by its first
// step.
func conditions(procs []consolidate.Procedure) map[string]memory.Conditions {
	out := map[string]memory.Conditions{}
	for _, p := range procs {
		out[p.Payload.Recipe[0].Step] = p.Payload.Triggers[0].Conditions
	}
	return out
}

// A condition is what sets a procedure apart from another procedure of its
// trigger, or from failures of its own (substrate RFC §12): not a key its
// few supporting episodes happen to share, nor one a failure of another
// recipe had another value of.
func TestConditionsSetAProcedureApart(t *testing.T) {
	t.Parallel()
	env := func(os, tc string) map[string]any { return map[string]any{"os": os, "toolchain": tc} }
	rm := []string{"rm -rf {dir}/cache", "make build"}
	touch := []string{"touch {dir}/.stamp", "make build"}
	chmod := []string{"chmod -R u+w {dir}/cache", "make build"}

	// One procedure; the failures tried something else.
	procs := learn(t, worldError, []attempt{
		{dir: "/a/x-1", pkg: "p1", env: env("linux", "v1"), success: true, steps: rm},
		{dir: "/a/x-2", pkg: "p2", env: env("linux", "v1"), success: true, steps: rm},
		{dir: "/a/x-3", pkg: "p3", env: env("darwin", "v2"), steps: []string{"make clean"}},
	})
	require.Len(t, procs, 1)
	require.Empty(t, procs[0].Payload.Triggers[0].Conditions, "failures of another recipe set nothing apart")
	require.Len(t, procs[0].Failed, 1, "with no conditions, every failure of the problem is relevant")

	// Two procedures by os; the linux one's episodes both on v1 by chance.
	procs = learn(t, worldError, []attempt{
		{dir: "/a/x-1", pkg: "p1", env: env("linux", "v1"), success: true, steps: rm},
		{dir: "/a/x-2", pkg: "p2", env: env("linux", "v1"), success: true, steps: rm},
		{dir: "/a/x-3", pkg: "p3", env: env("darwin", "v1"), success: true, steps: touch},
		{dir: "/a/x-4", pkg: "p4", env: env("darwin", "v2"), success: true, steps: touch},
	})
	require.Equal(t, map[string]memory.Conditions{
		"run shell rm -rf {path}/cache": {"os": "linux"},
		"run shell touch {path}/.stamp": {"os": "darwin"},
	}, conditions(procs))

	// Nothing tells which key the fix depends on: both are kept.
	procs = learn(t, worldError, []attempt{
		{dir: "/a/x-1", pkg: "p1", env: env("darwin", "v2"), success: true, steps: touch},
		{dir: "/a/x-2", pkg: "p2", env: env("darwin", "v2"), success: true, steps: touch},
		{dir: "/a/x-3", pkg: "p3", env: env("linux", "v1"), success: true, steps: rm},
	})
	require.Len(t, procs, 1)
	require.Equal(t, memory.Conditions{"os": "darwin", "toolchain": "v2"}, procs[0].Payload.Triggers[0].Conditions)

	// Two keys needed together: linux v1, linux v2 and darwin v1 each have
	// their fix.
	procs = learn(t, worldError, []attempt{
		{dir: "/a/x-1", pkg: "p1", env: env("linux", "v1"), success: true, steps: rm},
		{dir: "/a/x-2", pkg: "p2", env: env("linux", "v1"), success: true, steps: rm},
		{dir: "/a/x-3", pkg: "p3", env: env("linux", "v2"), success: true, steps: touch},
		{dir: "/a/x-4", pkg: "p4", env: env("linux", "v2"), success: true, steps: touch},
		{dir: "/a/x-5", pkg: "p5", env: env("darwin", "v1"), success: true, steps: chmod},
		{dir: "/a/x-6", pkg: "p6", env: env("darwin", "v1"), success: true, steps: chmod},
	})
	require.Equal(t, memory.Conditions{"os": "linux", "toolchain": "v1"}, conditions(procs)["run shell rm -rf {path}/cache"])
	require.Equal(t, memory.Conditions{"os": "darwin"}, conditions(procs)["run shell chmod -R u+w {path}/cache"])

	// The linux fix changed over time: the old fix's episodes, in the new
	// one's very environment, tell nothing about conditions; darwin's do.
	// The old fix failing where it used to work counts against it.
	procs = learn(t, worldError, []attempt{
		{dir: "/a/x-1", pkg: "p1", env: env("linux", "v1"), success: true, steps: rm},
		{dir: "/a/x-2", pkg: "p2", env: env("linux", "v2"), success: true, steps: rm},
		{dir: "/a/x-3", pkg: "p3", env: env("darwin", "v2"), success: true, steps: chmod},
		{dir: "/a/x-4", pkg: "p4", env: env("darwin", "v1"), success: true, steps: chmod},
		{dir: "/a/x-5", pkg: "p5", env: env("linux", "v1"), steps: rm},
		{dir: "/a/x-6", pkg: "p6", env: env("linux", "v1"), success: true, steps: touch},
		{dir: "/a/x-7", pkg: "p7", env: env("linux", "v1"), success: true, steps: touch},
	})
	require.Equal(t, map[string]memory.Conditions{
		"run shell rm -rf {path}/cache":       {"os": "linux"},
		"run shell touch {path}/.stamp":       {"os": "linux"},
		"run shell chmod -R u+w {path}/cache": {"os": "darwin"},
	}, conditions(procs))
	for _, p := range procs {
		if p.Payload.Recipe[0].Step == "run shell rm -rf {path}/cache" {
			require.Len(t, p.Followed, 1, "the failure under its conditions is a use that failed")
			require.Equal(t, 1, p.Payload.Performance.Failures)
		}
	}
}
