package decay_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/internal/clocktest"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

type bundle struct {
	ctx      context.Context
	db       *pgtest.Schema
	clock    *clocktest.Clock
	settings *decay.Settings
	w        *revise.Writer
	decayer  *decay.Decayer
	tenant   string
	ch       revise.Change
	// sweepCursor is kept from one sweep to the next, as job_cursors does.
	sweepCursor json.RawMessage
}

// setup is a migrated schema with a store and a decayer on one test clock,
// and tenants acme and other. cfg, when given, edits the default decay
// configuration.
func setup(t *testing.T, edit ...func(*decay.Config)) *bundle {
	t.Helper()
	db := pgtest.NewSchema(t)
	clk := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	cfg := decay.DefaultConfig()
	for _, e := range edit {
		e(&cfg)
	}
	settings, err := decay.NewSettings(cfg)
	require.NoError(t, err)
	w := revise.New(db.Pool, revise.Config{Now: clk.Now, Defaults: settings.Defaults})
	ctx := context.Background()
	for _, tenant := range []string{"acme", "other"} {
		require.NoError(t, store.EnsureTenant(ctx, db.Pool, tenant))
	}
	return &bundle{
		ctx: ctx, db: db, clock: clk, settings: settings, w: w,
		decayer: decay.New(db.Pool, w, settings, decay.WithClock(clk.Now)),
		tenant:  "acme", ch: revise.Change{Actor: "test"},
	}
}

func (b *bundle) create(t *testing.T, rec memory.Record) memory.Record {
	t.Helper()
	out, err := b.w.Create(b.ctx, b.tenant, rec, b.ch)
	require.NoError(t, err)
	return out
}

func (b *bundle) get(t *testing.T, id uuid.UUID) memory.Record {
	t.Helper()
	rec, err := store.Get(b.ctx, b.db.Pool, b.tenant, id)
	require.NoError(t, err)
	return rec
}

// sweep runs one complete sweep and returns its counts.
func (b *bundle) sweep(t *testing.T) map[string]int64 {
	t.Helper()
	p := &progress{}
	p.cursor = b.sweepCursor
	require.NoError(t, b.decayer.Sweep(b.ctx, p))
	var c struct{ After store.Key }
	require.NoError(t, json.Unmarshal(p.cursor, &c))
	require.Equal(t, store.Key{}, c.After, "a complete sweep starts the next one from the start")
	b.sweepCursor = p.cursor
	return p.counts
}

func (b *bundle) purge(t *testing.T) map[string]int64 {
	t.Helper()
	p := &progress{}
	require.NoError(t, b.decayer.Purge(b.ctx, p))
	return p.counts
}

func (b *bundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, sql, args...).Scan(&n))
	return n
}

// progress keeps a job's cursor and counts in memory, as jobs.Run keeps
// them in the database; onSave, when set, runs after each save.
type progress struct {
	mu     sync.Mutex
	cursor json.RawMessage
	counts map[string]int64
	saves  int
	onSave func(saves int)
}

func (p *progress) Cursor(_ context.Context, v any) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cursor == nil {
		return false, nil
	}
	return true, json.Unmarshal(p.cursor, v)
}

func (p *progress) SaveCursor(_ context.Context, v any) error {
	p.mu.Lock()
	p.saves++
	n := p.saves
	if v == nil {
		p.cursor = nil
	} else {
		b, err := json.Marshal(v)
		if err != nil {
			p.mu.Unlock()
			return err
		}
		p.cursor = b
	}
	p.mu.Unlock()
	if p.onSave != nil {
		p.onSave(n)
	}
	return nil
}

func (p *progress) Add(name string, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.counts == nil {
		p.counts = map[string]int64{}
	}
	p.counts[name] += n
}

func fact(subject string) memory.Record {
	p, _ := json.Marshal(map[string]any{
		"kind": "semantic", "subject": subject, "predicate": "prefers", "object": "go", "validity": map[string]any{"mode": "global"},
	})
	return memory.Record{Type: memory.Semantic, Confidence: 0.8, Salience: 1, Payload: p}
}

func episode(artifacts ...string) memory.Record {
	p, _ := json.Marshal(map[string]any{"kind": "episodic", "timeline": []any{}, "artifacts": append([]string{}, artifacts...)})
	return memory.Record{Type: memory.Episodic, Salience: 1, Payload: p}
}

func competence(skill string) memory.Record {
	p, _ := json.Marshal(map[string]any{"kind": "competence", "skill_name": skill,
		"triggers": []any{map[string]any{"signal": "ld: cache mismatch"}},
		"recipe":   []any{map[string]any{"step": "clear the cache"}}})
	return memory.Record{Type: memory.Competence, Confidence: 0.6, Salience: 1, Payload: p}
}

func plan(id string) memory.Record {
	p, _ := json.Marshal(map[string]any{"kind": "plan_graph", "plan_id": id, "version": "1",
		"nodes":   []any{map[string]any{"id": "a", "op": "git_init"}},
		"edges":   []any{},
		"metrics": map[string]any{"avg_latency_ms": 120}})
	return memory.Record{Type: memory.PlanGraph, Salience: 1, Payload: p}
}

// withDecay gives rec a profile of its own.
func withDecay(rec memory.Record, d memory.Decay) memory.Record {
	rec.Lifecycle.Decay = d
	return rec
}
