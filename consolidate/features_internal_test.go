package consolidate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/signature"
	"github.com/engram-dev/engram/store"
)

// featureEpisodes are timelines of every shape the readers know: a
// tool's failure fixed and checked, an error the runtime reported, a
// problem statement, a flaky step, a wrong try under an intent, probes
// used and unused, a failed fix, a task without an error; with
// environments, sensitivities, times, and results of every JSON kind
// (spaces kept as the database gives them back).
func featureEpisodes() map[string][]store.EpisodeEvent {
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	ev := func(sens memory.Sensitivity, doc string) store.EpisodeEvent {
		at = at.Add(1500 * time.Millisecond)
		return store.EpisodeEvent{ID: uuid.New(), Time: at, Event: json.RawMessage(doc), Sensitivity: sens}
	}
	call := func(id, tool, args string) store.EpisodeEvent {
		return ev(memory.Low, fmt.Sprintf(`{"kind": "tool_call", "tool": {"name": %q, "call_id": %q, "arguments": %s}}`, tool, id, args))
	}
	output := func(id, tool, result string) store.EpisodeEvent {
		return ev(memory.Low, fmt.Sprintf(`{"kind": "tool_output", "tool": {"name": %q, "call_id": %q, "result": %s}}`, tool, id, result))
	}
	input := func(text, tags string) store.EpisodeEvent {
		return ev(memory.Public, fmt.Sprintf(`{"kind": "user_input", "text": %q, "tags": %s, "environment": {"os": "linux", "cpu": 8, "ci": true, "nested": {"x": 1}}}`, text, tags))
	}
	return map[string][]store.EpisodeEvent{
		"fixed and checked": {
			input("build the project", `[]`),
			call("c0", "shell", `{"command": "make build"}`),
			output("c0", "shell", `{"exit_code": 2, "stderr": "ld: cache mismatch in /tmp/b-1/obj.o <&> 1e21"}`),
			call("c1", "shell", `{"command": "ls /tmp/b-1"}`), output("c1", "shell", `"obj.o main.o"`),
			call("c2", "shell", `{"command": "rm -rf /tmp/b-1/cache"}`), output("c2", "shell", `{"exit_code": 0}`),
			call("c3", "shell", `{"command": "make build"}`), output("c3", "shell", `"build ok: bin/engramd\n2 targets"`),
			ev(memory.Low, `{"kind": "outcome", "outcome": {"status": "success", "summary": "built"}}`),
		},
		"reported, with a used probe": {
			input("deploy billing to staging", `["intent:Deploy Billing"]`),
			call("c0", "deploy", `["billing", "staging", 3.25, null, {"dry": false}]`),
			ev(memory.High, `{"kind": "error", "error": {"message": "deploy: quota exceeded for 'billing-7' (E8949)", "tool": "deploy"}, "environment": {"region": "eu-1"}}`),
			call("c1", "cat", `{"path": "/etc/quota.yaml"}`), output("c1", "cat", `"limit: billing-7-quota-raised"`),
			call("c2", "quota", `{"action": "raise", "name": "billing-7-quota-raised", "n": 12345678901234567890}`),
			output("c2", "quota", `{"ok": true, "list": [1, 2.5, "x", null, {}], "empty": []}`),
			call("c3", "deploy", `["billing", "staging", 3.25, null, {"dry": false}]`), output("c3", "deploy", `"deployed"`),
		},
		"a problem statement": {
			ev(memory.Medium, `{"kind": "error", "error": {"message": "Traceback (most recent call last):\n  File \"a.py\", line 3\nKeyError: 'token'"}}`),
			call("c0", "edit", `{"file": "a.py", "patch": "+token = env()"}`), output("c0", "edit", `"ok"`),
			call("c1", "pytest", `"tests/test_a.py::test_x"`), output("c1", "pytest", `"1 passed"`),
		},
		"flaky, then a repeat": {
			input("run the tests", `[]`),
			call("c0", "shell", `{"command": "npm test"}`), output("c0", "shell", `{"exit_code": 1, "stderr": "error: flaky"}`),
			call("c1", "shell", `{"command": "npm test"}`), output("c1", "shell", `{"exit_code": 0, "stdout": "Tests: 4 passed"}`),
			call("c2", "shell", `{"command": "git status"}`), output("c2", "shell", `"clean"`),
			call("c3", "shell", `{"command": "npm test"}`), output("c3", "shell", `{"exit_code": 0}`),
		},
		"a wrong try under an intent": {
			input("release the billing service", `["intent:release_billing"]`),
			call("c0", "shell", `{"command": "npm test"}`), output("c0", "shell", `{"exit_code":1,"stderr":"error: that did not help"}`),
			call("c1", "shell", `{"command": "make test"}`), output("c1", "shell", `{"exit_code":0}`),
			call("c2", "shell", `{"command": "make dist"}`), output("c2", "shell", `{"exit_code":0}`),
		},
		"outputs without ids, an error after another": {
			call("", "make", `["build"]`),
			output("", "make", `{"error": "cannot find module 'left-pad'"}`),
			call("", "npm", `["install", "left-pad@1.3.0"]`), output("", "npm", `"added 1 package"`),
			call("", "make", `["build"]`), output("", "make", `{"error": "undefined: padLeft in main.go:12:5"}`),
			call("", "edit", `{"path": "main.go"}`), output("", "edit", `"ok"`),
			call("", "make", `["build"]`),
			ev(memory.Low, `{"kind": "observation", "text": "still going"}`),
			ev(memory.Low, `not json`),
		},
		"a task without an error": {
			input("Set up the project in /srv/app-3", `[]`),
			call("c0", "shell", `{"command": "git init --template=node"}`),
			output("c0", "shell", `"Initialized empty Git repository in /srv/app-3/.git/\ncreated jest.config.js"`),
			call("c1", "shell", `{"command": "npm test -- --config jest.config.js"}`), output("c1", "shell", `"Tests: 4 passed, 4 total"`),
		},
		"nothing": nil,
	}
}

// An episode's features, learned from its events and read back from
// their stored form, give a pass exactly what reading the events gives
// it: the same problems, the same steps, the same trace and graph, under
// any episode row (issue 29).
func TestFeaturesReadAsTheEventsDo(t *testing.T) {
	t.Parallel()
	for name, evs := range featureEpisodes() {
		for _, outcome := range []string{"success", "failure", ""} {
			t.Run(name+"/"+outcome, func(t *testing.T) {
				t.Parallel()
				ce := store.ClosedEpisode{Tenant: "acme", ID: uuid.New(), Thread: "t-1", ClosedAt: time.Date(2026, 3, 2, 0, 0, 0, 0, time.Local),
					Sensitivity: memory.Medium, Scope: "team/a", Outcome: outcome,
					Environment: map[string]any{"os": "darwin", "toolchain": "gcc", "list": []any{1.0}}}
				f := learnFeatures(outcome, evs, DefaultProbes)
				raw, err := encodeFeatures(f)
				require.NoError(t, err)
				stored, err := decodeFeatures(raw)
				require.NoError(t, err)
				require.Equal(t, f, stored, "features read back as they were learned")

				want := readProblems(ce, evs)
				got := stored.problems(ce)
				require.Len(t, got, len(want))
				for i := range got {
					require.Equal(t, want[i].tried(DefaultProbes), got[i].steps(DefaultProbes), "problem %d's steps", i)
					if got[i].Trigger != "" {
						require.Equal(t, signature.ReadLine(got[i].Trigger), *got[i].line)
					}
					got[i].reduced, got[i].reducedKnown, got[i].line = nil, false, nil
				}
				require.Equal(t, want, got)

				wantTr, gotTr := readTrace(ce, evs), stored.trace(ce)
				require.NotNil(t, gotTr.graph)
				require.Equal(t, BuildGraph(planActions(wantTr), DefaultProbes), *gotTr.graph)
				if !gotTr.Tagged && gotTr.FirstInput != "" {
					require.Equal(t, signature.ReadLine(gotTr.FirstInput), *gotTr.inputLine)
				}
				gotTr.graph, gotTr.inputLine = nil, nil
				require.Equal(t, wantTr, gotTr)
			})
		}
	}
}

// A result whose bytes are no UTF-8, which a JSON string cannot hold, is
// kept byte for byte all the same; as are an empty result and none.
func TestFeaturesKeepResultBytes(t *testing.T) {
	t.Parallel()
	acts := []Action{
		{Tool: "a", Args: map[string]any{}, Result: json.RawMessage("\"caf\xe9\"")},
		{Tool: "b", Args: map[string]any{"k": "v"}, Result: json.RawMessage(`{"x": 1,  "y": "<&>"}`), Failed: true},
		{Tool: "c", Args: map[string]any{}},
		{Tool: "d", Args: map[string]any{}, Result: json.RawMessage{}},
	}
	f := features{Environment: map[string]any{}, Problems: []Episode{{Trigger: "x", Actions: acts, reduced: []int{0, 2}, reducedKnown: true}},
		Trace: Trace{Episode: Episode{Actions: acts}, graph: &Graph{Steps: pick(acts, []int{3}), Ops: []string{"d"}}}, TraceSteps: []int{3}}
	raw, err := encodeFeatures(f)
	require.NoError(t, err)
	got, err := decodeFeatures(raw)
	require.NoError(t, err)
	for i, a := range got.Problems[0].Actions {
		require.Equal(t, []byte(acts[i].Result), []byte(a.Result), "action %d", i)
	}
	require.Nil(t, got.Problems[0].Actions[2].Result)
	require.Equal(t, pick(acts, []int{0, 2}), got.Problems[0].steps(nil))

	_, err = decodeFeatures([]byte(`{"p": [{"a": [], "r": [3]}]}`))
	require.Error(t, err, "a step out of its actions")
}

// featuresDigests are, by features version, the digest of the features
// learned of featureEpisodes: when the learning code changes what it
// derives, the digest changes, and the version must change with it (the
// rows stored by the older code would otherwise be read as this code's).
var featuresDigests = map[int]string{
	1: "323598c0b06e3df5cba9776a0eb36d67e0759da19e8d7a594a7d13c56c45e8a1",
}

// The features version changes with what the learning code derives.
func TestFeaturesVersionNamesTheLearning(t *testing.T) {
	t.Parallel()
	eps := featureEpisodes()
	h := sha256.New()
	for _, name := range slices.Sorted(maps.Keys(eps)) {
		for _, outcome := range []string{"success", "failure"} {
			raw, err := encodeFeatures(learnFeatures(outcome, eps[name], DefaultProbes))
			require.NoError(t, err)
			h.Write(raw)
		}
	}
	require.Equal(t, featuresDigests[featuresVersion], hex.EncodeToString(h.Sum(nil)),
		"what features are learned changed: change featuresVersion (features.go) and record the new digest here")
}
