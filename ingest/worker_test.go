package ingest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/policy"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

type bundle struct {
	ctx    context.Context
	db     *pgtest.Schema
	ingest *ingest.Ingester
	worker *ingest.Worker
}

func setup(t *testing.T, policyYAML string, opts ...func(*ingest.WorkerConfig)) *bundle {
	t.Helper()
	db := pgtest.NewSchema(t)
	ctx := context.Background()
	require.NoError(t, store.EnsureTenant(ctx, db.Pool, "acme"))
	pol, err := policy.Parse([]byte(policyYAML), "test")
	require.NoError(t, err)
	cfg := ingest.WorkerConfig{DB: db.Pool, Policy: pol, Partitions: 2, BatchSize: 100}
	for _, o := range opts {
		o(&cfg)
	}
	w := ingest.NewWorker(cfg)
	in := ingest.New(ingest.Config{DB: db.Pool, Policy: w.Policy})
	return &bundle{ctx: ctx, db: db, ingest: in, worker: w}
}

func setupB(tb testing.TB) *bundle {
	db := pgtest.NewSchema(tb)
	ctx := context.Background()
	require.NoError(tb, store.EnsureTenant(ctx, db.Pool, "acme"))
	w := ingest.NewWorker(ingest.WorkerConfig{DB: db.Pool, Partitions: 2, BatchSize: 1000})
	return &bundle{ctx: ctx, db: db, ingest: ingest.New(ingest.Config{DB: db.Pool, Policy: w.Policy}), worker: w}
}

func (b *bundle) send(t *testing.T, events ...map[string]any) []store.Staged {
	t.Helper()
	raws := make([]json.RawMessage, len(events))
	for i, e := range events {
		raws[i], _ = json.Marshal(e)
	}
	staged, err := b.ingest.Ingest(b.ctx, "acme", raws)
	require.NoError(t, err)
	return staged
}

// drain runs every partition until nothing is pending.
func (b *bundle) drain(t *testing.T) {
	t.Helper()
	_, err := b.worker.Drain(b.ctx)
	require.NoError(t, err)
}

func (b *bundle) candidate(t *testing.T, id uuid.UUID) (status string, records []uuid.UUID, decision policy.Decision) {
	t.Helper()
	var raw []byte
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, `SELECT status, record_ids, COALESCE(decision, '{}') FROM candidates WHERE id = $1`, id).Scan(&status, &records, &raw))
	require.NoError(t, json.Unmarshal(raw, &decision))
	return status, records, decision
}

func (b *bundle) episode(t *testing.T, id uuid.UUID) (memory.Record, memory.EpisodicPayload) {
	t.Helper()
	rec, err := store.Get(b.ctx, b.db.Pool, "acme", id)
	require.NoError(t, err)
	var p memory.EpisodicPayload
	require.NoError(t, json.Unmarshal(rec.Payload, &p))
	return rec, p
}

func ev(kind, thread string, fields map[string]any) map[string]any {
	e := map[string]any{"kind": kind, "agent_id": "agent-1", "thread_id": thread}
	for k, v := range fields {
		e[k] = v
	}
	return e
}

func TestEpisodesAndWorkingMemoryPerThread(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) string { return t0.Add(time.Duration(s) * time.Second).Format(time.RFC3339) }
	staged := b.send(t,
		ev("user_input", "t1", map[string]any{"text": "build the project", "time": at(0), "environment": map[string]any{"os": "linux"}}),
		ev("tool_call", "t1", map[string]any{"tool": map[string]any{"name": "make", "arguments": []string{"build"}}, "time": at(1)}),
		ev("user_input", "t2", map[string]any{"text": "other task", "time": at(1)}),
		ev("error", "t1", map[string]any{"error": map[string]any{"message": "ld: cache mismatch"}, "time": at(2)}),
		ev("outcome", "t1", map[string]any{"outcome": map[string]any{"status": "failure", "summary": "gave up"}, "time": at(3)}),
		ev("observation", "t1", map[string]any{"text": "a new attempt", "time": at(4)}),
	)
	b.drain(t)

	status, recs, d := b.candidate(t, staged[0].ID)
	require.Equal(t, store.CandidateDone, status)
	require.Equal(t, memory.Episodic, d.Type)
	require.Equal(t, memory.Medium, d.Sensitivity, "user input is the user's")
	ep, p := b.episode(t, recs[0])
	require.Equal(t, memory.Medium, ep.Sensitivity)
	require.Equal(t, "failure", p.Outcome)
	var kinds []string
	for _, e := range p.Timeline {
		kinds = append(kinds, e.EventKind)
	}
	require.Equal(t, []string{"user_input", "tool_call", "error", "outcome", "working_memory"}, kinds, "in order, closed with the working memory's last state")
	require.Equal(t, "evt://"+staged[1].ID.String(), p.Timeline[1].Ref)
	require.Len(t, p.ToolGraph, 1)
	require.Equal(t, "linux", p.Environment["os"])

	// The closed thread's working memory was discarded; the event after the
	// outcome opened a new episode with a new working memory.
	first, err := store.List(b.ctx, b.db.Pool, "acme", store.Filter{Types: []memory.Type{memory.Working}, Statuses: memory.Statuses})
	require.NoError(t, err)
	require.Len(t, first.Records, 3) // t1 (deleted), t1 second generation, t2
	_, recs5, _ := b.candidate(t, staged[5].ID)
	require.NotEqual(t, recs[0], recs5[0])
	thread, err := store.LatestThread(b.ctx, b.db.Pool, "acme", "t1")
	require.NoError(t, err)
	require.Equal(t, 2, thread.Generation)
	require.Equal(t, "open", thread.Status)
	wm, err := store.Get(b.ctx, b.db.Pool, "acme", *thread.WorkingID)
	require.NoError(t, err)
	require.Equal(t, memory.Active, wm.Status)
}

func TestFactsBecomeSemanticRecords(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	fact := func(object string, key string) map[string]any {
		return ev("fact", "t1", map[string]any{"idempotency_key": key, "fact": map[string]any{
			"subject": "repo", "predicate": "build_tool", "object": object, "conditions": map[string]any{"os": "linux"}}})
	}
	staged := b.send(t, fact("make", "k1"))
	b.drain(t)
	_, recs, d := b.candidate(t, staged[0].ID)
	require.Equal(t, memory.Semantic, d.Type)
	require.Len(t, recs, 2)
	f, err := store.Get(b.ctx, b.db.Pool, "acme", recs[1])
	require.NoError(t, err)
	require.Equal(t, 0.7, f.Confidence)
	require.Equal(t, []memory.Relation{{Predicate: memory.DerivedFrom, TargetID: recs[0]}}, f.Relations)

	// The same fact again is absorbed into the existing record; a
	// contradicting one no more credible is refused by the write path's
	// contradiction gate (write-path RFC §12.2.4), and its event stays
	// classified, in its episode.
	again := b.send(t, fact("make", "k2"), fact("bazel", "k3"))
	b.drain(t)
	_, recsAgain, _ := b.candidate(t, again[0].ID)
	require.Equal(t, f.ID, recsAgain[1])
	status, recsNew, _ := b.candidate(t, again[1].ID)
	require.Equal(t, store.CandidateDone, status)
	require.Equal(t, []uuid.UUID{recs[0]}, recsNew, "the episode only")
	f, err = store.Get(b.ctx, b.db.Pool, "acme", f.ID)
	require.NoError(t, err)
	require.Equal(t, memory.Active, f.Status)

	// With the contradiction policy contest, the same event contests it.
	b.worker = ingest.NewWorker(ingest.WorkerConfig{DB: b.db.Pool, Partitions: 2, BatchSize: 100,
		Writer: revise.New(b.db.Pool, revise.Config{Gates: revise.Gates{Contradiction: revise.ContradictionConfig{Policy: revise.PolicyContest}}})})
	contest := b.send(t, fact("bazel", "k4"))
	b.drain(t)
	_, recsNew, _ = b.candidate(t, contest[0].ID)
	require.Len(t, recsNew, 2)
	contested, err := store.Get(b.ctx, b.db.Pool, "acme", recsNew[1])
	require.NoError(t, err)
	require.Equal(t, memory.Contested, contested.Status)
	f, err = store.Get(b.ctx, b.db.Pool, "acme", f.ID)
	require.NoError(t, err)
	require.Equal(t, memory.Contested, f.Status)
}

func TestRulesOverrideTheClassifier(t *testing.T) {
	t.Parallel()
	b := setup(t, `
rules:
  - name: drop-heartbeats
    match: {kind: [observation], tags: [heartbeat]}
    drop: true
  - name: prod-is-high
    match: {environment: {env: prod}}
    set: {sensitivity: high, scope: "project:infra", visibility: agent}
  - name: facts-stay-in-episode
    match: {kind: [fact], content: "(?i)rumou?r"}
    set: {type: episodic, confidence: 0.1}
`)
	staged := b.send(t,
		ev("observation", "t1", map[string]any{"text": "ping", "tags": []string{"heartbeat"}}),
		ev("tool_call", "t1", map[string]any{"tool": map[string]any{"name": "terraform"}, "environment": map[string]any{"env": "prod"}}),
		ev("fact", "t1", map[string]any{"fact": map[string]any{"subject": "office", "predicate": "moves", "object": "a rumour"}}),
	)
	b.drain(t)

	status, recs, d := b.candidate(t, staged[0].ID)
	require.Equal(t, store.CandidateDropped, status)
	require.Empty(t, recs)
	require.Equal(t, []string{"drop-heartbeats"}, d.Rules)

	_, recs, d = b.candidate(t, staged[1].ID)
	require.Equal(t, memory.High, d.Sensitivity)
	require.Equal(t, "project:infra", d.Scope)
	require.Equal(t, policy.VisibilityAgent, d.Visibility)
	require.Equal(t, []string{"prod-is-high"}, d.Rules)
	// The records keep the decision: the thread's episode is the agent's
	// alone, and names where it came from.
	require.NotEmpty(t, recs)
	ep, _ := b.episode(t, recs[0])
	require.Equal(t, memory.VisibilityAgent, ep.Visibility)
	require.Equal(t, "agent-1", ep.AgentID)
	require.Equal(t, "t1", ep.ThreadID)

	_, recs, d = b.candidate(t, staged[2].ID)
	require.Equal(t, memory.Episodic, d.Type)
	require.Equal(t, 0.1, d.Confidence)
	require.Len(t, recs, 1, "kept in the episode only")
}

func TestPoisonEventEndsDeadAndOthersPass(t *testing.T) {
	t.Parallel()
	// A rule whose decay profile no record can pass: a custom curve's
	// points go in order of age. Classification of those facts fails
	// every time.
	b := setup(t, `
rules:
  - name: broken
    match: {kind: [fact]}
    set: {decay: {curve: custom, half_life_seconds: 60, points: [{age_seconds: 60, salience: 0.5}, {age_seconds: 30, salience: 0.2}]}}
`, func(c *ingest.WorkerConfig) { c.MaxAttempts = 1 })
	staged := b.send(t,
		ev("user_input", "t1", map[string]any{"text": "hello"}),
		ev("fact", "t1", map[string]any{"fact": map[string]any{"subject": "a", "predicate": "b", "object": "c"}}),
		ev("user_input", "t1", map[string]any{"text": "still here"}),
	)
	b.drain(t)
	status, _, _ := b.candidate(t, staged[0].ID)
	require.Equal(t, store.CandidateDone, status)
	status, _, _ = b.candidate(t, staged[2].ID)
	require.Equal(t, store.CandidateDone, status)
	dead, err := store.Candidates(b.ctx, b.db.Pool, "acme", store.CandidateDead, 0, 10)
	require.NoError(t, err)
	require.Len(t, dead, 1)
	require.Equal(t, staged[1].ID, dead[0].ID)
	require.Contains(t, dead[0].LastError, "decay")
}

func TestBadPolicyIsRefusedWithRuleAndField(t *testing.T) {
	t.Parallel()
	for want, yaml := range map[string]string{
		"rules[0] (x).set.sensitivity":   "rules: [{name: x, set: {sensitivity: secret}}]",
		"rules[1].name":                  "rules: [{name: x, drop: true}, {drop: true}]",
		"rules[0] (x).match.content":     "rules: [{name: x, match: {content: '('}, drop: true}]",
		"rules[0] (x).match.kind":        "rules: [{name: x, match: {kind: [dream]}, drop: true}]",
		"rules[0] (x).set.type":          "rules: [{name: x, set: {type: semantic}}]",
		"rules[0] (x).set.confidence":    "rules: [{name: x, set: {confidence: 2}}]",
		"secrets.on_secret":              "secrets: {on_secret: shout}",
		"rules[0] (x).set.decay.half_li": "rules: [{name: x, set: {decay: {curve: linear}}}]",
		"field nope not found":           "nope: 1",
	} {
		_, err := policy.Parse([]byte(yaml), "test")
		require.ErrorContains(t, err, want, yaml)
	}
}

func TestWorkerStartStop(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	require.NoError(t, b.worker.Start(b.ctx))
	var staged []store.Staged
	for i := range 20 {
		staged = append(staged, b.send(t, ev("observation", fmt.Sprintf("t%d", i%3), map[string]any{"text": fmt.Sprint(i)}))...)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, _, err := store.Backlog(b.ctx, b.db.Pool)
		require.NoError(t, err)
		if n == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the worker never drained the backlog")
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, b.worker.Stop(b.ctx))
	require.NoError(t, b.worker.Stop(b.ctx), "stopping twice is safe")
	status, _, _ := b.candidate(t, staged[19].ID)
	require.Equal(t, store.CandidateDone, status)
}

// Records the policy plane writes get the daemon's configuration through
// the write path: its deletion policy and decay profile for their type,
// and its payload limit (issue 10: a store bound to the batch's
// transaction lost both, writing auto_prune and allowing 64 KiB).
func TestPolicyPlaneWritesWithTheConfiguredWritePath(t *testing.T) {
	t.Parallel()
	keep := memory.Decay{Curve: memory.Linear, HalfLifeSeconds: 3600}
	writer := func(db *pgtest.Schema) *revise.Writer {
		return revise.New(db.Pool, revise.Config{MaxPayloadBytes: 1024,
			Defaults: func(memory.Type) (memory.Decay, memory.DeletionPolicy) { return keep, memory.Never }})
	}
	b := setup(t, "", func(c *ingest.WorkerConfig) { c.MaxAttempts = 1 })
	b.worker = ingest.NewWorker(ingest.WorkerConfig{DB: b.db.Pool, Writer: writer(b.db), Partitions: 2, BatchSize: 100, MaxAttempts: 1})
	staged := b.send(t,
		ev("observation", "t1", map[string]any{"text": "hello"}),
		ev("fact", "t1", map[string]any{"fact": map[string]any{"subject": "db", "predicate": "host", "object": "db-1"}}),
		ev("fact", "t1", map[string]any{"fact": map[string]any{"subject": "db", "predicate": "notes", "object": strings.Repeat("long ", 400)}}),
	)
	b.drain(t)

	_, ids, _ := b.candidate(t, staged[1].ID)
	require.Len(t, ids, 2, "the episode and the fact")
	for _, id := range ids {
		rec, err := store.Get(b.ctx, b.db.Pool, "acme", id)
		require.NoError(t, err)
		require.Equal(t, memory.Never, rec.Lifecycle.DeletionPolicy, "%s record", rec.Type)
		require.Equal(t, keep, rec.Lifecycle.Decay, "%s record", rec.Type)
	}
	status, _, _ := b.candidate(t, staged[2].ID)
	require.Equal(t, store.CandidateDead, status, "a fact over the configured payload limit is refused")
	dead, err := store.Candidates(b.ctx, b.db.Pool, "acme", store.CandidateDead, 0, 10)
	require.NoError(t, err)
	require.Contains(t, dead[0].LastError, "over the limit of 1024")
}

// isolations counts the batches the worker had to retry event by event.
type isolations struct{ n atomic.Int64 }

func (h *isolations) Enabled(context.Context, slog.Level) bool { return true }
func (h *isolations) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *isolations) WithGroup(string) slog.Handler            { return h }
func (h *isolations) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "isolating") {
		h.n.Add(1)
	}
	return nil
}

// Threads of both partitions reporting the same facts at once: the second
// partition to write a fact waits for the first and sees its record,
// instead of failing its whole batch on the one-active-fact index and
// retrying it event by event.
func TestPartitionsShareFactsWithoutFailingBatches(t *testing.T) {
	t.Parallel()
	var h isolations
	b := setup(t, "", func(c *ingest.WorkerConfig) { c.Logger = slog.New(&h); c.BatchSize = 400 })
	var events []map[string]any
	for i := range 400 {
		events = append(events, ev("fact", fmt.Sprintf("t%d", i), map[string]any{"fact": map[string]any{
			"subject": fmt.Sprintf("repo-%d", i%5), "predicate": "build_tool", "object": fmt.Sprintf("tool-%d", i%3)}}))
	}
	staged := b.send(t, events...)
	var wg sync.WaitGroup
	for p := range 2 {
		wg.Go(func() {
			_, err := b.worker.RunOnce(b.ctx, p)
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	b.drain(t)
	require.Zero(t, h.n.Load(), "no batch failed")
	for _, s := range staged {
		status, _, _ := b.candidate(t, s.ID)
		require.Equal(t, store.CandidateDone, status)
	}
}

// The worker is busy while it works through a backlog, and not when it
// has had nothing to do.
func TestWorkerBusyWhileClassifying(t *testing.T) {
	t.Parallel()
	b := setup(t, "", func(c *ingest.WorkerConfig) { c.Idle = time.Hour })
	require.False(t, b.worker.Busy(), "nothing classified yet")
	b.send(t, ev("observation", "t1", map[string]any{"text": "x"}))
	b.drain(t)
	require.True(t, b.worker.Busy(), "it settled a batch within the last idle periods")
}

// Classification gives way to retrieval: while the work it yields to is
// busy, a partition waits (up to its bound) and then claims small batches,
// so that a backlog is classified in several short transactions rather
// than one long one; once it is not busy, a batch takes what is pending.
func TestClassificationYieldsToBusyWork(t *testing.T) {
	t.Parallel()
	b := setup(t, "", func(c *ingest.WorkerConfig) { c.Partitions, c.BatchSize = 1, 1000 })
	var busy atomic.Bool
	busy.Store(true)
	b.worker.YieldTo(busy.Load, time.Millisecond)
	events := make([]map[string]any, 250)
	for i := range events {
		events[i] = ev("observation", fmt.Sprintf("t%d", i%5), map[string]any{"text": fmt.Sprint(i)})
	}
	b.send(t, events...)
	require.NoError(t, b.worker.Start(b.ctx))
	t.Cleanup(func() { _ = b.worker.Stop(context.WithoutCancel(b.ctx)) })
	// batches waits until want candidates are classified and returns in
	// how many batches (a batch's settles share its transaction's time).
	batches := func(want int) int {
		for deadline := time.Now().Add(30 * time.Second); ; {
			var done, n int
			require.NoError(t, b.db.Pool.QueryRow(b.ctx, `SELECT count(*), count(DISTINCT processed_at) FROM candidates
				WHERE tenant_id = 'acme' AND status = 'done'`).Scan(&done, &n))
			if done == want {
				return n
			}
			require.True(t, time.Now().Before(deadline), "the worker never drained the backlog")
			time.Sleep(20 * time.Millisecond)
		}
	}
	require.Equal(t, 3, batches(250), "batches of at most %d while busy", ingest.DefaultYieldBatch)

	busy.Store(false)
	b.send(t, events...)
	b.worker.Notify()
	require.Equal(t, 4, batches(500), "one batch once nothing is busy")
}
