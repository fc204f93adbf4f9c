package server

import (
	"crypto/sha256"
	"net/http"
	"slices"

	"github.com/engram-dev/engram/client"
	"github.com/engram-dev/engram/mcpserver"
)

// mcpHandler serves /mcp: the MCP server of package mcpserver over the
// streamable HTTP transport (issue 15, part 1). It is authenticated like
// the API: a missing or unknown key is refused with the API's 401 problem,
// and an operator's key (which has no tenant, so no memory to serve) with
// its 403, before any MCP message is read. Each request's MCP server then
// calls the API in process with that request's own key, so every tool
// passes the same roles, tenant, redaction and write path as any client.
func (s *Server) mcpHandler() http.Handler {
	h := mcpserver.NewHTTPHandler(mcpserver.HTTPConfig{
		// s.handler is set once New has built the mux; it is read at call
		// time.
		HTTPClient:   client.InProcess(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) })),
		Logger:       s.logger,
		MaxBodyBytes: s.maxBody,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, ok := mcpserver.BearerKey(r)
		if !ok {
			s.writeProblem(w, r, errUnauthorized)
			return
		}
		p, err := s.lookupKey(r.Context(), sha256.Sum256([]byte(key)))
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		noteTenant(r, p)
		if !slices.Contains(tenantRoles, p.role) {
			s.writeProblem(w, r, forbidden(tenantRoles))
			return
		}
		h.ServeHTTP(w, r)
	})
}
