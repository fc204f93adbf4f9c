package retrieve_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/retrieve"
)

// learned is a procedure as consolidation writes one: its recipe's steps
// with templated arguments and variables, each saying where in the
// trigger it is.
func learned(signal string, successes, failures int, steps ...map[string]any) memory.Record {
	var recipe []any
	for _, s := range steps {
		recipe = append(recipe, s)
	}
	return memory.Record{Type: memory.Competence, Confidence: 0.7, Payload: payload(map[string]any{
		"kind": "competence", "skill_name": "fix " + signal, "triggers": []any{map[string]any{"signal": signal}}, "recipe": recipe,
		"performance": map[string]any{"successes": successes, "failures": failures}})}
}

// learnedStep is a step with one variable from the trigger.
func learnedStep(tool, key, arg, variable, placeholder, trim string) map[string]any {
	from := map[string]any{"placeholder": placeholder, "index": 0}
	if trim != "" {
		from["trim_suffix"] = trim
	}
	return map[string]any{"step": "run " + tool + " " + arg, "tool": tool, "args_schema": map[string]any{
		"arguments": map[string]any{key: arg},
		"variables": map[string]any{variable: map[string]any{"type": "string", "from_argument": key, "from_signal": from}}}}
}

// The procedure whose trigger is the task's problem (the same signature)
// comes first, above one of another error that has far better statistics
// and shares the rarer words of the task — a tool its recipe names, the
// directory and the package's stem its trigger's values happen to share —
// where the task's own procedure shares the common ones; and only it is
// bound to the task's values.
func TestTheTasksProblemComesFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	right := b.create(t, learned("npm: checksum failure in /srv/app-3fa20c/obj.o (package 'libapp-3fa20c')", 1, 3,
		learnedStep("shell", "command", "rm -rf {path}/cache", "path", "<path>", "/obj.o"),
		learnedStep("pkg", "package", "{package}", "package", "<q>", "")))
	other := b.create(t, learned("docker: dangling layer in /home/ci/web-77aa01/obj.o (package 'libweb-77aa01')", 20, 0,
		learnedStep("npm", "args", "npm cache clean {path} && npm ci && npm rebuild", "path", "<path>", "/obj.o")))
	b.index(t)

	msg := "npm: checksum failure in /home/ci/web-01be77/obj.o (package 'libweb-01be77')"
	res := b.retrieve(t, retrieve.Request{Task: retrieve.Task{Text: msg, Signals: []string{msg}}})
	comp := layer(res, retrieve.LayerCompetence)
	require.Equal(t, []uuid.UUID{right.ID, other.ID}, layerIDs(comp))
	first, second := comp.Items[0].Why, comp.Items[1].Why
	require.True(t, first.SignatureMatch)
	require.Equal(t, 1.0, first.Relevance)
	require.Equal(t, map[string]string{"path": "/home/ci/web-01be77", "package": "libweb-01be77"}, first.Bindings)
	require.False(t, second.SignatureMatch)
	require.Nil(t, second.Bindings, "another problem's variables are not the task's")
	require.Less(t, *second.SignalCoverage, 0.5, "it shares few of its trigger's words with the task")
	require.False(t, comp.NeedsDisambiguation, "the task's problem has no contender among the others")

	// Without a signal of its signature, neither is the task's problem,
	// nor bound; the one whose trigger the task's words cover better is
	// first.
	res = b.retrieve(t, retrieve.Request{Task: retrieve.Task{Text: "npm checksum failure"}})
	comp = layer(res, retrieve.LayerCompetence)
	require.Equal(t, []uuid.UUID{right.ID, other.ID}, layerIDs(comp))
	require.False(t, comp.Items[0].Why.SignatureMatch)
	require.Nil(t, comp.Items[0].Why.Bindings)
}

// A variable is bound only where the task's signal holds it: a path of
// another file than the trigger's suffix says is left unbound.
func TestBindingsOnlyWhatTheSignalHolds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.create(t, learned("ld: cache mismatch in /tmp/a-1/obj.o", 3, 0,
		learnedStep("shell", "command", "rm -rf {path}/cache", "path", "<path>", "/obj.o")))
	b.index(t)
	for signal, want := range map[string]map[string]string{
		"ld: cache mismatch in /srv/b-2/obj.o":  {"path": "/srv/b-2"},
		"ld: cache mismatch in /srv/b-2/main.o": nil,
	} {
		res := b.retrieve(t, retrieve.Request{Task: retrieve.Task{Signals: []string{signal}}})
		comp := layer(res, retrieve.LayerCompetence)
		require.Equal(t, []uuid.UUID{p.ID}, layerIDs(comp))
		require.True(t, comp.Items[0].Why.SignatureMatch)
		require.Equal(t, want, comp.Items[0].Why.Bindings, signal)
	}
}

// A procedure learned from tasks with no error has the task's intent as
// its trigger ("intent:<label>"): a task of that intent is its problem,
// another intent's is not.
func TestIntentTriggerIsTheTasksProblem(t *testing.T) {
	t.Parallel()
	b := setup(t)
	release := b.create(t, learned("intent:release_billing", 2, 0, map[string]any{"step": "run shell make dist", "tool": "shell",
		"args_schema": map[string]any{"arguments": map[string]any{"command": "make dist"}}}))
	backup := b.create(t, learned("intent:back_up_billing", 9, 0, map[string]any{"step": "run shell pg_dump", "tool": "shell",
		"args_schema": map[string]any{"arguments": map[string]any{"command": "pg_dump"}}}))
	b.index(t)
	res := b.retrieve(t, retrieve.Request{Task: retrieve.Task{Text: "release the billing service", Intent: "release_billing"}})
	comp := layer(res, retrieve.LayerCompetence)
	require.Equal(t, release.ID, comp.Items[0].Record.ID)
	require.True(t, comp.Items[0].Why.SignatureMatch)
	for _, it := range comp.Items[1:] {
		require.Equal(t, backup.ID, it.Record.ID)
		require.False(t, it.Why.SignatureMatch, "another intent's procedure")
	}
}
