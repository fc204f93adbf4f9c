// Package ingest is the ingestion plane (substrate RFC §15.4): it turns the
// events agent runtimes report into candidates and stages them durably.
// Before anything is stored, an event is validated against its schema and
// redacted (SR-1): secrets and personal data become [REDACTED:<label>]
// markers, or the event is refused if the operator's policy says so. A
// retried event — the same idempotency key, or the same content from the
// same agent and thread — is absorbed and answered with its first id.
//
// Failure cases: a malformed, oversized, invalid-UTF-8 or far-future event,
// or one holding what PostgreSQL cannot store (NUL, an unpaired surrogate,
// a number beyond a double), is refused with an [*EventError]
// naming the problem and the fields; an agent over its rate gets
// [*RateLimitError]; a staging backlog over its bound gets [*BacklogError].
// In an atomic batch, one refused event refuses the batch and nothing of it
// is stored.
package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/policy"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/seal"
	"github.com/engram-dev/engram/store"
)

// Defaults.
const (
	DefaultMaxEventBytes = 64 << 10
	DefaultMaxSkew       = 5 * time.Minute
	DefaultAgentRate     = 5000 // events a second, per agent
	DefaultAgentBurst    = 10000
	DefaultMaxBacklog    = 1_000_000
)

// Config configures an [Ingester].
type Config struct {
	// DB is where events are staged.
	DB pg.DBTX
	// Policy returns the policy in force (it may be reloaded).
	Policy func() *policy.Policy
	// Staged is called after events were staged, to wake the policy plane.
	Staged        func()
	MaxEventBytes int
	MaxSkew       time.Duration // how far in the future an event's time may be
	AgentRate     float64       // events a second per agent; <= 0 means unlimited
	AgentBurst    int
	MaxBacklog    int64 // pending candidates before ingestion answers 503
	// Sealer seals the staged events the policy classifies at or above
	// its sensitivity (substrate RFC §15.9); nil seals none.
	Sealer   *seal.Sealer
	Registry prometheus.Registerer
	Now      func() time.Time
}

// Ingester validates, redacts and stages events.
type Ingester struct {
	cfg     Config
	limits  sync.Map // tenant/agent -> *rate.Limiter
	nlimits atomic.Int64
	backlog struct {
		sync.Mutex
		n  int64
		at time.Time
		// counting: a caller is counting; the others answer with the
		// last count meanwhile instead of queueing behind it.
		counting bool
	}
	metrics *metrics
}

// New returns an ingester for cfg.
func New(cfg Config) *Ingester {
	if cfg.MaxEventBytes <= 0 {
		cfg.MaxEventBytes = DefaultMaxEventBytes
	}
	if cfg.MaxSkew <= 0 {
		cfg.MaxSkew = DefaultMaxSkew
	}
	if cfg.AgentBurst <= 0 {
		cfg.AgentBurst = DefaultAgentBurst
	}
	if cfg.MaxBacklog <= 0 {
		cfg.MaxBacklog = DefaultMaxBacklog
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Policy == nil {
		p := policy.Default()
		cfg.Policy = func() *policy.Policy { return p }
	}
	if cfg.Staged == nil {
		cfg.Staged = func() {}
	}
	return &Ingester{cfg: cfg, metrics: newMetrics(cfg.Registry)}
}

// EventError is an event refused before anything was stored. Index is its
// position in its batch (or its line, for a stream).
type EventError struct {
	Index int
	// Kind is a stable problem name: invalid-event, invalid-utf8, too-large,
	// future-time, secret-leakage.
	Kind       string
	Detail     string
	Violations []schemas.Violation
}

func (e *EventError) Error() string { return fmt.Sprintf("event %d: %s", e.Index, e.Detail) }

// RateLimitError is an agent over its rate; it may retry after RetryAfter.
type RateLimitError struct {
	AgentID    string
	RetryAfter time.Duration
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("agent %q is over its event rate; retry after %s", e.AgentID, e.RetryAfter)
}

// BacklogError is a staging backlog over its bound: the policy plane is
// behind, and ingestion pushes back rather than grow it without limit.
type BacklogError struct {
	Pending    int64
	RetryAfter time.Duration
}

func (e *BacklogError) Error() string {
	return fmt.Sprintf("%d events are waiting for classification; retry after %s", e.Pending, e.RetryAfter)
}

// Prepare turns one raw event into a candidate: it checks size and UTF-8,
// decodes exactly one JSON value ([schemas.Decode], as every request body is
// decoded), refuses what PostgreSQL cannot store ([schemas.CheckStorable]),
// redacts, validates against the Event schema and computes the dedup key.
// Nothing is stored.
func (in *Ingester) Prepare(index int, raw []byte) (store.Candidate, error) {
	fail := func(kind, detail string, vs ...schemas.Violation) (store.Candidate, error) {
		in.metrics.refused.WithLabelValues(kind).Inc()
		return store.Candidate{}, &EventError{Index: index, Kind: kind, Detail: detail, Violations: vs}
	}
	if len(raw) > in.cfg.MaxEventBytes {
		return fail("too-large", fmt.Sprintf("the event is %d bytes, over the limit of %d", len(raw), in.cfg.MaxEventBytes))
	}
	if !utf8.Valid(raw) {
		return fail("invalid-utf8", "the event is not valid UTF-8")
	}
	var v any
	if err := schemas.Decode(raw, &v); err != nil {
		return fail("invalid-event", schemas.Malformed(raw, err))
	}
	if err := schemas.CheckStorable(raw); err != nil {
		var ve *schemas.ValidationError
		if !errors.As(err, &ve) {
			return store.Candidate{}, err
		}
		return fail("invalid-event", "the event holds what cannot be stored (NUL, an unpaired surrogate, a number out of range)", ve.Violations...)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fail("invalid-event", "an event is a JSON object")
	}
	now := in.cfg.Now().UTC()
	if _, ok := m["time"]; !ok {
		m["time"] = now.Format(time.RFC3339Nano)
	}

	pol := in.cfg.Policy()
	redacted, findings := pol.Redactor().Value(m)
	if len(findings) > 0 {
		in.metrics.redacted.Inc()
		if pol.RejectSecrets() {
			labels := make([]string, len(findings))
			for i, f := range findings {
				labels[i] = f.Label
			}
			return fail("secret-leakage", fmt.Sprintf("the event holds secrets or personal data (%v) and the policy rejects such writes", labels))
		}
	}
	doc, err := json.Marshal(redacted)
	if err != nil {
		return fail("invalid-event", "cannot encode the event: "+err.Error())
	}
	// The redacted value is what doc encodes: validated as it is, not
	// parsed again, by the validator written for the Event schema, which
	// answers as the generic one does at a fraction of its cost (every
	// event is validated on the acknowledgement's path, substrate RFC
	// §15.4).
	if err := schemas.ValidateEvent(redacted); err != nil {
		var ve *schemas.ValidationError
		if errors.As(err, &ve) {
			return fail("invalid-event", invalidFields(len(ve.Violations)), ve.Violations...)
		}
		return store.Candidate{}, err
	}
	var ev memory.Event
	if err := json.Unmarshal(doc, &ev); err != nil {
		return fail("invalid-event", err.Error())
	}
	if ev.Time.After(now.Add(in.cfg.MaxSkew)) {
		return fail("future-time", fmt.Sprintf("time is more than %s in the future", in.cfg.MaxSkew),
			schemas.Violation{Pointer: "/time", Message: "is too far in the future"})
	}
	if f := ev.Fact; f != nil && f.ValidFrom != nil && f.ValidTo != nil && f.ValidTo.Before(*f.ValidFrom) {
		return fail("invalid-event", invalidFields(1),
			schemas.Violation{Pointer: "/fact/valid_to", Message: "must not be before valid_from: a time box ends after it starts"})
	}

	id, err := uuid.NewV7()
	if err != nil {
		return store.Candidate{}, err
	}
	c := store.Candidate{
		ID: id, AgentID: ev.AgentID, ThreadID: ev.ThreadID, Kind: ev.Kind, Time: ev.Time.UTC(),
		Event: doc, DedupKey: dedupKey(ev, doc), Sensitivity: policy.MaxSensitivity(findings),
	}
	if c.Sensitivity == "" {
		c.Sensitivity = memory.Public
	}
	for _, f := range findings {
		c.Redactions = append(c.Redactions, f.Label)
	}
	return c, nil
}

// dedupKey identifies retries of an event (write-path RFC §12.1.7): its
// idempotency key within its agent, or else a hash of its content, agent
// and thread. content is the redacted event as encoding/json wrote it: map keys
// sorted, a canonical form.
func dedupKey(ev memory.Event, content []byte) []byte {
	h := sha256.New()
	if ev.IdempotencyKey != "" {
		fmt.Fprintf(h, "key\x00%s\x00%s", ev.AgentID, ev.IdempotencyKey)
		return h.Sum(nil)
	}
	fmt.Fprintf(h, "content\x00%s\x00%s\x00", ev.AgentID, ev.ThreadID)
	h.Write(content)
	return h.Sum(nil)
}

// Ingest prepares and stages a batch of events atomically: if any is
// refused, none is stored and the error lists every refused one.
func (in *Ingester) Ingest(ctx context.Context, tenant string, raws []json.RawMessage) ([]store.Staged, error) {
	start := time.Now()
	in.metrics.received.Add(float64(len(raws)))
	cands := make([]store.Candidate, 0, len(raws))
	var refused []error
	for i, raw := range raws {
		c, err := in.Prepare(i, raw)
		if err != nil {
			refused = append(refused, err)
			continue
		}
		cands = append(cands, c)
	}
	if len(refused) > 0 {
		return nil, errors.Join(refused...)
	}
	return in.stage(ctx, tenant, cands, start)
}

// Stage stages prepared candidates in one transaction, after the rate and
// backlog checks.
func (in *Ingester) Stage(ctx context.Context, tenant string, cands []store.Candidate) ([]store.Staged, error) {
	return in.stage(ctx, tenant, cands, time.Now())
}

func (in *Ingester) stage(ctx context.Context, tenant string, cands []store.Candidate, start time.Time) ([]store.Staged, error) {
	if len(cands) == 0 {
		return nil, nil
	}
	if err := in.admit(ctx, tenant, cands); err != nil {
		return nil, err
	}
	if err := in.seal(ctx, tenant, cands); err != nil {
		return nil, err
	}
	staged, err := store.Stage(ctx, in.cfg.DB, tenant, cands)
	if err != nil {
		return nil, err
	}
	in.cfg.Staged()
	dups := 0
	for _, s := range staged {
		if s.Duplicate {
			dups++
		}
	}
	in.metrics.acked.Add(float64(len(staged) - dups))
	in.metrics.absorbed.Add(float64(dups))
	in.metrics.latency.Observe(time.Since(start).Seconds())
	return staged, nil
}

// admit applies back-pressure: each agent's token bucket, then the backlog
// bound.
func (in *Ingester) admit(ctx context.Context, tenant string, cands []store.Candidate) error {
	if in.cfg.AgentRate > 0 {
		per := map[string]int{}
		for _, c := range cands {
			per[c.AgentID]++
		}
		now := in.cfg.Now()
		for agent, n := range per {
			lim := in.limiter(tenant, agent)
			r := lim.ReserveN(now, n)
			if !r.OK() {
				return &RateLimitError{AgentID: agent, RetryAfter: time.Duration(float64(n) / in.cfg.AgentRate * float64(time.Second))}
			}
			if d := r.DelayFrom(now); d > 0 {
				r.CancelAt(now)
				in.metrics.refused.WithLabelValues("rate-limited").Add(float64(n))
				return &RateLimitError{AgentID: agent, RetryAfter: d}
			}
		}
	}
	n, err := in.pending(ctx)
	if err != nil {
		return err
	}
	if n >= in.cfg.MaxBacklog {
		in.metrics.refused.WithLabelValues("backlog").Add(float64(len(cands)))
		return &BacklogError{Pending: n, RetryAfter: 5 * time.Second}
	}
	return nil
}

func (in *Ingester) limiter(tenant, agent string) *rate.Limiter {
	key := tenant + "\x00" + agent
	if l, ok := in.limits.Load(key); ok {
		return l.(*rate.Limiter)
	}
	if in.nlimits.Load() > 100_000 {
		// Bound the memory idle agents take: start afresh.
		in.limits.Clear()
		in.nlimits.Store(0)
	}
	l, loaded := in.limits.LoadOrStore(key, rate.NewLimiter(rate.Limit(in.cfg.AgentRate), in.cfg.AgentBurst))
	if !loaded {
		in.nlimits.Add(1)
	}
	return l.(*rate.Limiter)
}

// pending is the staging backlog, counted at most once a second, by one
// caller at a time: counting scans every pending event, and the batches
// of other streams must not wait for it to be acknowledged.
func (in *Ingester) pending(ctx context.Context) (int64, error) {
	b := &in.backlog
	b.Lock()
	if time.Since(b.at) < time.Second || b.counting && !b.at.IsZero() {
		n := b.n
		b.Unlock()
		return n, nil
	}
	b.counting = true
	b.Unlock()
	n, oldest, err := store.Backlog(ctx, in.cfg.DB)
	b.Lock()
	defer b.Unlock()
	b.counting = false
	if err != nil {
		return 0, err
	}
	b.n, b.at = n, time.Now()
	in.metrics.backlog.Set(float64(n))
	in.metrics.backlogAge.Set(time.Since(oldest).Seconds())
	return n, nil
}

type metrics struct {
	received, acked, absorbed, redacted prometheus.Counter
	refused                             *prometheus.CounterVec
	latency                             prometheus.Histogram
	backlog, backlogAge                 prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		received: prometheus.NewCounter(prometheus.CounterOpts{Name: "engram_events_received_total", Help: "Events received by the ingestion API."}),
		acked:    prometheus.NewCounter(prometheus.CounterOpts{Name: "engram_events_acknowledged_total", Help: "Events staged durably and acknowledged."}),
		absorbed: prometheus.NewCounter(prometheus.CounterOpts{Name: "engram_events_absorbed_total", Help: "Retried events absorbed as duplicates of events staged before."}),
		redacted: prometheus.NewCounter(prometheus.CounterOpts{Name: "engram_events_redacted_total", Help: "Events in which redaction replaced secrets or personal data."}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "engram_events_refused_total",
			Help: "Events refused, by reason: invalid-event, invalid-utf8, too-large, future-time, secret-leakage, rate-limited, backlog."}, []string{"reason"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "engram_ingest_ack_latency_seconds",
			Help: "Time from receiving a batch of events to acknowledging it staged.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		backlog:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "engram_staging_backlog_events", Help: "Events staged and waiting for classification."}),
		backlogAge: prometheus.NewGauge(prometheus.GaugeOpts{Name: "engram_staging_oldest_age_seconds", Help: "Age of the oldest event waiting for classification."}),
	}
	if reg != nil {
		reg.MustRegister(m.received, m.acked, m.absorbed, m.redacted, m.refused, m.latency, m.backlog, m.backlogAge)
	}
	return m
}

// MaxEventBytes is the largest event accepted.
func (in *Ingester) MaxEventBytes() int { return in.cfg.MaxEventBytes }

// Explanation is what the policy in force would do with an event: the
// answer of POST /v1/policy:explain.
type Explanation = api.PolicyExplanation

// Explain prepares and classifies an event without storing anything: the
// redacted event, the decision and the rules that made it.
func (in *Ingester) Explain(raw []byte) (Explanation, error) {
	c, err := in.Prepare(0, raw)
	if err != nil {
		return Explanation{}, err
	}
	var ev memory.Event
	if err := json.Unmarshal(c.Event, &ev); err != nil {
		return Explanation{}, err
	}
	pol := in.cfg.Policy()
	return Explanation{Policy: pol.Source(), Event: c.Event, Redactions: c.Redactions, Decision: pol.Classify(ev, c.Sensitivity)}, nil
}

// seal seals, in place, the events of cands the policy in force classifies
// at or above the sealer's sensitivity: a staged raw event carries its
// payload's words and is sealed with it. The worker opens them when it
// claims them (see [Worker]). The dedup key was computed on the
// plaintext before: a SHA-256 that names no content.
func (in *Ingester) seal(ctx context.Context, tenant string, cands []store.Candidate) error {
	s := in.cfg.Sealer
	if !s.Enabled() {
		return nil
	}
	pol := in.cfg.Policy()
	for i := range cands {
		var ev memory.Event
		if err := json.Unmarshal(cands[i].Event, &ev); err != nil {
			return fmt.Errorf("decode event: %w", err)
		}
		if !s.Applies(pol.Classify(ev, cands[i].Sensitivity).Sensitivity) {
			continue
		}
		v, err := s.Seal(ctx, tenant, cands[i].Event)
		if err != nil {
			return err
		}
		cands[i].Event = v
	}
	return nil
}

// invalidFields is how many fields of an event are invalid, in words.
func invalidFields(n int) string {
	if n == 1 {
		return "1 invalid field"
	}
	return fmt.Sprintf("%d invalid fields", n)
}
