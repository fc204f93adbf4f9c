package retention

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

// Job names and the audit actor.
const (
	// Job is the retention job: it expires or deletes what is past its
	// retention.
	Job = "retention"
	// ComplianceJob is the compliance job: it writes the compliance
	// report.
	ComplianceJob = "compliance"
	// Actor is who the audit log names for what retention does.
	Actor = "engramd:retention"
	// DefaultBatchTimeout bounds one batch.
	DefaultBatchTimeout = time.Minute
)

// Progress is where a job run counts what it did: the scheduler's run, or
// jobstest.Run in tests.
type Progress interface {
	Add(name string, n int64)
}

// ErasureCheck lists the erasure requests not yet complete (write-path
// RFC §12.10.2), for the compliance report.
type ErasureCheck func(ctx context.Context) ([]PendingErasure, error)

// Unfinished is the [ErasureCheck] of the erasure requests db records, of
// every tenant: at most limit, oldest first, each named by its id, tenant
// and state, never its subject.
func Unfinished(db pg.DBTX, limit int) ErasureCheck {
	return func(ctx context.Context) ([]PendingErasure, error) {
		rows, err := store.UnfinishedErasures(ctx, db, limit)
		if err != nil {
			return nil, err
		}
		out := make([]PendingErasure, len(rows))
		for i, p := range rows {
			out[i] = PendingErasure{ID: p.ID.String(), Status: p.Status, RequestedAt: p.RequestedAt,
				Detail: "tenant " + p.Tenant + ", phase " + p.Phase}
		}
		return out, nil
	}
}

// Options are what a [Retainer] needs; the zero value of each optional
// field is documented.
type Options struct {
	// DB is where the compliance report reads and is saved.
	DB pg.DBTX
	// Writer is the write path every expiry and deletion goes through.
	Writer   *revise.Writer
	Settings *Settings
	// Logger; nil discards.
	Logger *slog.Logger
	// Registry receives the retention metrics; nil registers none.
	Registry prometheus.Registerer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// BatchTimeout bounds one batch; 0 means [DefaultBatchTimeout].
	BatchTimeout time.Duration
	// Erasures lists the erasures not yet complete; nil reports the
	// erasure section as not checked.
	Erasures ErasureCheck
}

// Retainer enforces retention and reports compliance.
type Retainer struct {
	db           pg.DBTX
	writer       *revise.Writer
	settings     *Settings
	logger       *slog.Logger
	now          func() time.Time
	batchTimeout time.Duration
	erasures     ErasureCheck
	metrics      *metrics
}

// New returns a retainer for o.
func New(o Options) *Retainer {
	r := &Retainer{
		db: o.DB, writer: o.Writer, settings: o.Settings, logger: o.Logger, now: o.Now,
		batchTimeout: cmp.Or(o.BatchTimeout, DefaultBatchTimeout), erasures: o.Erasures,
		metrics: newMetrics(o.Registry),
	}
	if r.logger == nil {
		r.logger = slog.New(slog.DiscardHandler)
	}
	if r.now == nil {
		r.now = time.Now
	}
	return r
}

// clock is the retainer's time at the database's microsecond precision.
func (r *Retainer) clock() time.Time { return r.now().UTC().Truncate(time.Microsecond) }

// Enforce expires or deletes, class by class, every record created longer
// ago than its class's maximum retention (write-path RFC §12.10.4:
// retention_expired(m) = (t_now − t_created(m)) > T_max_retention), pinned
// or not, however salient: retention overrides relevance. Each class's
// action is its configured one; the work goes in bounded batches, each in
// its own transaction under a timeout, until a batch comes back short. It
// counts expired_<class>, purged_<class> and artifacts_purged in p.
func (r *Retainer) Enforce(ctx context.Context, p Progress) error {
	cfg := r.settings.Config()
	now := r.clock()
	for _, rc := range memory.RetentionClasses {
		cutoff, ok := cfg.Cutoff(rc, now)
		if !ok {
			continue
		}
		cl := cfg.Class(rc)
		rationale := fmt.Sprintf("past the maximum retention of %s of class %s (write-path RFC §12.10.4)", cl.MaxAge, rc)
		total := 0
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			n, err := r.batch(ctx, cfg, rc, cl.Action, cutoff, now, rationale, p)
			if err != nil {
				return fmt.Errorf("retention of %s: %w", rc, err)
			}
			total += n
			if n < cfg.BatchSize {
				break
			}
		}
		if total > 0 {
			r.logger.LogAttrs(ctx, slog.LevelInfo, "retention acted on records past their retention",
				slog.String("class", string(rc)), slog.String("action", string(cl.Action)), slog.Int("records", total))
		}
	}
	return nil
}

// batch acts on one batch of class rc and returns how many records it
// took.
func (r *Retainer) batch(ctx context.Context, cfg Config, rc memory.RetentionClass, action Action, cutoff, now time.Time, rationale string, p Progress) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, r.batchTimeout)
	defer cancel()
	if action == HardDelete {
		res, err := r.writer.PurgePastRetention(ctx, rc, cutoff, cfg.BatchSize, Actor, rationale)
		if err != nil {
			return 0, err
		}
		p.Add("purged_"+string(rc), int64(res.Records))
		p.Add("artifacts_purged", int64(res.Artifacts))
		r.metrics.acted.WithLabelValues(string(rc), string(action)).Add(float64(res.Records))
		return res.Records, nil
	}
	n, err := r.writer.ExpirePastRetention(ctx, rc, cutoff, now, cfg.BatchSize, Actor, rationale)
	if err != nil {
		return 0, err
	}
	p.Add("expired_"+string(rc), int64(n))
	r.metrics.acted.WithLabelValues(string(rc), string(action)).Add(float64(n))
	return n, nil
}
