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
	// The task is redacted as what it is matched against was, and the
	// retrieval log keeps its agent and thread. It is a read: secrets in
	// it are redacted, never refused.
	var req retrieve.Request
	if err := s.redaction().decode(r, &req); err != nil {
		return err
	}
	p := principalOf(r)
	reader := retrieve.Reader{Viewer: viewerOf(r)}
	if s.reads != nil {
		reader.DB = s.reads.For(readerOf(p))
	}
	res, err := s.retrieve.RetrieveFor(r.Context(), p.tenant, req, reader)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}
