package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/jobs"
)

type bundle struct {
	ctx context.Context
	db  *pgtest.Schema
}

func setup(t *testing.T) *bundle {
	t.Helper()
	return &bundle{ctx: context.Background(), db: pgtest.NewSchema(t)}
}

// daemon is a scheduler on a pool of its own, as a second engramd on the
// same database would have; it is stopped at cleanup.
func (b *bundle) daemon(t *testing.T, node string, js ...jobs.Job) *jobs.Scheduler {
	t.Helper()
	pool, err := pg.NewPool(b.ctx, b.db.URL, nil)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	s := jobs.New(jobs.Config{Pool: pool, Node: node, LeaderInterval: 20 * time.Millisecond})
	for _, j := range js {
		require.NoError(t, s.Register(j))
	}
	require.NoError(t, s.Start(b.ctx))
	t.Cleanup(func() { require.NoError(t, s.Stop(context.Background())) })
	return s
}

func (b *bundle) runs(t *testing.T, job string) []jobs.RunInfo {
	t.Helper()
	rows, err := b.db.Pool.Query(b.ctx, `SELECT id, node, status, trigger, counts, COALESCE(error, '') FROM job_runs WHERE job = $1 ORDER BY id`, job)
	require.NoError(t, err)
	defer rows.Close()
	var out []jobs.RunInfo
	for rows.Next() {
		var r jobs.RunInfo
		require.NoError(t, rows.Scan(&r.ID, &r.Node, &r.Status, &r.Trigger, &r.Counts, &r.Error))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

func leaderOf(t *testing.T, ss ...*jobs.Scheduler) (leader, follower *jobs.Scheduler) {
	t.Helper()
	require.Eventually(t, func() bool {
		n := 0
		for _, s := range ss {
			if s.Leader() {
				n++
				leader = s
			}
		}
		return n == 1
	}, 10*time.Second, 10*time.Millisecond, "one scheduler leads")
	for _, s := range ss {
		if s != leader {
			follower = s
		}
	}
	return leader, follower
}

// counter is a job that counts its runs.
func counter(n *atomic.Int64) jobs.Job {
	return jobs.Job{Name: "count", Schedule: jobs.Off, Run: func(ctx context.Context, run *jobs.Run) error {
		n.Add(1)
		run.Add("ran", 1)
		return nil
	}}
}

// Two daemons on one database tick together; the job runs once per tick,
// on the leader. When the leader stops, the other takes over.
func TestTwoDaemonsRunAJobOncePerTick(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var n atomic.Int64
	a, c := b.daemon(t, "a", counter(&n)), b.daemon(t, "c", counter(&n))
	leader, follower := leaderOf(t, a, c)

	for tick := 1; tick <= 5; tick++ {
		var wg sync.WaitGroup
		wg.Go(func() { a.Fire("count") })
		wg.Go(func() { c.Fire("count") })
		wg.Wait()
		require.Equal(t, int64(tick), n.Load(), "tick %d", tick)
	}
	runs := b.runs(t, "count")
	require.Len(t, runs, 5)
	for _, r := range runs {
		require.Equal(t, leader.Node(), r.Node)
		require.Equal(t, jobs.StatusSucceeded, r.Status)
		require.Equal(t, jobs.TriggerSchedule, r.Trigger)
		require.Equal(t, map[string]int64{"ran": 1}, r.Counts)
	}

	require.NoError(t, leader.Stop(b.ctx))
	require.Eventually(t, follower.Leader, 10*time.Second, 10*time.Millisecond, "the other daemon takes over")
	leader.Fire("count")
	follower.Fire("count")
	require.Equal(t, int64(6), n.Load())
	runs = b.runs(t, "count")
	require.Equal(t, follower.Node(), runs[len(runs)-1].Node)
}

// A real cron schedule fires runs on the leader.
func TestCronFiresScheduledRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var n atomic.Int64
	j := counter(&n)
	j.Schedule = "@every 1s"
	s := b.daemon(t, "solo", j)
	require.Eventually(t, func() bool { return n.Load() >= 2 }, 15*time.Second, 20*time.Millisecond)
	ov, err := s.Jobs(b.ctx)
	require.NoError(t, err)
	require.True(t, ov.Leader)
	require.Len(t, ov.Jobs, 1)
	require.Equal(t, "@every 1s", ov.Jobs[0].Schedule)
	require.NotNil(t, ov.Jobs[0].NextRun)
	require.NotNil(t, ov.Jobs[0].LastRun)

	require.NoError(t, s.SetSchedule("count", jobs.Off))
	ov, err = s.Jobs(b.ctx)
	require.NoError(t, err)
	require.Nil(t, ov.Jobs[0].NextRun)
}

// A run cut off by shutdown is recorded as interrupted with its cursor and
// counts saved; the next run, on another daemon, resumes from the cursor
// and every item is processed once.
func TestInterruptedRunResumesFromItsCursor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const items, batch = 50, 10
	var mu sync.Mutex
	seen := map[int]int{}
	reached := make(chan struct{})
	walk := func(block bool) jobs.Job {
		return jobs.Job{Name: "walk", Run: func(ctx context.Context, run *jobs.Run) error {
			var next int
			if _, err := run.Cursor(ctx, &next); err != nil {
				return err
			}
			for next < items {
				if block && next == 3*batch {
					close(reached)
					<-ctx.Done() // shutdown arrives mid-walk
				}
				if err := ctx.Err(); err != nil {
					return err
				}
				mu.Lock()
				for i := next; i < next+batch; i++ {
					seen[i]++
				}
				mu.Unlock()
				next += batch
				run.Add("items", batch)
				if err := run.SaveCursor(ctx, next); err != nil {
					return err
				}
			}
			return run.SaveCursor(ctx, nil)
		}}
	}

	first := b.daemon(t, "first", walk(true))
	r, err := first.RunNow(b.ctx, "walk")
	require.NoError(t, err)
	<-reached
	require.NoError(t, first.Stop(b.ctx))

	runs := b.runs(t, "walk")
	require.Len(t, runs, 1)
	require.Equal(t, r.ID, runs[0].ID)
	require.Equal(t, jobs.StatusInterrupted, runs[0].Status)
	require.Equal(t, map[string]int64{"items": 30}, runs[0].Counts)
	ov, err := first.Jobs(b.ctx)
	require.NoError(t, err)
	require.JSONEq(t, "30", string(ov.Jobs[0].Cursor))

	second := b.daemon(t, "second", walk(false))
	r, err = second.RunNow(b.ctx, "walk")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		run, err := second.GetRun(b.ctx, r.ID)
		return err == nil && run.Status != jobs.StatusRunning
	}, 10*time.Second, 10*time.Millisecond)
	runs = b.runs(t, "walk")
	require.Equal(t, jobs.StatusSucceeded, runs[1].Status)
	require.Equal(t, map[string]int64{"items": 20}, runs[1].Counts, "resumed at item 30")
	require.Len(t, seen, items)
	for i, n := range seen {
		require.Equal(t, 1, n, "item %d", i)
	}
	ov, err = second.Jobs(b.ctx)
	require.NoError(t, err)
	require.Nil(t, ov.Jobs[0].Cursor, "a finished walk clears its cursor")
}

// A job runs once at a time across daemons: asking for a run while one is
// in progress anywhere is refused.
func TestRunNowRefusesAJobAlreadyRunning(t *testing.T) {
	t.Parallel()
	b := setup(t)
	started, release := make(chan struct{}), make(chan struct{})
	slow := jobs.Job{Name: "slow", Run: func(ctx context.Context, run *jobs.Run) error {
		close(started)
		<-release
		return nil
	}}
	a := b.daemon(t, "a", slow)
	c := b.daemon(t, "c", jobs.Job{Name: "slow", Run: func(context.Context, *jobs.Run) error { return nil }})
	r, err := a.RunNow(b.ctx, "slow")
	require.NoError(t, err)
	<-started
	_, err = c.RunNow(b.ctx, "slow")
	require.ErrorIs(t, err, jobs.ErrRunning)
	_, err = a.RunNow(b.ctx, "slow")
	require.ErrorIs(t, err, jobs.ErrRunning)
	close(release)
	require.Eventually(t, func() bool {
		run, err := a.GetRun(b.ctx, r.ID)
		return err == nil && run.Status == jobs.StatusSucceeded
	}, 10*time.Second, 10*time.Millisecond)
	// The run's row is written before its lock is let go: free again soon
	// after, never while it still runs.
	require.Eventually(t, func() bool {
		_, err := c.RunNow(b.ctx, "slow")
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "free again")

	_, err = a.RunNow(b.ctx, "nope")
	require.ErrorIs(t, err, jobs.ErrUnknownJob)
}

// Failures and panics are recorded as failed runs; the daemon carries on.
func TestFailedRunsAreRecorded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.daemon(t, "a",
		jobs.Job{Name: "fails", Run: func(context.Context, *jobs.Run) error { return errors.New("disk on fire") }},
		jobs.Job{Name: "panics", Run: func(context.Context, *jobs.Run) error { panic("oops") }},
	)
	leaderOf(t, s)
	s.Fire("fails")
	s.Fire("panics")
	require.Equal(t, "disk on fire", b.runs(t, "fails")[0].Error)
	require.Equal(t, jobs.StatusFailed, b.runs(t, "fails")[0].Status)
	require.Equal(t, "panic: oops", b.runs(t, "panics")[0].Error)
}

// A run whose daemon died without ending it is marked abandoned by the
// next run of its job.
func TestAbandonedRunsAreMarked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.db.Pool.Exec(b.ctx, `INSERT INTO job_runs (job, trigger, node, status, started_at) VALUES ('count', 'schedule', 'dead', 'running', now())`)
	require.NoError(t, err)
	var n atomic.Int64
	s := b.daemon(t, "a", counter(&n))
	leaderOf(t, s)
	s.Fire("count")
	runs := b.runs(t, "count")
	require.Equal(t, jobs.StatusAbandoned, runs[0].Status)
	require.Equal(t, jobs.StatusSucceeded, runs[1].Status)
}

// Stop is safe twice and before Start; a stopped scheduler runs nothing.
func TestStopIsSafe(t *testing.T) {
	t.Parallel()
	b := setup(t)
	never := jobs.New(jobs.Config{Pool: b.db.Pool})
	require.NoError(t, never.Stop(b.ctx))
	require.NoError(t, never.Stop(b.ctx))

	var n atomic.Int64
	s := b.daemon(t, "a", counter(&n))
	require.NoError(t, s.Stop(b.ctx))
	require.NoError(t, s.Stop(b.ctx))
	_, err := s.RunNow(b.ctx, "count")
	require.ErrorIs(t, err, jobs.ErrStopped)
	s.Fire("count")
	require.Zero(t, n.Load())
	require.False(t, s.Leader())
}

func TestRegisterRefusesBadJobs(t *testing.T) {
	t.Parallel()
	s := jobs.New(jobs.Config{})
	noop := func(context.Context, *jobs.Run) error { return nil }
	require.ErrorContains(t, s.Register(jobs.Job{Name: "x", Schedule: "every day", Run: noop}), "is not a cron schedule")
	require.NoError(t, s.Register(jobs.Job{Name: "x", Schedule: "*/5 * * * *", Run: noop}))
	require.ErrorContains(t, s.Register(jobs.Job{Name: "x", Run: noop}), "registered twice")
	require.ErrorIs(t, s.SetSchedule("y", "@hourly"), jobs.ErrUnknownJob)
	require.Error(t, s.SetSchedule("x", "61 * * * *"))
	require.NoError(t, jobs.ParseSchedule("@every 15m"))
	require.NoError(t, jobs.ParseSchedule(jobs.Off))
}

// As many runs at once as the pool has connections each still get a
// connection for their own queries: a run's lock holds none of the pool's
// (engramd on two cores, pool of four, hung for good five minutes after
// start, when four jobs' schedules fell on one second).
func TestRunsAsManyAsThePoolDoNotStarveIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pool, err := pg.NewPool(b.ctx, b.db.URL, func(c *pgxpool.Config) { c.MaxConns = 2 })
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	s := jobs.New(jobs.Config{Pool: pool, Node: "small", LeaderInterval: 20 * time.Millisecond})
	const n = 3 // more runs than the pool has connections
	var started sync.WaitGroup
	started.Add(n)
	all := make(chan struct{})
	for i := range n {
		require.NoError(t, s.Register(jobs.Job{Name: fmt.Sprintf("query%d", i), Schedule: jobs.Off, Run: func(ctx context.Context, r *jobs.Run) error {
			started.Done()
			<-all // every run holds its lock before any queries
			// A guard, not a measure: a starved pool waits for ever.
			ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			_, err := pool.Exec(ctx, "SELECT 1")
			return err
		}}))
	}
	require.NoError(t, s.Start(b.ctx))
	t.Cleanup(func() { require.NoError(t, s.Stop(context.Background())) })
	release := sync.OnceFunc(func() { close(all) })
	t.Cleanup(release)                                        // before Stop, which waits for the runs
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second) // the same guard
	defer cancel()
	for i := range n {
		_, err := s.RunNow(ctx, fmt.Sprintf("query%d", i))
		require.NoError(t, err)
	}
	started.Wait()
	release()
	for i := range n {
		name := fmt.Sprintf("query%d", i)
		require.Eventually(t, func() bool {
			runs := b.runs(t, name)
			return len(runs) == 1 && runs[0].Status != jobs.StatusRunning
		}, time.Minute, 20*time.Millisecond)
		require.Equal(t, jobs.StatusSucceeded, b.runs(t, name)[0].Status, b.runs(t, name)[0].Error)
	}
}
