// Package replicas sends reads to streaming replicas within a staleness
// budget (write-path RFC §12.9.6) and keeps an agent's reads after its own
// writes causal (§12.9.2): a read goes to a replica that has replayed
// every write its reader made, or to the primary.
//
// The router watches the primary's WAL position and each replica's replay
// position every [DefaultInterval]. A replica's lag is how long ago the
// primary had written what the replica has yet to replay: the time of the
// oldest sample of the primary's position past the replica's, measured on
// this daemon's clock, so that an idle primary does not make a caught-up
// replica look stale (pg_last_xact_replay_timestamp would). A reader's
// last write is known by its time; a replica has it once it has replayed a
// primary position sampled after that time, since a sample read after a
// commit is at or past that commit's LSN. A replica that does not answer
// counts as lagging without bound.
package replicas

import (
	"cmp"
	"context"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/engram-dev/engram/internal/pg"
)

// Defaults.
const (
	DefaultBudget   = 2 * time.Second
	DefaultInterval = 100 * time.Millisecond
)

// Replica is one read-only server.
type Replica struct {
	Name string // its label in metrics, without credentials
	Pool *pgxpool.Pool
}

// Config configures a [Router].
type Config struct {
	Primary  *pgxpool.Pool
	Replicas []Replica
	// Budget is δ_stale: how far behind a replica may be and still serve.
	Budget time.Duration
	// Interval is how often positions are sampled.
	Interval time.Duration
	Logger   *slog.Logger
	Registry prometheus.Registerer
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Router chooses where each read goes.
type Router struct {
	cfg     Config
	lag     *prometheus.GaugeVec
	reads   *prometheus.CounterVec
	mu      sync.Mutex
	samples []sample             // the primary's positions, oldest first
	state   []replicaState       // by replica
	writes  map[string]time.Time // a reader's last write
	next    int                  // round robin
	cancel  context.CancelFunc
	done    chan struct{}
}

type sample struct {
	at  time.Time
	lsn uint64
}

type replicaState struct {
	replayed uint64 // last replay position read; 0 when unknown
	ok       bool   // answered at the last poll
}

// New returns a router; Start it to sample positions.
func New(cfg Config) *Router {
	cfg.Budget = cmp.Or(cfg.Budget, DefaultBudget)
	cfg.Interval = cmp.Or(cfg.Interval, DefaultInterval)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Router{cfg: cfg, state: make([]replicaState, len(cfg.Replicas)), writes: map[string]time.Time{}}
	r.lag = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "engram_replica_lag_seconds",
		Help: "How long ago the primary wrote what the replica has yet to replay (+Inf when it does not answer).",
	}, []string{"replica"})
	r.reads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "engram_replica_reads_total",
		Help: "Reads routed, by target (replica or primary) and reason: fresh, stale (every replica past the budget), own_write (no replica has the reader's last write yet).",
	}, []string{"target", "reason"})
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(r.lag, r.reads)
	}
	return r
}

// Start samples positions every interval until Stop.
func (r *Router) Start(ctx context.Context) {
	ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	r.done = make(chan struct{})
	go func() {
		defer close(r.done)
		t := time.NewTicker(r.cfg.Interval)
		defer t.Stop()
		for {
			r.Poll(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// Stop ends sampling; stopping twice is safe.
func (r *Router) Stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	<-r.done
	r.cancel = nil
}

const (
	primaryLSNSQL = `SELECT pg_current_wal_lsn() - '0/0'::pg_lsn`
	replayLSNSQL  = `SELECT coalesce(pg_last_wal_replay_lsn() - '0/0'::pg_lsn, 0)`
)

// Poll samples the primary's position, then each replica's.
func (r *Router) Poll(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Interval+time.Second)
	defer cancel()
	var p float64
	if err := r.cfg.Primary.QueryRow(ctx, primaryLSNSQL).Scan(&p); err == nil {
		r.mu.Lock()
		r.samples = append(r.samples, sample{at: r.cfg.Now(), lsn: uint64(p)})
		r.mu.Unlock()
	}
	for i, rep := range r.cfg.Replicas {
		var l float64
		err := rep.Pool.QueryRow(ctx, replayLSNSQL).Scan(&l)
		r.mu.Lock()
		r.state[i] = replicaState{replayed: uint64(l), ok: err == nil}
		r.mu.Unlock()
		if err != nil {
			r.cfg.Logger.DebugContext(ctx, "replica does not answer", slog.String("replica", rep.Name), slog.String("error", err.Error()))
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.cfg.Now()
	for i, rep := range r.cfg.Replicas {
		r.lag.WithLabelValues(rep.Name).Set(r.lagLocked(i, now).Seconds())
	}
	r.trimLocked(now)
}

// infinite stands for the lag of a replica that does not answer.
const infinite = time.Duration(math.MaxInt64)

// lagLocked is replica i's lag at now.
func (r *Router) lagLocked(i int, now time.Time) time.Duration {
	st := r.state[i]
	if !st.ok {
		return infinite
	}
	for _, s := range r.samples {
		if s.lsn > st.replayed {
			return now.Sub(s.at)
		}
	}
	return 0
}

// trimLocked drops the samples every replica has replayed, keeping the
// newest, and those older than ten budgets (a replica that far behind is
// stale whatever they say).
func (r *Router) trimLocked(now time.Time) {
	keep := len(r.samples) - 1
	for i, s := range r.samples {
		behind := false
		for _, st := range r.state {
			behind = behind || (st.ok && s.lsn > st.replayed)
		}
		if behind && now.Sub(s.at) < 10*r.cfg.Budget {
			keep = i
			break
		}
	}
	if keep > 0 {
		r.samples = append(r.samples[:0], r.samples[keep:]...)
	}
	for k, t := range r.writes {
		if now.Sub(t) > 10*r.cfg.Budget {
			delete(r.writes, k) // every fresh replica has it by now
		}
	}
}

// Wrote notes that reader (a tenant's key, say) has committed a write: its
// reads go to a replica only once that replica has it.
func (r *Router) Wrote(reader string) {
	r.mu.Lock()
	r.writes[reader] = r.cfg.Now()
	r.mu.Unlock()
}

// For returns where reader's read goes: a replica within the budget that
// has the reader's last write, or the primary.
func (r *Router) For(reader string) pg.DBTX {
	if len(r.cfg.Replicas) == 0 {
		return r.cfg.Primary
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.cfg.Now()
	wrote, hasWrite := r.writes[reader]
	reason := "stale"
	for k := range r.cfg.Replicas {
		i := (r.next + k) % len(r.cfg.Replicas)
		if r.lagLocked(i, now) > r.cfg.Budget {
			continue
		}
		if hasWrite && !r.hasLocked(i, wrote) {
			reason = "own_write"
			continue
		}
		r.next = i + 1
		r.reads.WithLabelValues("replica", "fresh").Inc()
		return r.cfg.Replicas[i].Pool
	}
	r.reads.WithLabelValues("primary", reason).Inc()
	return r.cfg.Primary
}

// hasLocked reports whether replica i has replayed a primary position
// sampled after t, and so every commit acknowledged before t.
func (r *Router) hasLocked(i int, t time.Time) bool {
	st := r.state[i]
	for j := len(r.samples) - 1; j >= 0; j-- {
		s := r.samples[j]
		if s.at.After(t) && s.lsn <= st.replayed {
			return true
		}
	}
	return false
}

// Lag returns each replica's lag by name, as last sampled.
func (r *Router) Lag() map[string]time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]time.Duration{}
	now := r.cfg.Now()
	for i, rep := range r.cfg.Replicas {
		out[rep.Name] = r.lagLocked(i, now)
	}
	return out
}
