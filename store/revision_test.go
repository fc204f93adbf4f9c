package store_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

func revisionOf(t *testing.T, r memory.Record) memory.Revision {
	t.Helper()
	var p memory.SemanticPayload
	require.NoError(t, json.Unmarshal(r.Payload, &p))
	if p.Revision == nil {
		return memory.Revision{}
	}
	return *p.Revision
}

func TestOneActiveFactPerConditionSet(t *testing.T) {
	t.Parallel()
	// Under the review policy, the write path's contradiction gate refuses
	// a contradicting fact no more credible than the one in force, naming
	// it (under the default evidence policy, both would be contested).
	b := setup(t, revise.Config{Gates: revise.Gates{Contradiction: revise.ContradictionConfig{Policy: revise.PolicyReview}}})
	first := b.create(t, fact("user", "prefers_language", "go", nil))

	_, err := b.w.Create(b.ctx, b.tenant, fact("user", "prefers_language", "python", nil), b.ch)
	var re *revise.RejectedError
	require.ErrorAs(t, err, &re)
	require.Equal(t, string(revise.ReasonContradiction), re.Reason)
	require.Equal(t, []uuid.UUID{first.ID}, re.RecordIDs)

	// Other condition sets and other scopes coexist.
	b.create(t, fact("user", "prefers_language", "python", map[string]any{"project_kind": "data_science"}))
	scoped := fact("user", "prefers_language", "rust", nil)
	scoped.Scope = "project:x"
	b.create(t, scoped)

	// The database holds the invariant whatever the code does: copy the
	// active row under a new id.
	_, err = b.pool.Exec(b.ctx, `INSERT INTO records (tenant_id, id, type, status, version, sensitivity, confidence, salience,
		scope, tags, decay_curve, decay_half_life_seconds, last_reinforced_at, provenance, payload, created_at, updated_at)
		SELECT tenant_id, gen_random_uuid(), type, status, 1, sensitivity, confidence, salience, scope, tags, decay_curve,
		decay_half_life_seconds, last_reinforced_at, provenance, payload, created_at, updated_at FROM records WHERE id = $1`, first.ID)
	require.ErrorContains(t, err, "records_one_active_fact")
}

func TestSupersede(t *testing.T) {
	t.Parallel()
	b := setup(t)
	old := b.create(t, fact("user", "prefers_editor", "vim", nil))

	prev, next, err := b.w.Supersede(b.ctx, b.tenant, old.ID, 1, fact("user", "prefers_editor", "helix", nil), b.ch)
	require.NoError(t, err)
	require.Equal(t, memory.Superseded, prev.Status)
	require.Equal(t, 2, prev.Version)
	require.Equal(t, memory.Active, next.Status)
	require.Equal(t, []memory.Relation{{Predicate: memory.Supersedes, TargetID: old.ID}}, next.Relations)
	require.Equal(t, next.ID.String(), revisionOf(t, prev).SupersededBy)
	require.Equal(t, old.ID.String(), revisionOf(t, next).Supersedes)

	got, err := store.Get(b.ctx, b.pool, b.tenant, next.ID)
	require.NoError(t, err)
	require.Equal(t, next.Relations, got.Relations)

	page, err := store.List(b.ctx, b.pool, b.tenant, store.Filter{Subject: "user"})
	require.NoError(t, err)
	require.Len(t, page.Records, 1, "the superseded fact has left the active set")
	require.Equal(t, next.ID, page.Records[0].ID)

	_, _, err = b.w.Supersede(b.ctx, b.tenant, old.ID, 0, fact("user", "prefers_editor", "emacs", nil), b.ch)
	requireConflict(t, err, revise.CodeNotLive)
	_, _, err = b.w.Supersede(b.ctx, b.tenant, next.ID, 7, fact("user", "prefers_editor", "emacs", nil), b.ch)
	requireConflict(t, err, revise.CodeVersionConflict)

	edges, err := store.Relations(b.ctx, b.pool, b.tenant, old.ID)
	require.NoError(t, err)
	require.Len(t, edges, 1)
	require.Equal(t, next.ID, edges[0].SourceID)
}

func TestSupersedeIsAtomic(t *testing.T) {
	t.Parallel()
	b := setup(t)
	old := b.create(t, fact("user", "prefers_editor", "vim", nil))
	bad := fact("user", "prefers_editor", "helix", nil)
	bad.Confidence = 7 // fails validation after the old record was already moved in the transaction

	_, _, err := b.w.Supersede(b.ctx, b.tenant, old.ID, 0, bad, b.ch)
	requireViolation(t, err, "/record/confidence")

	got, err := store.Get(b.ctx, b.pool, b.tenant, old.ID)
	require.NoError(t, err)
	require.Equal(t, memory.Active, got.Status)
	require.Equal(t, 1, got.Version)
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM record_versions"))
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM audit_log"))
}

func TestForkByDisjointConditions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	orig := b.create(t, fact("user", "prefers_language", "go", nil))

	// Overlapping variants are refused and nothing changes.
	_, _, err := b.w.Fork(b.ctx, b.tenant, orig.ID, 0, []memory.Record{
		fact("user", "prefers_language", "go", map[string]any{"project_kind": "backend"}),
		fact("user", "prefers_language", "python", map[string]any{"os": "linux"}),
	}, b.ch)
	requireViolation(t, err, "/variants/1/payload/validity/conditions")
	_, _, err = b.w.Fork(b.ctx, b.tenant, orig.ID, 0, []memory.Record{
		fact("user", "prefers_language", "go", map[string]any{"project_kind": "backend"}),
		fact("someone", "likes", "python", map[string]any{"project_kind": "data"}),
	}, b.ch)
	requireViolation(t, err, "/variants/1/payload/subject")
	requireViolation(t, err, "/variants/1/payload/predicate")
	got, err := store.Get(b.ctx, b.pool, b.tenant, orig.ID)
	require.NoError(t, err)
	require.Equal(t, memory.Active, got.Status)

	prev, variants, err := b.w.Fork(b.ctx, b.tenant, orig.ID, 1, []memory.Record{
		fact("user", "prefers_language", "go", map[string]any{"project_kind": "backend"}),
		fact("user", "prefers_language", "python", map[string]any{"project_kind": "data_science"}),
	}, b.ch)
	require.NoError(t, err)
	require.Equal(t, memory.Superseded, prev.Status)
	require.Len(t, variants, 2)
	for _, v := range variants {
		require.Equal(t, memory.Active, v.Status)
		require.Equal(t, []memory.Relation{{Predicate: memory.ForkedFrom, TargetID: orig.ID}}, v.Relations)
	}
	page, err := store.List(b.ctx, b.pool, b.tenant, store.Filter{Subject: "user", Predicate: "prefers_language"})
	require.NoError(t, err)
	require.Len(t, page.Records, 2)

	// Supersede one branch; the other stays.
	_, next, err := b.w.Supersede(b.ctx, b.tenant, variants[1].ID, 0,
		fact("user", "prefers_language", "julia", map[string]any{"project_kind": "data_science"}), b.ch)
	require.NoError(t, err)
	page, err = store.List(b.ctx, b.pool, b.tenant, store.Filter{Subject: "user", Predicate: "prefers_language"})
	require.NoError(t, err)
	require.ElementsMatch(t, []uuid.UUID{variants[0].ID, next.ID}, []uuid.UUID{page.Records[0].ID, page.Records[1].ID})

	_, _, err = b.w.Fork(b.ctx, b.tenant, b.create(t, working("th", "planning")).ID, 0, variants, b.ch)
	requireConflict(t, err, revise.CodeNotAllowed)
}

func TestContestAndRetract(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.create(t, fact("deploy", "target", "k8s", nil))

	recs, err := b.w.Contest(b.ctx, b.tenant, []uuid.UUID{a.ID}, ptr(fact("deploy", "target", "nomad", nil)), b.ch)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	for _, r := range recs {
		require.Equal(t, memory.Contested, r.Status)
		require.Equal(t, "contested", revisionOf(t, r).Status)
		require.Len(t, r.Relations, 1)
		require.Equal(t, memory.Contradicts, r.Relations[0].Predicate)
	}
	require.Equal(t, recs[1].ID, recs[0].Relations[0].TargetID)

	// Contested facts are live but not active: a resolution may be created.
	page, err := store.List(b.ctx, b.pool, b.tenant, store.Filter{Subject: "deploy"})
	require.NoError(t, err)
	require.Len(t, page.Records, 2)

	r, err := b.w.Retract(b.ctx, b.tenant, recs[1].ID, 0, b.ch)
	require.NoError(t, err)
	require.Equal(t, memory.Retracted, r.Status)
	require.Equal(t, "retracted", revisionOf(t, r).Status)
	_, _, err = b.w.Supersede(b.ctx, b.tenant, recs[0].ID, 0, fact("deploy", "target", "k8s", nil), b.ch)
	require.NoError(t, err)

	_, err = b.w.Contest(b.ctx, b.tenant, []uuid.UUID{a.ID}, nil, b.ch)
	requireViolation(t, err, "/record_ids")
	_, err = b.w.Contest(b.ctx, b.tenant, []uuid.UUID{recs[0].ID, recs[1].ID}, nil, b.ch)
	requireConflict(t, err, revise.CodeNotLive)
}

func TestMerge(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c1 := competence("fix_ld")
	c1.Confidence, c1.Sensitivity, c1.Tags = 0.4, memory.High, []string{"build"}
	c1.CreatedAt = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c1.Provenance = memory.Provenance{Sources: []memory.Source{{Kind: "event", Ref: "evt://1"}}}
	c2 := competence("fix_linker")
	c2.Confidence, c2.Sensitivity, c2.Tags = 0.9, memory.Low, []string{"linker"}
	c2.Provenance = memory.Provenance{Sources: []memory.Source{{Kind: "event", Ref: "evt://1"}, {Kind: "tool_call", Ref: "tool://2"}}}
	r1, r2 := b.create(t, c1), b.create(t, c2)

	m, err := b.w.Merge(b.ctx, b.tenant, []uuid.UUID{r1.ID, r2.ID}, nil, b.ch)
	require.NoError(t, err)
	require.Equal(t, 0.9, m.Confidence)
	require.Equal(t, memory.High, m.Sensitivity, "a merge never lowers sensitivity")
	require.Equal(t, c1.CreatedAt, m.CreatedAt)
	require.Equal(t, []string{"build", "linker"}, m.Tags)
	require.Len(t, m.Provenance.Sources, 2)
	require.JSONEq(t, string(r2.Payload), string(m.Payload))

	for _, id := range []uuid.UUID{r1.ID, r2.ID} {
		got, err := store.Get(b.ctx, b.pool, b.tenant, id)
		require.NoError(t, err)
		require.Equal(t, memory.Merged, got.Status)
		require.Equal(t, []memory.Relation{{Predicate: memory.MergedInto, TargetID: m.ID}}, got.Relations)
	}

	_, err = b.w.Merge(b.ctx, b.tenant, []uuid.UUID{m.ID, b.create(t, plan("p")).ID}, nil, b.ch)
	requireConflict(t, err, revise.CodeNotAllowed)
	_, err = b.w.Merge(b.ctx, b.tenant, []uuid.UUID{m.ID, m.ID}, nil, b.ch)
	requireViolation(t, err, "/record_ids/1")
}

func TestUpdateWorkingMemoryOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := b.create(t, working("th-1", "planning"))
	next := json.RawMessage(`{"kind":"working","thread_id":"th-1","state":"executing","next_actions":["write docs"]}`)

	got, err := b.w.Update(b.ctx, b.tenant, w.ID, 1, next, []string{"frontend"}, b.ch)
	require.NoError(t, err)
	require.Equal(t, 2, got.Version)
	require.Equal(t, []string{"frontend"}, got.Tags)
	require.JSONEq(t, string(next), string(got.Payload))

	_, err = b.w.Update(b.ctx, b.tenant, w.ID, 1, next, nil, b.ch)
	requireConflict(t, err, revise.CodeVersionConflict)

	_, err = b.w.Update(b.ctx, b.tenant, w.ID, 2, json.RawMessage(`{"kind":"working","thread_id":"th-1","state":"dreaming"}`), nil, b.ch)
	requireViolation(t, err, "/payload/state")

	f := b.create(t, fact("user", "prefers", "go", nil))
	_, err = b.w.Update(b.ctx, b.tenant, f.ID, 1, f.Payload, nil, b.ch)
	requireConflict(t, err, revise.CodeNotAllowed)
}

func TestEpisodesOnlyGrow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.create(t, episode("evt://1", "evt://2"))

	got, err := b.w.AppendEpisode(b.ctx, b.tenant, e.ID, revise.EpisodeAppend{
		Timeline: []memory.TimelineEntry{{T: time.Now().UTC(), EventKind: "error", Ref: "evt://3"}},
		Outcome:  "failure",
	}, b.ch)
	require.NoError(t, err)
	var p memory.EpisodicPayload
	require.NoError(t, json.Unmarshal(got.Payload, &p))
	require.Len(t, p.Timeline, 3)
	require.Equal(t, "failure", p.Outcome)

	_, err = b.w.AppendEpisode(b.ctx, b.tenant, e.ID, revise.EpisodeAppend{Outcome: "success"}, b.ch)
	requireConflict(t, err, revise.CodeImmutable)

	// Revision operations do not apply to episodes.
	_, err = b.w.Retract(b.ctx, b.tenant, e.ID, 0, b.ch)
	requireConflict(t, err, revise.CodeNotAllowed)
	_, _, err = b.w.Supersede(b.ctx, b.tenant, e.ID, 0, episode("evt://9"), b.ch)
	requireConflict(t, err, revise.CodeNotAllowed)

	// The database refuses any edit that is not an append, whatever the code does.
	for _, edit := range []string{
		`jsonb_set(payload, '{timeline,0,ref}', '"evt://forged"')`,
		`jsonb_set(payload, '{timeline}', (payload->'timeline') - 0)`,
		`jsonb_set(payload, '{outcome}', '"success"')`,
	} {
		_, err = b.pool.Exec(b.ctx, `UPDATE records SET payload = `+edit+`, version = version + 1 WHERE id = $1`, e.ID)
		require.ErrorContains(t, err, "episodic record", edit)
	}
	_, err = b.pool.Exec(b.ctx, `UPDATE records SET payload = jsonb_set(payload, '{timeline}', (payload->'timeline') || '[{"t":"2026-01-01T00:00:00Z","event_kind":"x","ref":"evt://4"}]'), version = version + 1 WHERE id = $1`, e.ID)
	require.NoError(t, err, "appending is allowed")
}

func TestDeleteThenPurge(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.create(t, fact("user", "secret_project", "apollo", nil))
	g := fact("user", "likes", "tea", nil)
	g.Relations = []memory.Relation{{Predicate: memory.Supports, TargetID: f.ID}}
	g = b.create(t, g)

	require.Error(t, b.w.Purge(b.ctx, b.tenant, f.ID, b.ch), "an active record is not purged")

	d, err := b.w.Delete(b.ctx, b.tenant, f.ID, b.ch)
	require.NoError(t, err)
	require.Equal(t, memory.Deleted, d.Status)
	page, err := store.List(b.ctx, b.pool, b.tenant, store.Filter{Subject: "user"})
	require.NoError(t, err)
	require.Len(t, page.Records, 1)

	require.NoError(t, b.w.Purge(b.ctx, b.tenant, f.ID, b.ch))
	_, err = store.Get(b.ctx, b.pool, b.tenant, f.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = store.History(b.ctx, b.pool, b.tenant, f.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Zero(t, b.count(t, "SELECT count(*) FROM relations WHERE target_id = $1", f.ID))
	require.Zero(t, b.count(t, "SELECT count(*) FROM record_versions WHERE snapshot::text LIKE '%apollo%'"))

	audit, err := store.Audit(b.ctx, b.pool, b.tenant, f.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"create", "delete", "purge"}, []string{audit[0].Action, audit[1].Action, audit[2].Action})

	never := fact("user", "birthday", "june", nil)
	never.Lifecycle.DeletionPolicy = memory.Never
	never = b.create(t, never)
	_, err = b.w.Delete(b.ctx, b.tenant, never.ID, b.ch)
	requireConflict(t, err, revise.CodeNotAllowed)
}

func TestPointInTimeReads(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.create(t, fact("user", "prefers_editor", "vim", nil))
	before := time.Now()
	_, next, err := b.w.Supersede(b.ctx, b.tenant, f.ID, 0, fact("user", "prefers_editor", "helix", nil), b.ch)
	require.NoError(t, err)

	then, err := store.GetAsOf(b.ctx, b.pool, b.tenant, f.ID, before)
	require.NoError(t, err)
	require.Equal(t, memory.Active, then.Status)
	require.Equal(t, 1, then.Version)
	require.JSONEq(t, string(f.Payload), string(then.Payload))

	_, err = store.GetAsOf(b.ctx, b.pool, b.tenant, next.ID, before)
	require.ErrorIs(t, err, store.ErrNotFound, "the new fact did not exist yet")

	page, err := store.List(b.ctx, b.pool, b.tenant, store.Filter{AsOf: &before})
	require.NoError(t, err)
	require.Len(t, page.Records, 1)
	require.Equal(t, f.ID, page.Records[0].ID)
	require.Empty(t, page.Records[0].Relations)

	now := time.Now()
	page, err = store.List(b.ctx, b.pool, b.tenant, store.Filter{AsOf: &now})
	require.NoError(t, err)
	require.Len(t, page.Records, 1)
	require.Equal(t, next.ID, page.Records[0].ID)

	hist, err := store.History(b.ctx, b.pool, b.tenant, f.ID)
	require.NoError(t, err)
	require.Len(t, hist, 2)
	require.Equal(t, memory.Active, hist[0].Record.Status)
	require.Equal(t, memory.Superseded, hist[1].Record.Status)
}

func TestLogsAreAppendOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.create(t, fact("user", "prefers", "go", nil))
	for _, sql := range []string{
		`UPDATE record_versions SET snapshot = '{}' WHERE record_id = $1`,
		`DELETE FROM record_versions WHERE record_id = $1`,
		`UPDATE audit_log SET actor = 'someone else' WHERE record_id = $1`,
		`DELETE FROM audit_log WHERE record_id = $1`,
	} {
		_, err := b.pool.Exec(b.ctx, sql, f.ID)
		require.ErrorContains(t, err, "append-only", sql)
	}
	_, err := b.pool.Exec(b.ctx, `TRUNCATE audit_log`)
	require.ErrorContains(t, err, "append-only")

	// A revision must advance the version, which writes a snapshot.
	_, err = b.pool.Exec(b.ctx, `UPDATE records SET status = 'retracted' WHERE id = $1`, f.ID)
	require.ErrorContains(t, err, "must advance the version")
	_, err = b.pool.Exec(b.ctx, `UPDATE records SET type = 'working' WHERE id = $1`, f.ID)
	require.ErrorContains(t, err, "immutable")
	_, err = b.pool.Exec(b.ctx, `UPDATE records SET status = 'retracted', version = version + 1 WHERE id = $1`, f.ID)
	require.NoError(t, err)
	require.Equal(t, 2, b.count(t, "SELECT count(*) FROM record_versions WHERE record_id = $1", f.ID))
}

func ptr[T any](v T) *T { return &v }

func TestAppendedEntriesAreImmutableRowsAndReadAsOf(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.create(t, episode("evt://1"))
	_, err := b.w.AppendEpisode(b.ctx, b.tenant, e.ID, revise.EpisodeAppend{
		Timeline: []memory.TimelineEntry{{T: time.Now().UTC(), EventKind: "tool_call", Ref: "evt://2"}},
	}, b.ch)
	require.NoError(t, err)
	between := time.Now()
	got, err := b.w.AppendEpisode(b.ctx, b.tenant, e.ID, revise.EpisodeAppend{
		Timeline:  []memory.TimelineEntry{{T: time.Now().UTC(), EventKind: "outcome", Ref: "evt://3"}},
		ToolGraph: []map[string]any{{"tool": "make"}},
	}, b.ch)
	require.NoError(t, err)
	var p memory.EpisodicPayload
	require.NoError(t, json.Unmarshal(got.Payload, &p))
	require.Equal(t, []string{"evt://1", "evt://2", "evt://3"}, []string{p.Timeline[0].Ref, p.Timeline[1].Ref, p.Timeline[2].Ref})
	require.Len(t, p.ToolGraph, 1)
	require.Equal(t, 1, got.Version, "appending entries is not a revision of the record")

	then, err := store.GetAsOf(b.ctx, b.pool, b.tenant, e.ID, between)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(then.Payload, &p))
	require.Len(t, p.Timeline, 2, "as of then, the third entry was not there yet")

	for _, sql := range []string{
		`UPDATE episode_entries SET entry = '{"ref": "evt://forged"}' WHERE record_id = $1`,
		`DELETE FROM episode_entries WHERE record_id = $1`,
	} {
		_, err := b.pool.Exec(b.ctx, sql, e.ID)
		require.ErrorContains(t, err, "append-only", sql)
	}
	_, err = b.w.Delete(b.ctx, b.tenant, e.ID, b.ch)
	require.NoError(t, err)
	require.NoError(t, b.w.Purge(b.ctx, b.tenant, e.ID, b.ch))
	require.Zero(t, b.count(t, "SELECT count(*) FROM episode_entries"), "a purge takes the entries with it")
}
