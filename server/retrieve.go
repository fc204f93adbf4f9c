package server

import (
	"net/http"

	"github.com/engram-dev/engram/retrieve"
)

var errNoRetrieve = problem(http.StatusServiceUnavailable, "not-configured", "Retrieval not configured",
	"this server has no retriever")

// retrieveMemory answers POST /v1/retrieve: what the tenant's memory holds
// that helps with a task, layer by layer, within the caller's trust
// context (substrate RFC §15.8).
func (s *Server) retrieveMemory(w http.ResponseWriter, r *http.Request) error {
	if s.retrieve == nil {
		return errNoRetrieve
	}
	var req retrieve.Request
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	res, err := s.retrieve.Retrieve(r.Context(), principalOf(r).tenant, req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}
