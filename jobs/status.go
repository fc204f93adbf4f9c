package jobs

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/api"
)

// RunInfo is a run as job_runs records it.
type RunInfo = api.JobRun

// JobStatus is a job, its schedule, its last run and where it stopped.
type JobStatus = api.JobStatus

// Overview is the scheduler as one daemon sees it: the answer of GET
// /v1/jobs.
type Overview = api.JobsOverview

const (
	lastRunsSQL = `
SELECT DISTINCT ON (job) id, job, trigger, node, status, started_at, ended_at, counts, COALESCE(error, '')
FROM job_runs WHERE job = ANY($1)
ORDER BY job, id DESC`
	cursorsSQL = `SELECT job, cursor FROM job_cursors WHERE job = ANY($1)`
	getRunSQL  = `
SELECT id, job, trigger, node, status, started_at, ended_at, counts, COALESCE(error, '')
FROM job_runs WHERE id = $1`
)

// Jobs lists the registered jobs, by name, with their last runs on any
// daemon.
func (s *Scheduler) Jobs(ctx context.Context) (Overview, error) {
	names := s.Names()
	ov := Overview{Node: s.node, Leader: s.Leader(), Jobs: make([]JobStatus, len(names))}
	at := map[string]int{}
	s.mu.Lock()
	for i, n := range names {
		e := s.jobs[n]
		ov.Jobs[i] = JobStatus{Name: n, Schedule: e.job.Schedule}
		if e.id != 0 {
			if next := s.cron.Entry(e.id).Next; !next.IsZero() {
				next = next.UTC()
				ov.Jobs[i].NextRun = &next
			}
		}
		at[n] = i
	}
	s.mu.Unlock()

	rows, err := s.pool.Query(ctx, lastRunsSQL, names)
	if err != nil {
		return ov, fmt.Errorf("list job runs: %w", err)
	}
	runs, err := pgx.CollectRows(rows, scanRun)
	if err != nil {
		return ov, fmt.Errorf("list job runs: %w", err)
	}
	for _, r := range runs {
		ov.Jobs[at[r.Job]].LastRun = &r
	}
	rows, err = s.pool.Query(ctx, cursorsSQL, names)
	if err != nil {
		return ov, fmt.Errorf("list job cursors: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var cursor json.RawMessage
		if err := rows.Scan(&name, &cursor); err != nil {
			return ov, fmt.Errorf("list job cursors: %w", err)
		}
		ov.Jobs[at[name]].Cursor = cursor
	}
	return ov, rows.Err()
}

// GetRun returns a run by id.
func (s *Scheduler) GetRun(ctx context.Context, id int64) (RunInfo, error) {
	rows, err := s.pool.Query(ctx, getRunSQL, id)
	if err != nil {
		return RunInfo{}, fmt.Errorf("read job run: %w", err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanRun)
	if err != nil {
		return RunInfo{}, fmt.Errorf("read job run %d: %w", id, err)
	}
	return r, nil
}

func scanRun(row pgx.CollectableRow) (RunInfo, error) {
	var r RunInfo
	err := row.Scan(&r.ID, &r.Job, &r.Trigger, &r.Node, &r.Status, &r.StartedAt, &r.EndedAt, &r.Counts, &r.Error)
	r.StartedAt = r.StartedAt.UTC()
	if r.EndedAt != nil {
		t := r.EndedAt.UTC()
		r.EndedAt = &t
	}
	return r, err
}
