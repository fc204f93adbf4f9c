package jobs

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/robfig/cron/v3"
)

// DefaultLeaderInterval is how often a daemon tries to become the leader,
// and the leader checks that it still is.
const DefaultLeaderInterval = 5 * time.Second

// Off is the schedule of a job that runs only when asked.
const Off = "off"

// Job is a periodic job: a name, a cron schedule and what it does. Run
// works in bounded batches, returns promptly once ctx is done, and keeps
// its place with run's cursor so that the next run resumes where it
// stopped.
type Job struct {
	Name     string
	Schedule string
	Run      func(ctx context.Context, run *Run) error
}

// Config is what a [Scheduler] needs.
type Config struct {
	Pool   *pgxpool.Pool
	Logger *slog.Logger
	// Registry receives the job metrics; nil registers none.
	Registry prometheus.Registerer
	// Node names this daemon in job runs; the default is host:pid.
	Node string
	// LeaderInterval is how often leadership is tried and checked.
	LeaderInterval time.Duration
	// LockConn configures the direct connection that holds leadership and
	// the runs' locks, session-level advisory locks that a pooler in
	// transaction mode would lose between transactions (engramd's
	// database.lock_url). Nil: a connection like the pool's.
	LockConn *pgx.ConnConfig
}

// Scheduler runs periodic jobs on their cron schedules (robfig/cron), on one
// daemon at a time among all those sharing the database: the leader, which
// holds a PostgreSQL advisory lock. Any daemon may run a job on demand
// ([Scheduler.RunNow]); a job never runs twice at once, whichever daemon
// starts it, because each run holds a lock of its own. Every run is
// recorded in the job_runs table.
type Scheduler struct {
	pool     *pgxpool.Pool
	logger   *slog.Logger
	node     string
	interval time.Duration
	lockConn *pgx.ConnConfig
	metrics  *metrics
	cron     *cron.Cron

	mu      sync.Mutex
	state   state
	jobs    map[string]*entry
	where   string // database.schema, which lock keys are scoped to
	elector *elector
	locks   *runLocks
	runCtx  context.Context
	cancel  context.CancelFunc
	runs    sync.WaitGroup
}

type state int

const (
	idle state = iota
	started
	stopped
)

type entry struct {
	job Job
	id  cron.EntryID // 0 when not scheduled
}

// Errors of [Scheduler.RunNow] and [Scheduler.Register].
var (
	ErrUnknownJob = errors.New("no such job")
	ErrRunning    = errors.New("the job is running")
	ErrStopped    = errors.New("the scheduler is not running")
)

// parser reads standard five-field cron specs and descriptors such as
// @hourly and @every 10m.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSchedule checks a schedule: a cron spec ("*/15 * * * *"), a
// descriptor ("@hourly", "@every 10m"), or "off".
func ParseSchedule(spec string) error {
	if spec == Off || spec == "" {
		return nil
	}
	if _, err := parser.Parse(spec); err != nil {
		return fmt.Errorf("%q is not a cron schedule such as \"*/15 * * * *\", \"@hourly\" or \"off\": %w", spec, err)
	}
	return nil
}

// New returns a scheduler; register its jobs, then start it.
func New(cfg Config) *Scheduler {
	s := &Scheduler{
		pool:     cfg.Pool,
		logger:   cfg.Logger,
		node:     cfg.Node,
		interval: cfg.LeaderInterval,
		lockConn: cfg.LockConn,
		jobs:     map[string]*entry{},
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.node == "" {
		host, _ := os.Hostname()
		s.node = host + ":" + strconv.Itoa(os.Getpid())
	}
	if s.interval <= 0 {
		s.interval = DefaultLeaderInterval
	}
	s.metrics = newMetrics(cfg.Registry)
	s.cron = cron.New(cron.WithParser(parser), cron.WithLocation(time.UTC), cron.WithLogger(cronLogger{s.logger}))
	return s
}

// Node is the name this daemon records its runs under.
func (s *Scheduler) Node() string { return s.node }

// Register adds a job. Names are unique; the schedule must parse.
func (s *Scheduler) Register(j Job) error {
	if j.Name == "" || j.Run == nil {
		return errors.New("register job: a job needs a name and a function")
	}
	if err := ParseSchedule(j.Schedule); err != nil {
		return fmt.Errorf("register job %s: %w", j.Name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.jobs[j.Name]; ok {
		return fmt.Errorf("register job %s: registered twice", j.Name)
	}
	e := &entry{job: j}
	s.jobs[j.Name] = e
	if s.state == started {
		return s.schedule(e)
	}
	return nil
}

// Names lists the registered jobs.
func (s *Scheduler) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.jobs))
	for n := range s.jobs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// SetSchedule changes a job's schedule, also while the scheduler runs (a
// configuration reload); "off" unschedules it.
func (s *Scheduler) SetSchedule(name, spec string) error {
	if err := ParseSchedule(spec); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.jobs[name]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownJob, name)
	}
	if e.job.Schedule == spec {
		return nil
	}
	e.job.Schedule = spec
	if s.state != started {
		return nil
	}
	if e.id != 0 {
		s.cron.Remove(e.id)
		e.id = 0
	}
	return s.schedule(e)
}

// schedule adds e's cron entry; s.mu is held.
func (s *Scheduler) schedule(e *entry) error {
	if e.job.Schedule == "" || e.job.Schedule == Off {
		return nil
	}
	name := e.job.Name
	id, err := s.cron.AddFunc(e.job.Schedule, func() { s.fire(name) })
	if err != nil {
		return fmt.Errorf("schedule %s: %w", name, err)
	}
	e.id = id
	return nil
}

// Start schedules the registered jobs and takes part in leader election.
// Jobs run on the context Start was given, without its cancellation: Stop
// ends them.
func (s *Scheduler) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != idle {
		return errors.New("start jobs: the scheduler was started before")
	}
	if err := s.pool.QueryRow(ctx, "SELECT current_database() || '.' || current_schema()").Scan(&s.where); err != nil {
		return fmt.Errorf("start jobs: %w", err)
	}
	s.runCtx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	for _, e := range s.jobs {
		if err := s.schedule(e); err != nil {
			s.cancel()
			return err
		}
	}
	connCfg := s.lockConn
	if connCfg == nil {
		connCfg = s.pool.Config().ConnConfig
	}
	connect := func(ctx context.Context) (*pgx.Conn, error) { return pgx.ConnectConfig(ctx, connCfg.Copy()) }
	s.locks = &runLocks{connect: connect, logger: s.logger}
	s.elector = &elector{
		connect:  connect,
		key:      lockKey("engram-jobs-leader:" + s.where),
		interval: s.interval,
		logger:   s.logger,
		changed: func(leader bool) {
			s.metrics.leader.Set(map[bool]float64{true: 1}[leader])
			s.logger.Info("job leadership changed", slog.Bool("leader", leader), slog.String("node", s.node))
		},
	}
	s.elector.start(s.runCtx)
	s.cron.Start()
	s.state = started
	return nil
}

// Stop stops scheduling, cancels the runs in progress (each saves its
// cursor and is recorded as interrupted), waits for them within ctx, and
// gives up leadership. Stopping twice, or a scheduler never started, is a
// no-op.
func (s *Scheduler) Stop(ctx context.Context) error {
	s.mu.Lock()
	if s.state != started {
		s.state = stopped
		s.mu.Unlock()
		return nil
	}
	s.state = stopped
	s.mu.Unlock()

	s.cancel()
	cronDone := s.cron.Stop()
	done := make(chan struct{})
	go func() {
		<-cronDone.Done()
		s.runs.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("stop jobs: %w", ctx.Err())
	}
	s.elector.stop(ctx)
	s.locks.close(ctx)
	return err
}

// Leader reports whether this daemon leads, as of the last check.
func (s *Scheduler) Leader() bool {
	s.mu.Lock()
	e := s.elector
	s.mu.Unlock()
	return e != nil && e.leader.Load()
}

// fire is a cron tick of a job: it runs the job if this daemon leads and
// the job is not running anywhere.
func (s *Scheduler) fire(name string) {
	s.mu.Lock()
	e, ok := s.jobs[name]
	ctx, el := s.runCtx, s.elector
	s.mu.Unlock()
	if !ok || el == nil || !el.confirm(ctx) {
		return
	}
	run, release, err := s.begin(ctx, e.job.Name, TriggerSchedule)
	if err != nil {
		if !errors.Is(err, ErrRunning) && !errors.Is(err, ErrStopped) {
			s.logger.Error("start job", slog.String("job", name), slog.String("error", err.Error()))
			s.metrics.failures.WithLabelValues(name).Inc()
		}
		return
	}
	s.execute(e.job, run, release)
}

// RunNow starts a run of the job on this daemon, leader or not, and returns
// it while it runs. It is [ErrRunning] if the job is running anywhere.
func (s *Scheduler) RunNow(ctx context.Context, name string) (RunInfo, error) {
	s.mu.Lock()
	e, ok := s.jobs[name]
	s.mu.Unlock()
	if !ok {
		return RunInfo{}, fmt.Errorf("%w: %s", ErrUnknownJob, name)
	}
	run, release, err := s.begin(ctx, name, TriggerManual)
	if err != nil {
		return RunInfo{}, err
	}
	go s.execute(e.job, run, release)
	return RunInfo{ID: run.ID, Job: name, Trigger: run.Trigger, Node: s.node, Status: StatusRunning, StartedAt: run.StartedAt, Counts: map[string]int64{}}, nil
}

// Run statuses, as job_runs records them.
const (
	StatusRunning     = "running"
	StatusSucceeded   = "succeeded"
	StatusFailed      = "failed"
	StatusInterrupted = "interrupted"
	StatusAbandoned   = "abandoned"
)

const (
	abandonRunsSQL = `
UPDATE job_runs SET status = 'abandoned', ended_at = now(), error = 'the daemon running it stopped before it ended'
WHERE job = $1 AND status = 'running'`
	insertRunSQL = `
INSERT INTO job_runs (job, trigger, node, status, started_at) VALUES ($1, $2, $3, 'running', now())
RETURNING id, started_at`
	endRunSQL = `UPDATE job_runs SET status = $2, ended_at = now(), counts = $3, error = $4 WHERE id = $1`
)

// begin takes the job's lock (on the lock connection, see runLocks) and
// records the run's start. release gives the lock back.
func (s *Scheduler) begin(ctx context.Context, name, trigger string) (*Run, func(), error) {
	s.mu.Lock()
	if s.state != started {
		s.mu.Unlock()
		return nil, nil, ErrStopped
	}
	s.runs.Add(1)
	key := lockKey("engram-job:" + s.where + ":" + name)
	s.mu.Unlock()

	locked, gen, err := s.locks.tryLock(ctx, key)
	if err != nil {
		s.runs.Done()
		return nil, nil, fmt.Errorf("start job %s: %w", name, err)
	}
	if !locked {
		s.runs.Done()
		return nil, nil, fmt.Errorf("%w: %s", ErrRunning, name)
	}
	release := func() {
		s.locks.unlock(key, gen)
		s.runs.Done()
	}
	run := &Run{Job: name, Trigger: trigger, pool: s.pool, counts: map[string]int64{}}
	// Holding the lock, any run of this job still marked running is one
	// whose daemon died.
	if _, err := s.pool.Exec(ctx, abandonRunsSQL, name); err != nil {
		release()
		return nil, nil, fmt.Errorf("start job %s: %w", name, err)
	}
	if err := s.pool.QueryRow(ctx, insertRunSQL, name, trigger, s.node).Scan(&run.ID, &run.StartedAt); err != nil {
		release()
		return nil, nil, fmt.Errorf("start job %s: %w", name, err)
	}
	run.StartedAt = run.StartedAt.UTC()
	return run, release, nil
}

// execute runs a job and records how it ended.
func (s *Scheduler) execute(j Job, run *Run, release func()) {
	defer release()
	start := time.Now()
	err := safely(func() error { return j.Run(s.runCtx, run) })
	status := StatusSucceeded
	switch {
	case err == nil:
	case s.runCtx.Err() != nil && errors.Is(err, context.Canceled):
		status = StatusInterrupted
	default:
		status = StatusFailed
		s.metrics.failures.WithLabelValues(j.Name).Inc()
	}
	d := time.Since(start)
	s.metrics.duration.WithLabelValues(j.Name, status).Observe(d.Seconds())

	var msg *string
	if err != nil {
		m := err.Error()
		msg = &m
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.runCtx), cursorTimeout)
	defer cancel()
	if _, dbErr := s.pool.Exec(ctx, endRunSQL, run.ID, status, run.Counts(), msg); dbErr != nil {
		s.logger.Error("record job run", slog.String("job", j.Name), slog.Int64("run", run.ID), slog.String("error", dbErr.Error()))
	}
	attrs := []slog.Attr{slog.String("job", j.Name), slog.Int64("run", run.ID), slog.String("trigger", run.Trigger),
		slog.String("status", status), slog.Duration("duration", d), slog.Any("counts", run.Counts())}
	level := slog.LevelInfo
	if status == StatusFailed {
		level = slog.LevelError
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	s.logger.LogAttrs(ctx, level, "job run ended", attrs...)
}

// safely runs f, turning a panic into an error: a job that panics fails its
// run, not the daemon.
func safely(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return f()
}

// lockKey is the advisory lock key of a name.
func lockKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return int64(h.Sum64())
}

// cronLogger sends cron's messages to slog at debug level, errors at error.
type cronLogger struct{ logger *slog.Logger }

func (l cronLogger) Info(msg string, kv ...any) { l.logger.Debug("cron: "+msg, kv...) }

func (l cronLogger) Error(err error, msg string, kv ...any) {
	l.logger.Error("cron: "+msg, append(kv, "error", err.Error())...)
}
