package server

import (
	"net/http"

	"github.com/engram-dev/engram/revise"
)

// listAgents serves GET /v1/agents: each agent of the tenant that wrote
// facts, procedures or plans, with its counts and reputation (write-path
// RFC §12.11.5); an agent under review has its writes queued.
func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) error {
	agents, err := s.writer.Reputations(r.Context(), principalOf(r).tenant)
	if err != nil {
		return err
	}
	if agents == nil {
		agents = []revise.Reputation{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"agents": agents})
	return nil
}
