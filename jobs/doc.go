// Package jobs runs engramd's periodic jobs (decay sweeps and purges,
// consolidation, the embedding backfill, …) on cron schedules
// (robfig/cron), on exactly one daemon at a time among all those that share
// a database.
//
// Leadership is a PostgreSQL session advisory lock held on a connection of
// the leader's own: only the leader's ticks run jobs, and it confirms it
// still holds the lock (its session is alive) before each. A daemon that
// dies or loses its connection loses the lock with it; another takes it
// within the leader interval. Independently of leadership, every run, on a
// tick or on demand, holds a lock of its own for the job, so a job never
// runs twice at once, and a run asked for while it runs is refused. The
// runs' locks share one connection outside the pool (runLocks), so a run
// holds none of the pool's while it works.
//
// Every run is a row of job_runs (start, end, counts, error, node). A job
// keeps its place in job_cursors: it saves a cursor after each batch, so a
// run cut off by shutdown ([Scheduler.Stop] cancels it and waits) is
// recorded as interrupted and the next run resumes from the last completed
// batch. A run whose daemon died without ending it is marked abandoned by
// the next run of its job.
package jobs
