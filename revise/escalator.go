package revise

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/engram-dev/engram/store"
)

// EscalationJob is the periodic job that runs [Escalator.Escalate].
const EscalationJob = "review_escalation"

// DefaultEscalationSchedule is the escalation job's default schedule.
const DefaultEscalationSchedule = "@every 5m"

// DefaultEscalationBatch is how many reviews one statement of the
// escalation sweep takes.
const DefaultEscalationBatch = 500

// EscalatorConfig configures an [Escalator]. The zero value of each field
// is its documented default.
type EscalatorConfig struct {
	// Registry receives the review queue's metrics; nil registers none.
	Registry prometheus.Registerer
	// BatchSize is how many reviews a batch takes;
	// [DefaultEscalationBatch] when zero.
	BatchSize int
}

// Escalator is the review queue's periodic work (write-path RFC §12.6.4,
// §12.6.5, §12.12.3), across every tenant: it escalates async reviews past
// their SLA, refuses the writes of sync reviews past their deadline whose
// writer stopped waiting without refusing them (its daemon died), and
// reports the queue's depth and oldest age.
type Escalator struct {
	w     *Writer
	batch int

	escalations prometheus.Counter
	depth       prometheus.Gauge
	oldest      prometheus.Gauge
}

// NewEscalator returns the escalation sweep of w's database.
func NewEscalator(w *Writer, cfg EscalatorConfig) *Escalator {
	e := &Escalator{
		w:     w,
		batch: cmp.Or(cfg.BatchSize, DefaultEscalationBatch),
		escalations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricEscalations,
			Help: "Async reviews that passed their SLA undecided and were escalated (write-path RFC §12.6.4).",
		}),
		depth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "engram_review_queue_depth",
			Help: "Reviews pending, across every tenant, as of the last escalation run.",
		}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "engram_review_oldest_age_seconds",
			Help: "Age of the oldest pending review (0 when none is), as of the last escalation run.",
		}),
	}
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(e.escalations, e.depth, e.oldest)
	}
	return e
}

// Escalation is what one escalation run did, and the queue it left.
type Escalation struct {
	// Escalated is how many async reviews passed their SLA and were
	// escalated; Expired how many sync reviews were refused at their
	// deadline.
	Escalated, Expired int64
	// Pending is how many reviews are pending; Oldest when the oldest was
	// queued (zero when none is).
	Pending int64
	Oldest  time.Time
}

// Escalate runs one sweep: it marks pending async reviews whose SLA passed
// as escalated, each with an audit entry (escalate) on its draft, expires
// pending sync reviews whose deadline passed (fail-closed: their drafts are
// retracted), and refreshes the queue's gauges. It works in bounded
// batches until a short one.
func (e *Escalator) Escalate(ctx context.Context) (Escalation, error) {
	var res Escalation
	now := e.w.clock()
	for {
		n, err := store.EscalateReviews(ctx, e.w.db, now, e.batch, ActionEscalate, ApprovalActor)
		if err != nil {
			return res, err
		}
		res.Escalated += int64(n)
		e.escalations.Add(float64(n))
		if n < e.batch {
			break
		}
	}
	for {
		due, err := store.OverdueSyncReviews(ctx, e.w.db, now, e.batch)
		if err != nil {
			return res, err
		}
		for _, k := range due {
			_, expired, err := e.w.expireNow(ctx, k.Tenant, k.ID, "no decision by the deadline: the write is refused (fail-closed)")
			if err != nil {
				return res, fmt.Errorf("expire review %s: %w", k.ID, err)
			}
			if expired {
				res.Expired++
			}
		}
		if len(due) < e.batch || ctx.Err() != nil {
			break
		}
	}
	pending, oldest, err := store.ReviewQueue(ctx, e.w.db)
	if err != nil {
		return res, err
	}
	res.Pending = pending
	e.depth.Set(float64(pending))
	e.oldest.Set(0)
	if oldest != nil {
		res.Oldest = oldest.UTC()
		e.oldest.Set(max(0, now.Sub(*oldest).Seconds()))
	}
	return res, ctx.Err()
}
