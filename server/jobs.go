package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/jobs"
)

var errNoJobs = problem(http.StatusServiceUnavailable, "not-configured", "Not configured",
	"this server runs no periodic jobs")

// listJobs serves GET /v1/jobs to operator keys: jobs work across every
// tenant, and their runs' counts are every tenant's.
func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) error {
	if s.jobs == nil {
		return errNoJobs
	}
	ov, err := s.jobs.Jobs(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ov)
	return nil
}

// runJob serves POST /v1/jobs/{name}:run to operator keys: a run now, on
// this daemon, whether it leads or not. It answers when the run has
// started.
func (s *Server) runJob(w http.ResponseWriter, r *http.Request) error {
	if s.jobs == nil {
		return errNoJobs
	}
	name, op, ok := strings.Cut(r.PathValue("nameop"), ":")
	if !ok || op != "run" {
		return problem(http.StatusNotFound, "not-found", "Not found", "run a job with POST /v1/jobs/{name}:run")
	}
	run, err := s.jobs.RunNow(r.Context(), name)
	switch {
	case errors.Is(err, jobs.ErrUnknownJob):
		return problem(http.StatusNotFound, "not-found", "Not found",
			fmt.Sprintf("no job named %q: GET /v1/jobs lists them", name))
	case errors.Is(err, jobs.ErrRunning):
		return problem(http.StatusConflict, "job-running", "Conflict",
			fmt.Sprintf("job %s is running (on this or another daemon); GET /v1/jobs shows its run", name))
	case errors.Is(err, jobs.ErrStopped):
		return problem(http.StatusServiceUnavailable, "not-running", "Not running", "the scheduler is stopping")
	case err != nil:
		return err
	}
	writeJSON(w, http.StatusAccepted, api.JobStarted{Run: run})
	return nil
}
