package ingest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/policy"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

// Worker defaults.
const (
	DefaultPartitions  = 2
	DefaultBatchSize   = 1000
	DefaultMaxAttempts = 5
	DefaultIdle        = 200 * time.Millisecond
	// DefaultMaxYield is how long a partition waits at most, before a
	// batch, for the work it yields to to pause ([Worker.YieldTo]).
	DefaultMaxYield = 200 * time.Millisecond
	// DefaultYieldBatch is the most candidates a partition claims while
	// the work it yields to is busy.
	DefaultYieldBatch = 100
)

// yieldPoll is how often a yielding partition looks whether the work it
// yields to is still busy.
const yieldPoll = 2 * time.Millisecond

// WorkerConfig configures a [Worker].
type WorkerConfig struct {
	DB pg.DBTX
	// Writer is the write path every record is written through; nil means
	// one over DB with the default configuration.
	Writer *revise.Writer
	Policy *policy.Policy
	Logger *slog.Logger
	// Now is the clock of the entries the worker writes itself; nil means
	// time.Now.
	Now func() time.Time
	// Partitions splits threads among workers; every engramd sharing a
	// database must use the same number. Each partition is one goroutine.
	Partitions  int
	BatchSize   int
	MaxAttempts int
	// Idle is how long a partition waits for new work when it found none
	// (a [Worker.Notify] wakes it at once).
	Idle     time.Duration
	Registry prometheus.Registerer
}

// Worker is the policy plane (substrate RFC §15.5): it claims staged
// candidates, classifies them, and writes their records — each thread's
// episode and working memory, and semantic facts — in the same transaction
// that marks them classified, so every acknowledged event is classified
// exactly once, across crashes. A thread's events are handled in order by
// one partition at a time, across daemons (a transaction-scoped advisory
// lock per partition).
type Worker struct {
	db          pg.DBTX
	writer      *revise.Writer
	now         func() time.Time
	policy      atomic.Pointer[policy.Policy]
	logger      *slog.Logger
	partitions  int
	batch       int
	maxAttempts int
	idle        time.Duration
	metrics     *workerMetrics

	// lastWork is when a partition last settled a batch (Unix ns).
	lastWork atomic.Int64
	// yieldTo is the work classification gives way to (YieldTo).
	yieldTo atomic.Pointer[yielding]

	wake    []chan struct{}
	mu      sync.Mutex
	cancel  context.CancelFunc
	stopped chan struct{}
}

// NewWorker returns a worker for cfg; Start runs it.
func NewWorker(cfg WorkerConfig) *Worker {
	w := &Worker{
		db: cfg.DB, writer: cfg.Writer, now: cfg.Now, logger: cfg.Logger, partitions: cfg.Partitions, batch: cfg.BatchSize,
		maxAttempts: cfg.MaxAttempts, idle: cfg.Idle,
	}
	if w.writer == nil {
		w.writer = revise.New(cfg.DB, revise.Config{})
	}
	if w.now == nil {
		w.now = time.Now
	}
	if w.logger == nil {
		w.logger = slog.New(slog.DiscardHandler)
	}
	if w.partitions <= 0 {
		w.partitions = DefaultPartitions
	}
	if w.batch <= 0 {
		w.batch = DefaultBatchSize
	}
	if w.maxAttempts <= 0 {
		w.maxAttempts = DefaultMaxAttempts
	}
	if w.idle <= 0 {
		w.idle = DefaultIdle
	}
	p := cfg.Policy
	if p == nil {
		p = policy.Default()
	}
	w.policy.Store(p)
	w.metrics = newWorkerMetrics(cfg.Registry)
	w.wake = make([]chan struct{}, w.partitions)
	for i := range w.wake {
		w.wake[i] = make(chan struct{}, 1)
	}
	return w
}

// SetPolicy swaps in a new policy for the batches that start from now on.
func (w *Worker) SetPolicy(p *policy.Policy) { w.policy.Store(p) }

// Policy is the policy in force.
func (w *Worker) Policy() *policy.Policy { return w.policy.Load() }

// Busy reports whether the worker is classifying a backlog: a partition
// settled a batch within the last two idle periods. Background work that
// competes for the same cores (the embedding backfill) yields to it.
func (w *Worker) Busy() bool {
	return time.Since(time.Unix(0, w.lastWork.Load())) < 2*w.idle
}

// yielding is what [Worker.YieldTo] set.
type yielding struct {
	busy     func() bool
	maxYield time.Duration
}

// YieldTo makes classification give way to work that must go first on the
// same cores: engramd passes the retriever's Busy, so that an ingestion
// burst is paid for by the classification backlog (and, past the ingestion
// backlog's bound, by acknowledgement), never by a retrieval. The policy
// plane's work is asynchronous (substrate RFC §15.5), an agent's retrieval
// is not. Before each batch, while busy reports true,
// a partition waits, up to maxYield (≤ 0 means [DefaultMaxYield]), and
// then claims at most [DefaultYieldBatch] candidates, so that its batch is
// short and it gives way again soon: classification keeps progressing
// under sustained retrieval. Acknowledgement is not held up: events are
// staged and acknowledged whatever classification does. Safe to call
// while the worker runs.
func (w *Worker) YieldTo(busy func() bool, maxYield time.Duration) {
	w.yieldTo.Store(&yielding{busy: busy, maxYield: cmp.Or(max(maxYield, 0), DefaultMaxYield)})
}

// yield waits while the work the worker yields to is busy, up to its
// bound, and returns how many candidates the next batch may claim.
func (w *Worker) yield(ctx context.Context) int {
	y := w.yieldTo.Load()
	if y == nil || !y.busy() {
		return w.batch
	}
	deadline := time.Now().Add(y.maxYield)
	for y.busy() && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return w.batch
		case <-time.After(yieldPoll):
		}
	}
	if y.busy() {
		return min(w.batch, DefaultYieldBatch)
	}
	return w.batch
}

// Notify wakes idle partitions: new candidates were staged.
func (w *Worker) Notify() {
	for _, c := range w.wake {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// Start runs one goroutine per partition until Stop.
func (w *Worker) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancel != nil {
		return errors.New("policy worker already started")
	}
	ctx, w.cancel = context.WithCancel(ctx)
	w.stopped = make(chan struct{})
	var wg sync.WaitGroup
	for p := range w.partitions {
		wg.Go(func() { w.loop(ctx, p) })
	}
	go func() { wg.Wait(); close(w.stopped) }()
	return nil
}

// Stop cancels the partitions and waits for them, or for ctx. A batch cut
// off rolls back; its candidates stay pending for the next start. Stopping
// twice is safe.
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	cancel, stopped := w.cancel, w.stopped
	w.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *Worker) loop(ctx context.Context, partition int) {
	for ctx.Err() == nil {
		n, err := w.runOnce(ctx, partition, w.yield(ctx))
		if err != nil && ctx.Err() == nil {
			w.logger.ErrorContext(ctx, "policy batch failed", slog.Int("partition", partition), slog.String("error", err.Error()))
		}
		if n > 0 && err == nil {
			continue // more may be waiting
		}
		select {
		case <-ctx.Done():
		case <-w.wake[partition]:
		case <-time.After(w.idle):
		}
	}
}

// Advisory locks on a partition: keyed by the schema too, so that separate
// schemas of one database (tests) do not share partitions.
const (
	tryLockPartition = `SELECT pg_try_advisory_xact_lock(hashtext('engram-policy:' || current_schema()), $1)`
	lockPartition    = `SELECT pg_advisory_xact_lock(hashtext('engram-policy:' || current_schema()), $1)`
	// lockFactsSQL serializes the partitions' writes of facts (tenant, scope,
	// subject, predicate), each lock taken in the order of its key.
	lockFactsSQL = `SELECT count(pg_advisory_xact_lock(hashtext('engram-fact:' || current_schema()), k))
FROM (SELECT DISTINCT k FROM unnest($1::int4[]) AS u(k) ORDER BY k) AS s`
)

// RunOnce classifies one batch of a partition's pending candidates and
// reports how many it settled. A batch that fails is retried candidate by
// candidate, so one bad event cannot hold up the others; the bad one is
// retried with backoff and ends dead.
func (w *Worker) RunOnce(ctx context.Context, partition int) (int, error) {
	return w.runOnce(ctx, partition, w.batch)
}

// runOnce is RunOnce for a batch of at most limit candidates.
func (w *Worker) runOnce(ctx context.Context, partition, limit int) (int, error) {
	for attempt := 1; ; attempt++ {
		n, err := w.runBatch(ctx, partition, limit)
		if code, _ := pg.Code(err); (code == pg.DeadlockDetected || code == pg.SerializationFailure) && attempt < 3 {
			// Two partitions met on the same facts; the batch is whole
			// again after the rollback, so simply run it again.
			continue
		}
		if n > 0 {
			w.lastWork.Store(time.Now().UnixNano())
		}
		return n, err
	}
}

// Drain runs every partition, one batch after another, until a round
// settles nothing, and reports how many it settled: what a test or a tool
// does instead of waiting for the partitions' loops. Candidates waiting
// out a retry's backoff stay for later.
func (w *Worker) Drain(ctx context.Context) (int, error) {
	total := 0
	for {
		round := 0
		for p := range w.partitions {
			n, err := w.RunOnce(ctx, p)
			if err != nil {
				return total, err
			}
			round += n
		}
		if round == 0 {
			return total, nil
		}
		total += round
	}
}

func (w *Worker) runBatch(ctx context.Context, partition, limit int) (int, error) {
	start := time.Now()
	var claimed []store.Candidate
	err := w.writer.InTx(ctx, func(ctx context.Context, tx *revise.Tx) error {
		var mine bool
		if err := tx.Exec().QueryRow(ctx, tryLockPartition, partition).Scan(&mine); err != nil {
			return fmt.Errorf("lock partition: %w", err)
		}
		if !mine {
			return nil // another daemon is on this partition
		}
		var err error
		if claimed, err = store.Claim(ctx, tx.Exec(), partition, w.partitions, limit); err != nil {
			return err
		}
		return w.apply(ctx, tx, claimed)
	})
	if err == nil {
		w.metrics.batch.Observe(time.Since(start).Seconds())
		return len(claimed), nil
	}
	if code, _ := pg.Code(err); ctx.Err() != nil || len(claimed) == 0 || code == pg.DeadlockDetected || code == pg.SerializationFailure {
		return 0, err
	}
	w.logger.WarnContext(ctx, "policy batch failed; isolating", slog.Int("candidates", len(claimed)), slog.String("error", err.Error()))
	for _, c := range claimed {
		if err := w.runOne(ctx, partition, c); err != nil {
			return 0, err
		}
	}
	return len(claimed), nil
}

// runOne classifies a single candidate of partition, recording a failure
// against it.
func (w *Worker) runOne(ctx context.Context, partition int, c store.Candidate) error {
	err := w.writer.InTx(ctx, func(ctx context.Context, tx *revise.Tx) error {
		if _, err := tx.Exec().Exec(ctx, lockPartition, partition); err != nil {
			return fmt.Errorf("lock partition: %w", err)
		}
		if pending, err := store.LockPending(ctx, tx.Exec(), c.Tenant, c.ID); err != nil || !pending {
			return err
		}
		return w.apply(ctx, tx, []store.Candidate{c})
	})
	if err == nil || ctx.Err() != nil {
		return ctx.Err()
	}
	dead, ferr := store.Fail(ctx, w.db, c.Tenant, c.ID, err.Error(), w.maxAttempts)
	if ferr != nil {
		return ferr
	}
	if dead {
		w.metrics.dead.Inc()
		w.logger.WarnContext(ctx, "candidate is dead", slog.String("tenant", c.Tenant), slog.String("candidate", c.ID.String()), slog.String("error", err.Error()))
	}
	return nil
}

// threadState is what a batch knows of one thread while it works.
type threadState struct {
	thread *store.Thread
	append *revise.TimelineAppend
	// queued: the thread is in the batch's list of appends to write at
	// its end. An outcome writes its thread's append early; the events
	// after it start a new append that the same entry of the list writes.
	queued bool
	// starting: the thread is among those the batch opens at its start.
	starting bool
	// working is the thread's working memory as the batch's events change
	// it, read at the first of them (loaded); nil when it has none live.
	working *workingMemory
	loaded  bool
}

// classifiedEvent is a claimed candidate, its event and the policy's
// decision.
type classifiedEvent struct {
	c        store.Candidate
	ev       memory.Event
	d        policy.Decision
	decision json.RawMessage
}

// classify decodes and classifies claimed candidates, in order.
func classify(pol *policy.Policy, cands []store.Candidate) ([]classifiedEvent, error) {
	out := make([]classifiedEvent, len(cands))
	for i, c := range cands {
		e := &out[i]
		e.c = c
		if err := json.Unmarshal(c.Event, &e.ev); err != nil {
			return nil, fmt.Errorf("candidate %s: decode event: %w", c.ID, err)
		}
		e.d = pol.Classify(e.ev, c.Sensitivity)
		e.decision, _ = json.Marshal(e.d)
	}
	return out, nil
}

// apply classifies claimed candidates and writes their records in the
// batch's transaction.
func (w *Worker) apply(ctx context.Context, tx *revise.Tx, cands []store.Candidate) error {
	pol := w.policy.Load()
	// The one place the policy plane opens the events it claimed; they
	// stay sealed in the table (substrate RFC §15.9).
	for i := range cands {
		var err error
		if cands[i].Event, err = w.writer.Sealer().Open(ctx, cands[i].Tenant, cands[i].Event); err != nil {
			return fmt.Errorf("candidate %s: %w", cands[i].ID, err)
		}
	}
	byTenant := map[string][]store.Candidate{}
	var tenants []string
	for _, c := range cands {
		if byTenant[c.Tenant] == nil {
			tenants = append(tenants, c.Tenant)
		}
		byTenant[c.Tenant] = append(byTenant[c.Tenant], c)
	}
	var settled []store.Settlement
	for _, tenant := range tenants {
		s, err := w.applyTenant(ctx, tx, pol, tenant, byTenant[tenant])
		if err != nil {
			return err
		}
		settled = append(settled, s...)
	}
	return store.Settle(ctx, tx.Exec(), settled)
}

func (w *Worker) applyTenant(ctx context.Context, tx *revise.Tx, pol *policy.Policy, tenant string, cands []store.Candidate) ([]store.Settlement, error) {
	ch := revise.Change{Actor: "policy:" + policy.ClassifierVersion}
	var ids []string
	for _, c := range cands {
		ids = append(ids, c.ThreadID)
	}
	open, err := store.OpenThreads(ctx, tx.Exec(), tenant, ids)
	if err != nil {
		return nil, err
	}
	threads := map[string]*threadState{}
	var order []*threadState // appends in first-touched order
	state := func(threadID string) *threadState {
		ts := threads[threadID]
		if ts == nil {
			ts = &threadState{}
			if t, ok := open[threadID]; ok {
				ts.thread = &t
			}
			threads[threadID] = ts
		}
		return ts
	}
	// flush writes a thread's pending append.
	flush := func(ts *threadState) error {
		if ts.append == nil {
			return nil
		}
		err := tx.AppendTimelines(ctx, tenant, []revise.TimelineAppend{*ts.append}, ch)
		ts.append = nil
		return err
	}

	events, err := classify(pol, cands)
	if err != nil {
		return nil, err
	}
	// The threads the batch finds closed are opened together, before its
	// first event; only a thread an outcome closes in the batch is opened
	// again one at a time, after it.
	var starts []threadStart
	for _, e := range events {
		if ts := state(e.ev.ThreadID); !e.d.Drop && ts.thread == nil && !ts.starting {
			ts.starting = true
			starts = append(starts, threadStart{threadID: e.ev.ThreadID, agentID: e.ev.AgentID,
				episode: newEpisode(e.ev, e.c, e.d), working: newWorking(e.ev, e.d)})
		}
	}
	started, err := startThreads(ctx, tx, tenant, starts, ch)
	if err != nil {
		return nil, err
	}
	for id, t := range started {
		threads[id].thread = &t
	}

	settled := make([]store.Settlement, 0, len(cands))
	var facts []pendingFact
	for _, e := range events {
		c, ev, d, decision := e.c, e.ev, e.d, e.decision
		if d.Drop {
			settled = append(settled, store.Settlement{Tenant: tenant, ID: c.ID, Status: store.CandidateDropped, Decision: decision})
			continue
		}
		ts := state(ev.ThreadID)
		if ts.thread == nil {
			t, err := startThread(ctx, tx, tenant, ev.ThreadID, ev.AgentID, newEpisode(ev, c, d), newWorking(ev, d), ch)
			if err != nil {
				return nil, fmt.Errorf("candidate %s: %w", c.ID, err)
			}
			ts.thread = &t
		}
		if ts.append == nil {
			ts.append = &revise.TimelineAppend{EpisodeID: ts.thread.EpisodeID, Sensitivity: d.Sensitivity}
			if !ts.queued {
				order, ts.queued = append(order, ts), true
			}
		}
		a := ts.append
		a.Sensitivity = a.Sensitivity.Max(d.Sensitivity)
		ref := "evt://" + c.ID.String()
		a.Entries = append(a.Entries, memory.TimelineEntry{T: ev.Time, EventKind: string(ev.Kind), Ref: ref, Summary: ev.Summary()})
		a.Texts = append(a.Texts, ev.SearchText())
		if policy.AnyPersonalLabel(c.Redactions) && !slices.Contains(a.Tags, memory.PIITag) {
			// Redaction found personal data in the event: its episode is
			// PII-bearing (write-path RFC §12.10.4), the tag first, so the
			// episode's bound on tags keeps it before the event's own.
			a.Tags = slices.Insert(a.Tags, 0, memory.PIITag)
		}
		a.Tags = append(a.Tags, ev.Tags...)
		if ev.Tool != nil {
			a.ToolGraph = append(a.ToolGraph, map[string]any{"ref": ref, "kind": string(ev.Kind), "tool": ev.Tool.Name, "call_id": ev.Tool.CallID})
		}
		recordIDs := []uuid.UUID{ts.thread.EpisodeID}
		if !ts.loaded {
			if ts.working, err = loadWorking(ctx, tx, tenant, ts.thread.WorkingID); err != nil {
				return nil, fmt.Errorf("candidate %s: %w", c.ID, err)
			}
			ts.loaded = true
		}
		if ts.working != nil {
			ts.working.observe(ev, d.Sensitivity)
		}

		if ev.Kind == memory.FactEvent && d.Type == memory.Semantic && ev.Fact != nil {
			facts = append(facts, pendingFact{ev: ev, cand: c, decision: d, episode: ts.thread.EpisodeID, settled: len(settled)})
		}

		if ev.Kind == memory.Outcome && ev.Outcome != nil {
			// The outcome closes the episode; a later event of this thread
			// opens a new one.
			a.Outcome = ev.Outcome.Status
			if err := flush(ts); err != nil {
				return nil, fmt.Errorf("candidate %s: %w", c.ID, err)
			}
			// Its working memory's last state (done) first: closing the
			// thread keeps it in the episode and discards it (§6).
			if err := ts.working.write(ctx, tx, tenant, ch); err != nil {
				return nil, fmt.Errorf("candidate %s: %w", c.ID, err)
			}
			if err := closeThread(ctx, tx, tenant, *ts.thread, w.now(), ch); err != nil {
				return nil, fmt.Errorf("candidate %s: %w", c.ID, err)
			}
			ts.thread, ts.working, ts.loaded = nil, nil, false
		}
		settled = append(settled, store.Settlement{Tenant: tenant, ID: c.ID, Status: store.CandidateDone, Decision: decision, RecordIDs: recordIDs})
	}
	var appends []revise.TimelineAppend
	for _, ts := range order {
		if ts.append != nil {
			appends = append(appends, *ts.append)
		}
		if err := ts.working.write(ctx, tx, tenant, ch); err != nil {
			return nil, err
		}
	}
	if err := tx.AppendTimelines(ctx, tenant, appends, ch); err != nil {
		return nil, err
	}
	// Facts last, in key order: every partition takes the row locks of
	// the facts it writes in the same order, so two batches meeting on
	// the same facts wait for each other instead of deadlocking.
	slices.SortStableFunc(facts, func(a, b pendingFact) int { return strings.Compare(a.key(), b.key()) })
	if err := lockFacts(ctx, tx, tenant, facts); err != nil {
		return nil, err
	}
	// The batch's facts pass the gates together: what the gates read of
	// memory is read once for all of them (revise.Tx.ObserveFacts).
	obs := make([]revise.Observation, len(facts))
	for i, f := range facts {
		var err error
		if obs[i], err = factObservation(f.ev, f.cand, f.decision, f.episode, ch); err != nil {
			return nil, fmt.Errorf("candidate %s: %w", f.cand.ID, err)
		}
	}
	admitted, refused, err := tx.ObserveFacts(ctx, tenant, obs)
	if err != nil {
		return nil, fmt.Errorf("learn facts: %w", err)
	}
	for i, f := range facts {
		// A fact the write path refused (a contradiction with more
		// credible facts, say) stays in its episode, classified.
		if refused[i] == nil && admitted[i].Record.ID != uuid.Nil {
			settled[f.settled].RecordIDs = append(settled[f.settled].RecordIDs, admitted[i].Record.ID)
		}
	}
	for _, st := range settled {
		switch {
		case st.Status == store.CandidateDropped:
			w.metrics.classified.WithLabelValues("dropped").Inc()
		case len(st.RecordIDs) > 1:
			w.metrics.classified.WithLabelValues(string(memory.Semantic)).Inc()
		default:
			w.metrics.classified.WithLabelValues(string(memory.Episodic)).Inc()
		}
	}
	return settled, nil
}

// pendingFact is a fact event waiting for its semantic record, and where
// its settlement is.
type pendingFact struct {
	ev       memory.Event
	cand     store.Candidate
	decision policy.Decision
	episode  uuid.UUID
	settled  int
}

// key orders facts by what their records lock: scope, subject, predicate.
func (f pendingFact) key() string {
	return f.decision.Scope + "\x00" + f.ev.Fact.Subject + "\x00" + f.ev.Fact.Predicate
}

// lockFacts takes the locks of the facts a batch writes, in one statement
// and in the order of their keys, so that batches meeting on the same
// facts wait for each other instead of deadlocking. Two partitions'
// threads may report the same fact: the one that comes second waits here
// for the first to commit, and its gates then see the first's record,
// instead of both inserting an active fact and the second failing its
// whole batch on the unique index.
func lockFacts(ctx context.Context, tx *revise.Tx, tenant string, facts []pendingFact) error {
	if len(facts) == 0 {
		return nil
	}
	keys := make([]int32, len(facts))
	for i, f := range facts {
		keys[i] = f.lockKey(tenant)
	}
	if _, err := tx.Exec().Exec(ctx, lockFactsSQL, keys); err != nil {
		return fmt.Errorf("lock facts: %w", err)
	}
	return nil
}

// lockKey is the advisory lock of the fact in tenant: a hash, since keys
// hold what text values cannot (NUL); two facts sharing one only wait for
// each other.
func (f pendingFact) lockKey(tenant string) int32 {
	h := fnv.New32a()
	h.Write([]byte(tenant + "\x00" + f.key()))
	return int32(h.Sum32())
}

// factObservation is a fact event as the semantic record it asks for —
// global, conditional or timeboxed ([memory.EventFact.Validity]) — to be
// observed under the semantic revision rules ([revise.Tx.ObserveFacts]):
// the same fact again is absorbed, its new evidence merged; a
// contradicting one is decided by its scope's contradiction policy.
func factObservation(ev memory.Event, c store.Candidate, d policy.Decision, episode uuid.UUID, ch revise.Change) (revise.Observation, error) {
	f := ev.Fact
	src := memory.Source{Kind: "event", Ref: "evt://" + c.ID.String()}
	evidence := append([]memory.Source{src}, f.Evidence...)
	payload, err := json.Marshal(map[string]any{
		"kind": memory.Semantic, "subject": f.Subject, "predicate": f.Predicate, "object": f.Object,
		"validity": f.Validity(), "evidence": evidence,
	})
	if err != nil {
		return revise.Observation{}, fmt.Errorf("encode fact: %w", err)
	}
	rec := memory.Record{
		Type: memory.Semantic, Sensitivity: d.Sensitivity, Confidence: d.Confidence, Salience: memory.DefaultSalience,
		Scope: d.Scope, Tags: ev.Tags, Payload: payload, PersonalData: policy.AnyPersonalLabel(c.Redactions),
		Visibility: memory.Visibility(d.Visibility), AgentID: ev.AgentID, ThreadID: ev.ThreadID,
		// The evidence the event cites is the fact's provenance too: its
		// confidence and weight follow it (substrate RFC §7).
		Provenance: memory.Provenance{Sources: evidence, CreatedBy: "policy:" + policy.ClassifierVersion},
		Relations:  []memory.Relation{{Predicate: memory.DerivedFrom, TargetID: episode}},
	}
	if d.Decay != nil {
		rec.Lifecycle.Decay = *d.Decay
	}
	return revise.Observation{Record: rec, Change: revise.Change{Actor: ch.Actor, Evidence: []memory.Source{src}}}, nil
}

func newEpisode(ev memory.Event, c store.Candidate, d policy.Decision) memory.Record {
	p := map[string]any{"kind": memory.Episodic, "timeline": []any{}}
	if len(ev.Environment) > 0 {
		p["environment"] = ev.Environment
	}
	payload, _ := json.Marshal(p)
	tags := []string{"thread:" + ev.ThreadID, "agent:" + ev.AgentID}
	for _, t := range ev.Tags {
		if len(tags) < memory.MaxEpisodeTags && !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	return memory.Record{
		Type: memory.Episodic, Sensitivity: d.Sensitivity, Confidence: 1, Salience: memory.DefaultSalience,
		Scope: d.Scope, Tags: tags, Payload: payload, PersonalData: policy.AnyPersonalLabel(c.Redactions),
		Visibility: memory.Visibility(d.Visibility), AgentID: ev.AgentID, ThreadID: ev.ThreadID,
		Provenance: memory.Provenance{Sources: []memory.Source{{Kind: "event", Ref: "evt://" + c.ID.String()}}, CreatedBy: "policy:" + policy.ClassifierVersion},
	}
}

func newWorking(ev memory.Event, d policy.Decision) memory.Record {
	payload, _ := json.Marshal(map[string]any{"kind": memory.Working, "thread_id": ev.ThreadID, "state": "planning"})
	return memory.Record{
		Type: memory.Working, Sensitivity: d.Sensitivity, Confidence: 1, Salience: memory.DefaultSalience,
		Scope: d.Scope, Tags: []string{"thread:" + ev.ThreadID, "agent:" + ev.AgentID}, Payload: payload,
		Visibility: memory.Visibility(d.Visibility), AgentID: ev.AgentID, ThreadID: ev.ThreadID,
		Provenance: memory.Provenance{Sources: []memory.Source{}, CreatedBy: "policy:" + policy.ClassifierVersion},
	}
}

type workerMetrics struct {
	classified *prometheus.CounterVec
	dead       prometheus.Counter
	batch      prometheus.Histogram
}

func newWorkerMetrics(reg prometheus.Registerer) *workerMetrics {
	m := &workerMetrics{
		classified: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "engram_events_classified_total",
			Help: "Events the policy plane classified, by outcome: episodic (timeline only), semantic (a fact record too) or dropped by a rule.",
		}, []string{"outcome"}),
		dead: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "engram_events_dead_total",
			Help: "Events that failed classification on every attempt and were set aside.",
		}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "engram_policy_batch_duration_seconds",
			Help:    "Time to classify and commit one batch of staged events.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 10),
		}),
	}
	if reg != nil {
		reg.MustRegister(m.classified, m.dead, m.batch)
	}
	return m
}
