package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/engram-dev/engram/cmd/engramd/config"
	"github.com/engram-dev/engram/consolidate"
	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/embedding"
	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/jobs"
	"github.com/engram-dev/engram/retention"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/seal"
	"github.com/engram-dev/engram/store"
)

// newWriter returns the write path, whose new records take their decay
// profile and deletion policy from the decay configuration in force, and
// that configuration's holder. Every writer of the daemon shares it.
func newWriter(pool *pgxpool.Pool, cfg config.Config, reg prometheus.Registerer) (*revise.Writer, *decay.Settings, error) {
	settings, err := decay.NewSettings(cfg.Decay)
	if err != nil {
		return nil, nil, err
	}
	sealer, err := newSealer(pool, cfg)
	if err != nil {
		return nil, nil, err
	}
	w := revise.New(pool, revise.Config{MaxPayloadBytes: cfg.MaxPayloadBytes, MaxClockSkew: cfg.MaxClockSkew, Defaults: settings.Defaults, Gain: settings.Gain, Gates: cfg.WritePath,
		Registry: reg, Leases: cfg.Leases, Budgets: cfg.Budgets, Sealer: sealer})
	return w, settings, nil
}

// newSealer is the sealer of encryption at rest, with the configured
// master keys (none: it seals nothing).
func newSealer(db pg.DBTX, cfg config.Config) (*seal.Sealer, error) {
	keys, err := cfg.Encryption.Keys()
	if err != nil {
		return nil, err
	}
	return seal.New(seal.Config{DB: db, Keys: keys, MinSensitivity: cfg.Encryption.MinSensitivity})
}

// periodic is engramd's periodic work: the decayer and the scheduler that
// runs its jobs (decay, consolidation, embedding backfill), and the
// configuration reload on SIGHUP.
type periodic struct {
	settings  *decay.Settings
	retrieve  *retrieve.Settings
	retention *retention.Settings
	decayer   *decay.Decayer
	scheduler *jobs.Scheduler
	load      func() (config.Config, error)
	logger    *slog.Logger

	cfg        config.Config // in force; only the reload loop uses it
	stopReload context.CancelFunc
	reloaded   chan struct{}
}

// startPeriodic registers the periodic jobs with their configured schedules,
// starts the scheduler and watches for SIGHUP, which reloads the
// configuration with load.
func startPeriodic(ctx context.Context, cfg config.Config, load func() (config.Config, error), pool *pgxpool.Pool,
	writer *revise.Writer, settings *decay.Settings, ret *retrieval, reg prometheus.Registerer, logger *slog.Logger) (*periodic, error) {
	dec := decay.New(pool, writer, settings, decay.WithLogger(logger), decay.WithRegistry(reg),
		decay.WithRetraction(cfg.Consolidate.Lifecycle.Rule()))
	esc := revise.NewEscalator(writer, revise.EscalatorConfig{Registry: reg})
	lockConn, err := pgxpool.ParseConfig(cfg.Database.LockDSN(cfg.DatabaseURL))
	if err != nil {
		return nil, fmt.Errorf("database.lock_url: %w", err)
	}
	sched := jobs.New(jobs.Config{Pool: pool, Logger: logger, Registry: reg, LockConn: lockConn.ConnConfig})
	model, err := newExtractor(cfg, reg, logger)
	if err != nil {
		return nil, err
	}
	cons := consolidate.New(consolidate.Config{DB: pool, Writer: writer, Logger: logger, Registry: reg,
		Support: cfg.Consolidate.Support, Probes: cfg.Consolidate.Probes, Lifecycle: cfg.Consolidate.Lifecycle, Decay: dec,
		Duplicates: cfg.Consolidate.Duplicates, Compress: cfg.Consolidate.Compress,
		Extractor: model, Redactor: ret.redactor})
	// The compliance report lists the erasures not yet complete (write-path
	// RFC §12.10.5), at most a thousand, oldest first.
	keep := retention.New(retention.Options{DB: pool, Writer: writer, Settings: ret.retention, Logger: logger, Registry: reg,
		Erasures: retention.Unfinished(pool, 1000)})
	all := []jobs.Job{
		{Name: decay.SweepJob, Run: func(ctx context.Context, r *jobs.Run) error { return dec.Sweep(ctx, r) }},
		{Name: decay.PurgeJob, Run: func(ctx context.Context, r *jobs.Run) error {
			if err := dec.Purge(ctx, r); err != nil {
				return err
			}
			return purgeIdempotencyKeys(ctx, pool, r)
		}},
		{Name: retrieve.StatsJob, Run: func(ctx context.Context, r *jobs.Run) error { return ret.retriever.RefreshStats(ctx, r) }},
		{Name: revise.AuditProvenanceJob, Run: func(ctx context.Context, r *jobs.Run) error { return writer.RunProvenanceAudit(ctx, r) }},
		{Name: revise.EscalationJob, Run: func(ctx context.Context, r *jobs.Run) error { return escalate(ctx, esc, r) }},
		{Name: consolidate.Job, Run: func(ctx context.Context, r *jobs.Run) error { return cons.Consolidate(ctx, r) }},
		{Name: retention.Job, Run: func(ctx context.Context, r *jobs.Run) error { return keep.Enforce(ctx, r) }},
		{Name: retention.ComplianceJob, Run: func(ctx context.Context, r *jobs.Run) error {
			_, err := keep.Check(ctx, r, r.ID)
			return err
		}},
	}
	if b := ret.backfiller; b != nil {
		all = append(all,
			jobs.Job{Name: embedding.BackfillJob, Run: func(ctx context.Context, r *jobs.Run) error { return b.Backfill(ctx, r) }},
			jobs.Job{Name: embedding.ReindexJob, Run: func(ctx context.Context, r *jobs.Run) error { return b.Reindex(ctx, r) }})
	}
	for _, j := range all {
		j.Schedule = scheduleOf(cfg, j.Name)
		if err := sched.Register(j); err != nil {
			return nil, err
		}
	}
	if err := checkJobNames(cfg, sched); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	if err := sched.Start(ctx); err != nil {
		return nil, err
	}
	p := &periodic{settings: settings, retrieve: ret.settings, retention: ret.retention, decayer: dec, scheduler: sched, load: load, logger: logger, cfg: cfg}
	var rctx context.Context
	rctx, p.stopReload = context.WithCancel(ctx)
	p.reloaded = make(chan struct{}, 1)
	go p.reloadOnHUP(rctx)
	logger.Info("periodic jobs started", slog.Any("jobs", cfg.Jobs), slog.String("node", sched.Node()))
	return p, nil
}

// escalate runs the review queue's escalation sweep as a job, counting
// what it did in the run.
func escalate(ctx context.Context, esc *revise.Escalator, r *jobs.Run) error {
	res, err := esc.Escalate(ctx)
	r.Add("escalated", res.Escalated)
	r.Add("expired", res.Expired)
	r.Add("pending", res.Pending)
	return err
}

// scheduleOf is a job's configured schedule; a job the configuration does
// not name runs only when asked.
func scheduleOf(cfg config.Config, name string) string {
	if s, ok := cfg.Jobs[name]; ok {
		return s
	}
	return jobs.Off
}

// checkJobNames refuses a schedule for a job engramd does not have.
func checkJobNames(cfg config.Config, sched *jobs.Scheduler) error {
	known := sched.Names()
	for _, name := range slices.Sorted(maps.Keys(cfg.Jobs)) {
		if !slices.Contains(known, name) {
			return fmt.Errorf("jobs.%s: no such job (there are %s)", name, strings.Join(known, ", "))
		}
	}
	return nil
}

// reloadOnHUP reloads the configuration on each SIGHUP until ctx is done.
func (p *periodic) reloadOnHUP(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			p.reload(ctx)
		}
	}
}

// reload reads the configuration again and puts its decay, retrieve and
// retention sections and job schedules in force. A configuration that does not load or validate is
// refused whole, with the field named, and the one in force stays. Other
// settings (listen address, database, keys) take a restart.
func (p *periodic) reload(ctx context.Context) {
	defer func() {
		select {
		case p.reloaded <- struct{}{}:
		default:
		}
	}()
	cfg, err := p.load()
	if err == nil {
		err = checkJobNames(cfg, p.scheduler)
	}
	if err != nil {
		p.logger.Error("configuration reload refused; the configuration in force stays", slog.String("error", err.Error()))
		return
	}
	if err := p.settings.Set(cfg.Decay); err != nil {
		p.logger.Error("configuration reload refused; the configuration in force stays", slog.String("error", err.Error()))
		return
	}
	// Validated with the whole configuration above: Set cannot refuse it.
	_ = p.retrieve.Set(cfg.Retrieve)
	_ = p.retention.Set(cfg.Retention)
	for _, name := range p.scheduler.Names() {
		if err := p.scheduler.SetSchedule(name, scheduleOf(cfg, name)); err != nil {
			// Validated with the configuration: not expected.
			p.logger.Error("reschedule job", slog.String("job", name), slog.String("error", err.Error()))
		}
	}
	profilesChanged := !reflect.DeepEqual(p.cfg.Decay.Profiles, cfg.Decay.Profiles)
	restart := cfg.Listen != p.cfg.Listen || cfg.PprofListen != p.cfg.PprofListen || cfg.DatabaseURL != p.cfg.DatabaseURL ||
		!reflect.DeepEqual(cfg.APIKeys, p.cfg.APIKeys)
	p.cfg = cfg
	p.logger.Info("configuration reloaded: decay and job schedules in force", slog.Any("jobs", cfg.Jobs))
	if restart {
		p.logger.Warn("listen, pprof_listen, database_url and api_keys changed in the file take effect at the next start")
	}
	if profilesChanged && p.scheduler.Leader() {
		// Records that inherit a changed profile get it at the next sweep:
		// sweep now rather than at the next tick.
		if _, err := p.scheduler.RunNow(ctx, decay.SweepJob); err != nil && !errors.Is(err, jobs.ErrRunning) {
			p.logger.Warn("sweep after reload", slog.String("error", err.Error()))
		}
	}
}

// stop stops the reload watch and the scheduler (its runs save their
// cursors) within timeout.
func (p *periodic) stop(ctx context.Context, timeout time.Duration) {
	p.stopReload()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := p.scheduler.Stop(ctx); err != nil {
		p.logger.Warn("stop periodic jobs", slog.String("error", err.Error()))
	}
}

// purgeIdempotencyKeys deletes the idempotency keys whose results have
// expired (server.IdempotencyTTL), in batches, with the decay purge: both
// forget for good what is past keeping.
func purgeIdempotencyKeys(ctx context.Context, db pg.DBTX, r *jobs.Run) error {
	const batch = 1000
	for {
		n, err := store.PurgeIdempotencyKeys(ctx, db, time.Now(), batch)
		r.Add("idempotency_keys_purged", n)
		if err != nil || n < batch {
			return err
		}
	}
}
