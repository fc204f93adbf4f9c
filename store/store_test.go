package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/store"
)

type bundle struct {
	ctx    context.Context
	pool   *pgxpool.Pool
	w      *revise.Writer
	tenant string
	ch     revise.Change
}

// setup gives a test a migrated schema of its own, with a tenant, and the
// write path over it (configured by cfg, when given).
func setup(t *testing.T, cfg ...revise.Config) *bundle {
	t.Helper()
	schema := pgtest.NewSchema(t)
	ctx := context.Background()
	require.NoError(t, store.EnsureTenant(ctx, schema.Pool, "acme"))
	w := revise.New(schema.Pool, append(cfg, revise.Config{})[0])
	return &bundle{ctx: ctx, pool: schema.Pool, w: w, tenant: "acme", ch: revise.Change{Actor: "test", Rationale: "because"}}
}

func fact(subject, predicate string, object any, conds map[string]any) memory.Record {
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

func working(thread, state string) memory.Record {
	p, _ := json.Marshal(map[string]any{"kind": "working", "thread_id": thread, "state": state})
	return memory.Record{Type: memory.Working, Payload: p}
}

func episode(events ...string) memory.Record {
	var tl []map[string]any
	for i, e := range events {
		tl = append(tl, map[string]any{"t": time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC), "event_kind": "tool_call", "ref": e})
	}
	if tl == nil {
		tl = []map[string]any{}
	}
	p, _ := json.Marshal(map[string]any{"kind": "episodic", "timeline": tl})
	return memory.Record{Type: memory.Episodic, Payload: p}
}

func competence(skill string) memory.Record {
	p, _ := json.Marshal(map[string]any{"kind": "competence", "skill_name": skill,
		"triggers": []any{map[string]any{"signal": "ld: cache mismatch"}},
		"recipe":   []any{map[string]any{"step": "clear the cache"}}})
	return memory.Record{Type: memory.Competence, Confidence: 0.6, Payload: p}
}

func plan(id string) memory.Record {
	p, _ := json.Marshal(map[string]any{"kind": "plan_graph", "plan_id": id, "version": "1",
		"nodes": []any{map[string]any{"id": "a", "op": "git_init"}, map[string]any{"id": "b", "op": "ci"}},
		"edges": []any{map[string]any{"from": "a", "to": "b", "kind": "control"}}})
	return memory.Record{Type: memory.PlanGraph, Payload: p}
}

func (b *bundle) create(t *testing.T, r memory.Record) memory.Record {
	t.Helper()
	out, err := b.w.Create(b.ctx, b.tenant, r, b.ch)
	require.NoError(t, err)
	return out
}

func (b *bundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(b.ctx, sql, args...).Scan(&n))
	return n
}

func requireConflict(t *testing.T, err error, code string) *revise.ConflictError {
	t.Helper()
	var ce *revise.ConflictError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, code, ce.Code, ce.Detail)
	return ce
}

func requireViolation(t *testing.T, err error, pointer string) {
	t.Helper()
	var ve *schemas.ValidationError
	require.ErrorAs(t, err, &ve)
	for _, v := range ve.Violations {
		if v.Pointer == pointer {
			return
		}
	}
	require.Failf(t, "no violation at pointer", "%s not in %+v", pointer, ve.Violations)
}

func TestCreateEachTypeFillsDefaults(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, r := range []memory.Record{fact("user", "prefers", "go", nil), working("th-1", "planning"), episode("e1"), competence("fix_ld"), plan("setup")} {
		got := b.create(t, r)
		require.NotEqual(t, uuid.Nil, got.ID)
		require.Equal(t, memory.Active, got.Status)
		require.Equal(t, 1, got.Version)
		require.Equal(t, memory.Low, got.Sensitivity)
		require.Equal(t, memory.DefaultDecay(r.Type), got.Lifecycle.Decay)
		require.Equal(t, memory.AutoPrune, got.Lifecycle.DeletionPolicy)

		read, err := store.Get(b.ctx, b.pool, b.tenant, got.ID)
		require.NoError(t, err)
		require.Equal(t, got.ID, read.ID)
		require.Equal(t, got.CreatedAt, read.CreatedAt)
		require.JSONEq(t, string(got.Payload), string(read.Payload))

		hist, err := store.History(b.ctx, b.pool, b.tenant, got.ID)
		require.NoError(t, err)
		require.Len(t, hist, 1)
		audit, err := store.Audit(b.ctx, b.pool, b.tenant, got.ID)
		require.NoError(t, err)
		require.Len(t, audit, 1)
		require.Equal(t, revise.ActionCreate, audit[0].Action)
		require.Equal(t, "test", audit[0].Actor)
		require.Equal(t, "because", audit[0].Rationale)
	}
}

func TestCreateRejectsBadRecordsAndStoresNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, revise.Config{MaxPayloadBytes: 1024})

	bad := fact("user", "prefers", "go", nil)
	bad.Confidence = 1.5
	_, err := b.w.Create(b.ctx, b.tenant, bad, b.ch)
	requireViolation(t, err, "/confidence")

	wrongKind := fact("user", "prefers", "go", nil)
	wrongKind.Type = memory.Competence
	_, err = b.w.Create(b.ctx, b.tenant, wrongKind, b.ch)
	require.Error(t, err)

	unknown := fact("user", "prefers", "go", nil)
	unknown.Type = "dream"
	_, err = b.w.Create(b.ctx, b.tenant, unknown, b.ch)
	requireViolation(t, err, "/type")

	noSubject := fact("", "prefers", "go", nil)
	_, err = b.w.Create(b.ctx, b.tenant, noSubject, b.ch)
	requireViolation(t, err, "/payload/subject")

	big := fact("user", "prefers", string(make([]byte, 2048)), nil)
	_, err = b.w.Create(b.ctx, b.tenant, big, b.ch)
	var tl *revise.TooLargeError
	require.ErrorAs(t, err, &tl)
	require.Equal(t, 1024, tl.Limit)

	withStatus := fact("user", "prefers", "go", nil)
	withStatus.Status = memory.Retracted
	_, err = b.w.Create(b.ctx, b.tenant, withStatus, b.ch)
	requireViolation(t, err, "/status")

	dangling := fact("user", "prefers", "go", nil)
	dangling.Relations = []memory.Relation{{Predicate: memory.Supports, TargetID: uuid.New()}}
	_, err = b.w.Create(b.ctx, b.tenant, dangling, b.ch)
	requireViolation(t, err, "/relations/0/target_id")

	require.Zero(t, b.count(t, "SELECT count(*) FROM records"))
	require.Zero(t, b.count(t, "SELECT count(*) FROM record_versions"))
	require.Zero(t, b.count(t, "SELECT count(*) FROM audit_log"))
}

func TestTenantsNeverSeeEachOther(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, store.EnsureTenant(b.ctx, b.pool, "other"))
	mine := b.create(t, fact("user", "prefers", "go", nil))

	_, err := store.Get(b.ctx, b.pool, "other", mine.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	page, err := store.List(b.ctx, b.pool, "other", store.Filter{})
	require.NoError(t, err)
	require.Empty(t, page.Records)
	_, err = b.w.Retract(b.ctx, "other", mine.ID, 0, b.ch)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = store.History(b.ctx, b.pool, "other", mine.ID)
	require.ErrorIs(t, err, store.ErrNotFound)

	// A relation cannot point into another tenant.
	theirs := fact("user", "likes", "tea", nil)
	theirs.Relations = []memory.Relation{{Predicate: memory.Supports, TargetID: mine.ID}}
	_, err = b.w.Create(b.ctx, "other", theirs, b.ch)
	requireViolation(t, err, "/relations/0/target_id")

	// The same fact in another tenant is not a duplicate.
	_, err = b.w.Create(b.ctx, "other", fact("user", "prefers", "go", nil), b.ch)
	require.NoError(t, err)
}

func TestListFiltersAndPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 7 {
		r := fact(fmt.Sprintf("s%d", i), "p", i, nil)
		r.Tags = []string{"all"}
		if i%2 == 0 {
			r.Tags = append(r.Tags, "even")
		}
		b.create(t, r)
	}
	b.create(t, working("th", "planning"))

	var seen []uuid.UUID
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 5)
		page, err := store.List(b.ctx, b.pool, b.tenant, store.Filter{Types: []memory.Type{memory.Semantic}, Limit: 3, Cursor: cursor})
		require.NoError(t, err)
		for _, r := range page.Records {
			seen = append(seen, r.ID)
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	require.Len(t, seen, 7)

	page, err := store.List(b.ctx, b.pool, b.tenant, store.Filter{Tags: []string{"all", "even"}})
	require.NoError(t, err)
	require.Len(t, page.Records, 4)

	page, err = store.List(b.ctx, b.pool, b.tenant, store.Filter{Subject: "s3", Predicate: "p"})
	require.NoError(t, err)
	require.Len(t, page.Records, 1)

	page, err = store.List(b.ctx, b.pool, b.tenant, store.Filter{Types: []memory.Type{memory.Working}})
	require.NoError(t, err)
	require.Len(t, page.Records, 1)

	_, err = store.List(b.ctx, b.pool, b.tenant, store.Filter{Cursor: "not-a-cursor"})
	require.ErrorIs(t, err, store.ErrBadCursor)
}

func TestArtifactsAreContentAddressed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a1, err := b.w.PutArtifact(b.ctx, b.tenant, "text/plain", []byte("build log"))
	require.NoError(t, err)
	a2, err := b.w.PutArtifact(b.ctx, b.tenant, "text/plain", []byte("build log"))
	require.NoError(t, err)
	require.Equal(t, a1, a2)
	require.Equal(t, int64(9), a1.Size)

	got, content, err := store.GetArtifact(b.ctx, b.pool, b.tenant, a1.SHA256)
	require.NoError(t, err)
	require.Equal(t, "build log", string(content))
	require.Equal(t, a1, got)

	_, _, err = store.GetArtifact(b.ctx, b.pool, "nobody", a1.SHA256)
	require.ErrorIs(t, err, store.ErrNotFound)

	// The database itself refuses content filed under the wrong hash.
	_, err = b.pool.Exec(b.ctx, `INSERT INTO artifacts (tenant_id, sha256, media_type, size, content)
		VALUES ('acme', sha256('x'), 'text/plain', 1, 'y')`)
	require.ErrorContains(t, err, "artifacts_content_addressed")
}

func TestCancelledRequestLeavesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.create(t, fact("user", "prefers", "go", nil))

	// Hold the record's row lock so the supersede blocks, then let its
	// context expire mid-transaction.
	tx, err := b.pool.Begin(b.ctx)
	require.NoError(t, err)
	_, err = tx.Exec(b.ctx, "SELECT 1 FROM records WHERE id = $1 FOR UPDATE", f.ID)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(b.ctx, 200*time.Millisecond)
	defer cancel()
	_, _, err = b.w.Supersede(ctx, b.tenant, f.ID, 0, fact("user", "prefers", "rust", nil), b.ch)
	require.Error(t, err)
	require.NoError(t, tx.Rollback(b.ctx))

	got, err := store.Get(b.ctx, b.pool, b.tenant, f.ID)
	require.NoError(t, err)
	require.Equal(t, memory.Active, got.Status)
	require.Equal(t, 1, got.Version)
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM records"))
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM audit_log"))
}

var _ = errors.Is
