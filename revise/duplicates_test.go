package revise_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
)

// newDupEnv is newOpsEnv with the dedup gate off, so that duplicates get
// stored as they do when a scope or an older configuration had it off.
func newDupEnv(t *testing.T) *opsEnv {
	e := newOpsEnv(t)
	e.w = revise.New(e.pool, revise.Config{Gates: revise.Gates{Dedup: revise.DedupConfig{Off: true}}})
	return e
}

func sources(r memory.Record) []string {
	out := make([]string, len(r.Provenance.Sources))
	for i, s := range r.Provenance.Sources {
		out[i] = s.Ref
	}
	return out
}

// A stored duplicate merges into the older record, which survives as its
// next version: the union of provenance and tags, the highest confidence
// and sensitivity, its own creation time; the newer one is merged, with
// merged_into to it; both audited. Rolling the merge back restores both
// (write-path RFC §12.3.4, §12.5.6).
func TestMergeIntoTheOlder(t *testing.T) {
	t.Parallel()
	e := newDupEnv(t)
	a := skill(0.6)
	a.Tags = []string{"linker"}
	a.Provenance.Sources = []memory.Source{{Kind: "outcome", Ref: "evt://fix-1"}}
	older := e.create(a)
	b := skill(0.6)
	b.Confidence, b.Tags, b.Sensitivity = 0.9, []string{"from-chat"}, memory.Medium
	b.Provenance.Sources = []memory.Source{{Kind: "outcome", Ref: "evt://fix-2"}}
	newer := e.create(b)
	require.NotEqual(t, older.ID, newer.ID, "the gate is off: a second record")

	_, err := e.w.MergeInto(e.ctx, e.tenant, newer.ID, []uuid.UUID{older.ID}, e.ch)
	requireConflict(t, err, revise.CodeNotAllowed)

	ch := revise.Change{Actor: "consolidate", Rationale: "same content hash"}
	got, err := e.w.MergeInto(e.ctx, e.tenant, older.ID, []uuid.UUID{newer.ID}, ch)
	require.NoError(t, err)
	require.Equal(t, older.ID, got.ID)
	require.Equal(t, 2, got.Version)
	require.Equal(t, memory.Active, got.Status)
	require.Equal(t, []string{"evt://fix-1", "evt://fix-2"}, sources(got))
	require.ElementsMatch(t, []string{"linker", "from-chat"}, got.Tags)
	require.Equal(t, 0.9, got.Confidence)
	require.Equal(t, memory.Medium, got.Sensitivity)
	require.Equal(t, older.CreatedAt, got.CreatedAt)
	require.JSONEq(t, string(older.Payload), string(got.Payload))

	gone := e.get(newer.ID)
	require.Equal(t, memory.Merged, gone.Status)
	require.Contains(t, gone.Relations, memory.Relation{Predicate: memory.MergedInto, TargetID: older.ID})
	actions, last := e.audit(older.ID)
	require.Equal(t, []string{"create", revise.ActionMergeInto}, actions)
	require.Equal(t, "same content hash", last.Rationale)
	require.Equal(t, []memory.Source{{Kind: "record", Ref: "record://" + newer.ID.String()}}, last.Evidence)
	actions, _ = e.audit(newer.ID)
	require.Equal(t, []string{"create", "merge"}, actions)

	res, err := e.w.Rollback(e.ctx, e.tenant, older.ID, 0, revise.Change{Actor: "ops", Rationale: "not the same preference"})
	require.NoError(t, err)
	back := res.RolledBack
	require.Equal(t, older.ID, back.ID)
	require.Equal(t, 3, back.Version)
	require.Equal(t, memory.Active, back.Status, "the survivor stays, as it was")
	require.Equal(t, sources(older), sources(back))
	require.Equal(t, older.Tags, back.Tags)
	require.Equal(t, 0.6, back.Confidence)
	require.Equal(t, older.Sensitivity, back.Sensitivity)
	require.Len(t, res.Reactivated, 1)
	require.Equal(t, newer.ID, res.Reactivated[0].ID)
	require.Equal(t, memory.Active, res.Reactivated[0].Status)
	require.Equal(t, sources(newer), sources(res.Reactivated[0]))
	actions, _ = e.audit(older.ID)
	require.Equal(t, []string{"create", revise.ActionMergeInto, "rollback"}, actions)
	actions, _ = e.audit(newer.ID)
	require.Equal(t, []string{"create", "merge", "reactivate"}, actions)

	// Nothing is left to undo: the survivor replaced nothing.
	_, err = e.w.Rollback(e.ctx, e.tenant, older.ID, 0, e.ch)
	requireConflict(t, err, revise.CodeNotAllowed)
}

// A merge whose evidence would lead back to the survivor is circular
// reinforcement: the provenance gate refuses it (write-path RFC §12.11.4).
func TestMergeIntoRefusesACycle(t *testing.T) {
	t.Parallel()
	e := newDupEnv(t)
	a := skill(0.6)
	a.Provenance.Sources = []memory.Source{{Kind: "outcome", Ref: "evt://fix-1"}}
	older := e.create(a)
	b := skill(0.6)
	b.Provenance.Sources = []memory.Source{{Kind: "outcome", Ref: "evt://fix-2"}, {Kind: "record", Ref: "record://" + older.ID.String()}}
	newer := e.create(b)

	_, err := e.w.MergeInto(e.ctx, e.tenant, older.ID, []uuid.UUID{newer.ID}, e.ch)
	var re *revise.RejectedError
	require.True(t, errors.As(err, &re), "got %v", err)
	require.Equal(t, revise.ReasonProvenanceCycle, re.Reason)
	require.Equal(t, memory.Active, e.get(newer.ID).Status, "nothing was written")
	require.Equal(t, 1, e.get(older.ID).Version)
}

// Compare tells pure duplicates from conflicts, and leaves alone what
// coexists by design: disjoint conditions, alternative procedures.
func TestCompare(t *testing.T) {
	t.Parallel()
	proc := func(skill, signal string, conds map[string]any, steps ...string) memory.Record {
		recipe := make([]any, len(steps))
		for i, s := range steps {
			recipe[i] = map[string]any{"step": s, "tool": "shell"}
		}
		trig := map[string]any{"signal": signal}
		if conds != nil {
			trig["conditions"] = conds
		}
		p, _ := json.Marshal(map[string]any{"kind": "competence", "skill_name": skill, "triggers": []any{trig}, "recipe": recipe})
		return memory.Record{Type: memory.Competence, Payload: p}
	}
	plan := func(id, intent string, ops ...string) memory.Record {
		nodes := make([]any, len(ops))
		for i, op := range ops {
			nodes[i] = map[string]any{"id": op + "-node", "op": op}
		}
		p, _ := json.Marshal(map[string]any{"kind": "plan_graph", "plan_id": id, "version": "1", "intent": intent, "nodes": nodes, "edges": []any{}})
		return memory.Record{Type: memory.PlanGraph, Payload: p}
	}
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	boxed := semantic("user", "prefers_editor", "vim", nil)
	boxed.Payload, _ = json.Marshal(map[string]any{"kind": "semantic", "subject": "user", "predicate": "prefers_editor", "object": "vim",
		"validity": map[string]any{"mode": "timeboxed", "start": at}})
	scoped := semantic("user", "prefers_editor", "vim", nil)
	scoped.Scope = "project-x"

	for name, c := range map[string]struct {
		a, b memory.Record
		want revise.Likeness
	}{
		"same fact":                      {semantic("user", "prefers_editor", "vim", nil), semantic("user", "prefers_editor", "vim", nil), revise.Duplicate},
		"same fact, other case":          {semantic("user", "prefers_editor", "Vim ", nil), semantic("user", "prefers_editor", "vim", nil), revise.Duplicate},
		"same fact, other spelling":      {semantic("User", "prefers-editor", "vim", nil), semantic("user", "prefers_editor", "vim", nil), revise.Duplicate},
		"other object":                   {semantic("user", "prefers_editor", "emacs", nil), semantic("user", "prefers_editor", "vim", nil), revise.Conflict},
		"disjoint conditions":            {semantic("user", "prefers_editor", "vim", map[string]any{"os": "linux"}), semantic("user", "prefers_editor", "emacs", map[string]any{"os": "darwin"}), revise.Apart},
		"global and timeboxed":           {semantic("user", "prefers_editor", "vim", nil), boxed, revise.Apart},
		"other predicate":                {semantic("user", "prefers_shell", "vim", nil), semantic("user", "prefers_editor", "vim", nil), revise.Different},
		"other scope":                    {scoped, semantic("user", "prefers_editor", "vim", nil), revise.Apart},
		"same procedure, other name":     {proc("fix it", "ld: cache", nil, "rm cache", "make"), proc("Fix the linker", "LD:  cache", nil, "rm  cache", "make"), revise.Duplicate},
		"same skill, other recipe":       {proc("fix it", "ld: cache", nil, "rm cache", "make"), proc("fix it", "ld: cache", nil, "make clean", "make"), revise.Conflict},
		"an alternative":                 {proc("fix it", "ld: cache", nil, "rm cache", "make"), proc("fix it #2", "ld: cache", nil, "make clean", "make"), revise.Apart},
		"a procedure per os":             {proc("fix it", "ld: cache", map[string]any{"os": "linux"}, "rm cache"), proc("fix it", "ld: cache", map[string]any{"os": "darwin"}, "xcrun"), revise.Apart},
		"other trigger":                  {proc("fix it", "ld: cache", nil, "rm cache"), proc("fix that", "npm: lock", nil, "rm cache"), revise.Different},
		"same plan id, same graph":       {plan("deploy", "deploy", "build", "push"), plan("deploy", "Deploy", "build", "push"), revise.Duplicate},
		"same plan id, other graph":      {plan("deploy", "deploy", "build", "push"), plan("deploy", "deploy", "push"), revise.Conflict},
		"another structure, same intent": {plan("deploy", "deploy", "build", "push"), plan("deploy-2", "deploy", "push"), revise.Apart},
		"same graph, other intent":       {plan("deploy", "deploy", "build", "push"), plan("release", "release", "build", "push"), revise.Different},
	} {
		got, err := revise.Compare(c.a, c.b)
		require.NoError(t, err, name)
		require.Equal(t, c.want, got.Likeness, "%s: %s", name, got.Reason)
	}
	episode := func(kind string) memory.Record {
		p, _ := json.Marshal(map[string]any{"kind": "episodic", "timeline": []any{map[string]any{"t": at, "event_kind": kind}}})
		return memory.Record{Type: memory.Episodic, Payload: p}
	}
	got, err := revise.Compare(episode("user_input"), episode("tool_call"))
	require.NoError(t, err)
	require.Equal(t, revise.Comparison{Likeness: revise.Apart, Reason: "an episodic record has no structure to compare"}, got)
}
