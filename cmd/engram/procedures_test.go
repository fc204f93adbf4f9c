package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func learned(skill string, tags []string, successes, failures int) map[string]any {
	return map[string]any{"type": "competence", "confidence": 0.75, "tags": tags,
		"provenance": map[string]any{"sources": []any{map[string]any{"kind": "outcome", "ref": "run-1"}, map[string]any{"kind": "outcome", "ref": "run-2"}}},
		"payload": map[string]any{
			"kind": "competence", "skill_name": skill,
			"triggers": []any{map[string]any{"signal": "ld: cache mismatch in <path>", "conditions": map[string]any{"os": "linux"}}},
			"recipe": []any{
				map[string]any{"step": "run shell rm -rf {path}/cache", "tool": "shell", "validation": "exit code 0",
					"args_schema": map[string]any{"arguments": map[string]any{"command": "rm -rf {path}/cache"}, "variables": map[string]any{"path": map[string]any{"type": "string"}}}},
				map[string]any{"step": "run make build", "tool": "make", "validation": "output starts with: build ok"},
			},
			"failure_modes":  []any{"run make clean did not fix it: ld: cache mismatch in <path>"},
			"fallbacks":      []any{"run shell ccache --clear"},
			"required_tools": []any{"shell", "make"},
			"performance":    map[string]any{"successes": successes, "failures": failures},
		}}
}

// engram procedures lists the learned procedures with their trigger,
// conditions, smoothed success rate, evidence and state; records get on
// one prints its recipe for a person to follow (issue 11).
func TestProceduresCommand(t *testing.T) {
	t.Parallel()
	e := setup(t)
	require.Equal(t, "no learned procedures\n", e.ok("procedures"))
	id := e.create(learned("fix ld: cache mismatch (os=linux)", []string{"learned", "probation"}, 3, 1))
	e.create(learned("hand-written", nil, 9, 0)) // not learned: not listed

	out := e.ok("procedures")
	lines := rows(t, out)
	require.Len(t, lines, 1, out)
	require.Equal(t, []string{id, "fix", "ld:"}, strings.Fields(lines[0])[:3])
	require.Contains(t, lines[0], "os=linux")
	require.Contains(t, lines[0], "0.67 (3/4)")
	require.Equal(t, []string{"2", "probation"}, strings.Fields(lines[0])[len(strings.Fields(lines[0]))-2:])
	require.Contains(t, e.ok("procedures", "--json"), `"records"`)

	got := e.ok("records", "get", id)
	for _, want := range []string{
		"fix ld: cache mismatch (os=linux)\n",
		"When: ld: cache mismatch in <path>\n  if os=linux\n",
		"Tools: shell, make\n",
		"Steps:\n  1. run shell rm -rf {path}/cache\n     variables: {path}\n     check: exit code 0\n  2. run make build\n     check: output starts with: build ok\n",
		"Known failures:\n  - run make clean did not fix it",
		"Otherwise try:\n  - run shell ccache --clear\n",
		"Record: 3 successes, 1 failure, success rate 0.67 (3/4)\n",
		"Evidence: 2 sources\n",
	} {
		require.Contains(t, got, want)
	}
	require.Contains(t, e.ok("records", "get", id, "--json"), `"recipe"`)
}
