package revise_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

// opsEnv is the write path over a migrated schema of a test's own, with a
// tenant.
type opsEnv struct {
	t      *testing.T
	ctx    context.Context
	pool   *pgxpool.Pool
	w      *revise.Writer
	tenant string
	ch     revise.Change
}

func newOpsEnv(t *testing.T) *opsEnv {
	t.Helper()
	schema := pgtest.NewSchema(t)
	ctx := context.Background()
	require.NoError(t, store.EnsureTenant(ctx, schema.Pool, "acme"))
	return &opsEnv{t: t, ctx: ctx, pool: schema.Pool, w: revise.New(schema.Pool, revise.Config{}), tenant: "acme",
		ch: revise.Change{Actor: "test", Rationale: "because"}}
}

func (e *opsEnv) create(rec memory.Record) memory.Record {
	e.t.Helper()
	out, err := e.w.Create(e.ctx, e.tenant, rec, e.ch)
	require.NoError(e.t, err)
	return out
}

func (e *opsEnv) get(id uuid.UUID) memory.Record {
	e.t.Helper()
	rec, err := store.Get(e.ctx, e.pool, e.tenant, id)
	require.NoError(e.t, err)
	return rec
}

// audit returns the actions audited on a record, and the last entry.
func (e *opsEnv) audit(id uuid.UUID) ([]string, store.AuditEntry) {
	e.t.Helper()
	entries, err := store.Audit(e.ctx, e.pool, e.tenant, id)
	require.NoError(e.t, err)
	var actions []string
	for _, a := range entries {
		actions = append(actions, a.Action)
	}
	return actions, entries[len(entries)-1]
}

func semantic(subject, predicate, object string, conds map[string]any) memory.Record {
	validity := map[string]any{"mode": "global"}
	if conds != nil {
		validity = map[string]any{"mode": "conditional", "conditions": conds}
	}
	p, _ := json.Marshal(map[string]any{
		"kind": "semantic", "subject": subject, "predicate": predicate, "object": object, "validity": validity,
	})
	return memory.Record{Type: memory.Semantic, Confidence: 0.8, Payload: p,
		Provenance: memory.Provenance{Sources: []memory.Source{{Kind: "event", Ref: "evt://" + subject}}}}
}

// skill is a procedure for the linker cache error; procedures of other
// confidence have another trigger, so that the dedup gate keeps them
// apart.
func skill(confidence float64) memory.Record {
	p, _ := json.Marshal(map[string]any{"kind": "competence", "skill_name": "fix_linker_cache",
		"triggers": []any{map[string]any{"signal": fmt.Sprintf("ld: cache mismatch (%.1f)", confidence)}},
		"recipe":   []any{map[string]any{"step": "clear the cache"}}})
	return memory.Record{Type: memory.Competence, Confidence: confidence, Payload: p}
}

func revisionOf(t *testing.T, r memory.Record) memory.Revision {
	t.Helper()
	var p memory.SemanticPayload
	require.NoError(t, json.Unmarshal(r.Payload, &p))
	if p.Revision == nil {
		return memory.Revision{}
	}
	return *p.Revision
}

func requireConflict(t *testing.T, err error, code string) *revise.ConflictError {
	t.Helper()
	var ce *revise.ConflictError
	require.True(t, errors.As(err, &ce), "want a %s conflict, got %v", code, err)
	require.Equal(t, code, ce.Code, ce.Detail)
	return ce
}

// Rolling back a supersession retracts the replacement and brings the
// fact it replaced back as a new version, active, its payload's revision
// no longer naming a successor; both are audited (write-path RFC §12.5.6).
func TestRollbackSupersede(t *testing.T) {
	t.Parallel()
	e := newOpsEnv(t)
	old := e.create(semantic("user", "prefers_editor", "vim", nil))
	_, bad, err := e.w.Supersede(e.ctx, e.tenant, old.ID, 1, semantic("user", "prefers_editor", "notepad", nil), e.ch)
	require.NoError(t, err)

	_, err = e.w.Rollback(e.ctx, e.tenant, bad.ID, 7, e.ch)
	requireConflict(t, err, revise.CodeVersionConflict)

	res, err := e.w.Rollback(e.ctx, e.tenant, bad.ID, 1, revise.Change{Actor: "ops", Rationale: "a poisoned write"})
	require.NoError(t, err)
	require.Equal(t, memory.Retracted, res.RolledBack.Status)
	require.Equal(t, 2, res.RolledBack.Version)
	require.Equal(t, "retracted", revisionOf(t, res.RolledBack).Status)
	require.Empty(t, res.Retracted)
	require.Len(t, res.Reactivated, 1)
	back := res.Reactivated[0]
	require.Equal(t, old.ID, back.ID)
	require.Equal(t, memory.Active, back.Status)
	require.Equal(t, 3, back.Version, "reactivation is a new version")
	require.Equal(t, memory.Revision{Status: "active"}, revisionOf(t, back))
	require.Equal(t, back, e.get(old.ID))

	actions, last := e.audit(bad.ID)
	require.Equal(t, []string{"create", "rollback"}, actions)
	require.Equal(t, "a poisoned write", last.Rationale)
	require.Equal(t, "ops", last.Actor)
	actions, last = e.audit(old.ID)
	require.Equal(t, []string{"create", "supersede", "reactivate"}, actions)
	require.Equal(t, "reactivated after rollback of "+bad.ID.String(), last.Rationale)
	require.Equal(t, 3, *last.Version)

	page, err := store.List(e.ctx, e.pool, e.tenant, store.Filter{Subject: "user"})
	require.NoError(t, err)
	require.Len(t, page.Records, 1)
	require.Equal(t, old.ID, page.Records[0].ID)

	_, err = e.w.Rollback(e.ctx, e.tenant, bad.ID, 0, e.ch)
	requireConflict(t, err, revise.CodeNotLive)
}

// A fact contested when it was superseded comes back contested.
func TestRollbackRestoresContested(t *testing.T) {
	t.Parallel()
	e := newOpsEnv(t)
	old := e.create(semantic("build", "cache_dir", "/tmp/a", nil))
	next := semantic("build", "cache_dir", "/tmp/b", nil)
	recs, err := e.w.Contest(e.ctx, e.tenant, []uuid.UUID{old.ID}, &next, e.ch)
	require.NoError(t, err)
	require.Equal(t, memory.Contested, recs[0].Status)
	_, bad, err := e.w.Supersede(e.ctx, e.tenant, old.ID, 0, semantic("build", "cache_dir", "/tmp/c", nil), e.ch)
	require.NoError(t, err)

	res, err := e.w.Rollback(e.ctx, e.tenant, bad.ID, 0, e.ch)
	require.NoError(t, err)
	require.Equal(t, memory.Contested, res.Reactivated[0].Status)
	require.Equal(t, "contested", revisionOf(t, res.Reactivated[0]).Status)
}

// Rolling back one variant of a fork retracts every variant of it (one
// revision made them) and reactivates the forked fact; a variant revised
// since stops it until that revision is rolled back.
func TestRollbackFork(t *testing.T) {
	t.Parallel()
	e := newOpsEnv(t)
	f := e.create(semantic("user", "prefers_language", "go", nil))
	_, variants, err := e.w.Fork(e.ctx, e.tenant, f.ID, 1, []memory.Record{
		semantic("user", "prefers_language", "go", map[string]any{"project_kind": "backend"}),
		semantic("user", "prefers_language", "python", map[string]any{"project_kind": "data"}),
	}, e.ch)
	require.NoError(t, err)
	v1, v2 := variants[0], variants[1]
	_, s, err := e.w.Supersede(e.ctx, e.tenant, v2.ID, 0, semantic("user", "prefers_language", "julia", map[string]any{"project_kind": "data"}), e.ch)
	require.NoError(t, err)

	_, err = e.w.Rollback(e.ctx, e.tenant, v1.ID, 0, e.ch)
	ce := requireConflict(t, err, revise.CodeNotAllowed)
	require.Equal(t, []uuid.UUID{v2.ID}, ce.RecordIDs)
	require.Equal(t, memory.Active, e.get(v1.ID).Status, "a refused rollback changes nothing")

	res, err := e.w.Rollback(e.ctx, e.tenant, s.ID, 0, e.ch)
	require.NoError(t, err)
	require.Equal(t, v2.ID, res.Reactivated[0].ID)

	res, err = e.w.Rollback(e.ctx, e.tenant, v1.ID, 0, e.ch)
	require.NoError(t, err)
	require.Equal(t, v1.ID, res.RolledBack.ID)
	require.Equal(t, memory.Retracted, res.RolledBack.Status)
	require.Len(t, res.Retracted, 1)
	require.Equal(t, v2.ID, res.Retracted[0].ID)
	require.Equal(t, memory.Retracted, res.Retracted[0].Status)
	require.Len(t, res.Reactivated, 1)
	require.Equal(t, f.ID, res.Reactivated[0].ID)
	require.Equal(t, memory.Active, res.Reactivated[0].Status)
	actions, _ := e.audit(v2.ID)
	require.Equal(t, []string{"create", "supersede", "reactivate", "rollback"}, actions)

	page, err := store.List(e.ctx, e.pool, e.tenant, store.Filter{Subject: "user"})
	require.NoError(t, err)
	require.Len(t, page.Records, 1)
	require.Equal(t, f.ID, page.Records[0].ID)
}

// Rolling back a merge retracts the merged record and reactivates every
// source.
func TestRollbackMerge(t *testing.T) {
	t.Parallel()
	e := newOpsEnv(t)
	a, b := e.create(skill(0.6)), e.create(skill(0.8))
	m, err := e.w.Merge(e.ctx, e.tenant, []uuid.UUID{a.ID, b.ID}, nil, e.ch)
	require.NoError(t, err)

	res, err := e.w.Rollback(e.ctx, e.tenant, m.ID, 0, e.ch)
	require.NoError(t, err)
	require.Equal(t, memory.Retracted, res.RolledBack.Status)
	var got []uuid.UUID
	for _, r := range res.Reactivated {
		require.Equal(t, memory.Active, r.Status)
		require.Equal(t, 3, r.Version)
		got = append(got, r.ID)
	}
	require.ElementsMatch(t, []uuid.UUID{a.ID, b.ID}, got)
}

// Rollback refuses when there is nothing to reactivate, when the
// predecessor was revised since, and when the reactivated fact would
// collide with another active one; a refusal changes nothing.
func TestRollbackRefusals(t *testing.T) {
	t.Parallel()
	e := newOpsEnv(t)

	lone := e.create(semantic("user", "timezone", "UTC", nil))
	_, err := e.w.Rollback(e.ctx, e.tenant, lone.ID, 0, e.ch)
	requireConflict(t, err, revise.CodeNotAllowed)

	// Revised since: the superseded fact was deleted.
	gone := e.create(semantic("user", "shell", "bash", nil))
	_, next, err := e.w.Supersede(e.ctx, e.tenant, gone.ID, 0, semantic("user", "shell", "zsh", nil), e.ch)
	require.NoError(t, err)
	_, err = e.w.Delete(e.ctx, e.tenant, gone.ID, e.ch)
	require.NoError(t, err)
	_, err = e.w.Rollback(e.ctx, e.tenant, next.ID, 0, e.ch)
	ce := requireConflict(t, err, revise.CodeNotAllowed)
	require.Equal(t, []uuid.UUID{gone.ID}, ce.RecordIDs)

	// A collision: the fact was replaced by one about something else, and
	// another took its place meanwhile.
	old := e.create(semantic("user", "prefers_editor", "vim", nil))
	_, other, err := e.w.Supersede(e.ctx, e.tenant, old.ID, 0, semantic("user", "prefers_theme", "dark", nil), e.ch)
	require.NoError(t, err)
	taken := e.create(semantic("user", "prefers_editor", "emacs", nil))
	_, err = e.w.Rollback(e.ctx, e.tenant, other.ID, 0, e.ch)
	ce = requireConflict(t, err, revise.CodeActiveFactExists)
	require.Equal(t, []uuid.UUID{taken.ID}, ce.RecordIDs)
	require.Equal(t, memory.Active, e.get(other.ID).Status)
	require.Equal(t, memory.Superseded, e.get(old.ID).Status)

	_, err = e.w.Rollback(e.ctx, "other", other.ID, 0, e.ch)
	require.ErrorIs(t, err, store.ErrNotFound)
}
