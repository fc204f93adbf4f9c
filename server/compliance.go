package server

import (
	"errors"
	"net/http"

	"github.com/engram-dev/engram/store"
)

// getCompliance serves GET /v1/compliance to operator keys: the latest
// report of the compliance job (write-path RFC §12.10.5), which covers
// every tenant. It names records by id, never by content.
func (s *Server) getCompliance(w http.ResponseWriter, r *http.Request) error {
	report, err := store.LatestComplianceReport(r.Context(), s.db)
	if errors.Is(err, store.ErrNotFound) {
		return problem(http.StatusNotFound, "no-report", "No report",
			"the compliance job has not run yet: POST /v1/jobs/compliance:run runs it now")
	}
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(report)
	return nil
}
