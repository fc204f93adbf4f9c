package decay

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
)

// DefaultBatchTimeout bounds each batch of a sweep or purge.
const DefaultBatchTimeout = 30 * time.Second

// Actor is who the audit log names for what decay does on its own.
const Actor = "engramd:decay"

// The periodic jobs of decay, by the names the configuration's jobs section
// and `engram jobs` use, and their default schedules: a sweep every quarter
// of an hour, a purge every hour.
const (
	SweepJob             = "decay_sweep"
	PurgeJob             = "decay_purge"
	DefaultSweepSchedule = "*/15 * * * *"
	DefaultPurgeSchedule = "17 * * * *"
)

// Decayer applies decay and forgetting to the store: sweeps that
// materialise salience and expire what has faded, the purge, feedback,
// restore, and the operator's previews and statistics.
type Decayer struct {
	db           pg.DBTX
	writer       *revise.Writer
	settings     *Settings
	logger       *slog.Logger
	now          func() time.Time
	batchTimeout time.Duration
	metrics      *metrics
	// retraction retracts a procedure whose uses feedback counts say it
	// keeps failing.
	retraction memory.RetractionRule
}

// Option configures a [Decayer].
type Option func(*Decayer)

// WithLogger sets the logger; the default discards.
func WithLogger(l *slog.Logger) Option { return func(d *Decayer) { d.logger = l } }

// WithClock sets the clock, for tests of time-dependent behaviour.
func WithClock(now func() time.Time) Option { return func(d *Decayer) { d.now = now } }

// WithRegistry registers the decay metrics (and the record count and
// salience collectors) with reg.
func WithRegistry(reg prometheus.Registerer) Option {
	return func(d *Decayer) { d.metrics = newMetrics(reg, d) }
}

// WithRetraction sets the rule that retracts a procedure whose uses,
// counted by feedback, say it keeps failing (the rule consolidation
// applies to the uses it observes: consolidate.Lifecycle.Rule);
// [memory.DefaultRetraction] when not set.
func WithRetraction(r memory.RetractionRule) Option { return func(d *Decayer) { d.retraction = r } }

// WithBatchTimeout bounds each batch of a sweep or purge.
func WithBatchTimeout(t time.Duration) Option { return func(d *Decayer) { d.batchTimeout = t } }

// New returns a decayer that reads records from db, writes them through
// writer and reads its configuration from settings.
func New(db pg.DBTX, writer *revise.Writer, settings *Settings, opts ...Option) *Decayer {
	d := &Decayer{
		db:           db,
		writer:       writer,
		settings:     settings,
		logger:       slog.New(slog.DiscardHandler),
		now:          time.Now,
		batchTimeout: DefaultBatchTimeout,
		retraction:   memory.DefaultRetraction,
	}
	for _, o := range opts {
		o(d)
	}
	if d.metrics == nil {
		d.metrics = newMetrics(nil, d)
	}
	return d
}

// Settings returns the configuration holder the decayer reads.
func (d *Decayer) Settings() *Settings { return d.settings }

// clock is the decayer's time at the database's microsecond precision.
func (d *Decayer) clock() time.Time { return d.now().UTC().Truncate(time.Microsecond) }

// Progress is where a periodic job reports what it did and keeps its place
// (jobs.Run implements it): a job stopped part-way resumes from its cursor.
type Progress interface {
	// Cursor reads the saved cursor into v; false if there is none.
	Cursor(ctx context.Context, v any) (bool, error)
	// SaveCursor saves v as the cursor; nil clears it.
	SaveCursor(ctx context.Context, v any) error
	// Add adds n to the run's count of name.
	Add(name string, n int64)
}
