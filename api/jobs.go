package api

import (
	"encoding/json"
	"time"
)

// JobsOverview is the answer of GET /v1/jobs: the periodic jobs as one
// daemon sees them, and whether it leads (runs the scheduled ticks).
type JobsOverview struct {
	Node   string      `json:"node"`
	Leader bool        `json:"leader"`
	Jobs   []JobStatus `json:"jobs"`
}

// JobStatus is a job, its schedule, its last run and where it stopped.
type JobStatus struct {
	Name     string `json:"name"`
	Schedule string `json:"schedule"`
	// NextRun is the next tick of its schedule; it runs then if this
	// daemon leads.
	NextRun *time.Time `json:"next_run,omitempty"`
	LastRun *JobRun    `json:"last_run,omitempty"`
	// Cursor is where an interrupted walk resumes.
	Cursor json.RawMessage `json:"cursor,omitempty"`
}

// JobRun is one run of a job, on any daemon. Trigger is schedule or
// manual; Status is running, succeeded, failed, interrupted or
// abandoned.
type JobRun struct {
	ID        int64            `json:"id"`
	Job       string           `json:"job"`
	Trigger   string           `json:"trigger"`
	Node      string           `json:"node"`
	Status    string           `json:"status"`
	StartedAt time.Time        `json:"started_at"`
	EndedAt   *time.Time       `json:"ended_at,omitempty"`
	Counts    map[string]int64 `json:"counts"`
	Error     string           `json:"error,omitempty"`
}

// JobStarted is the answer of POST /v1/jobs/{name}:run: the run, started.
type JobStarted struct {
	Run JobRun `json:"run"`
}
