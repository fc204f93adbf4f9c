package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/engram-dev/engram/internal/depstest"
)

// The MCP server is a thin translation onto the API: of engram's packages
// it imports only the client, the wire types (api, memory) and skill (a
// procedure's SKILL.md name), never the database, the write path or
// retrieval, so it cannot write around the API.
func TestImportsOnlyTheClient(t *testing.T) {
	t.Parallel()
	allowed := map[string]bool{"mcpserver": true, "client": true, "api": true, "memory": true, "skill": true}
	for _, dep := range depstest.Deps(t) {
		if strings.HasPrefix(dep, "github.com/jackc/pgx") {
			t.Errorf("mcpserver depends on %s", dep)
		}
		if name, ok := strings.CutPrefix(dep, "github.com/engram-dev/engram/"); ok && !allowed[name] {
			t.Errorf("mcpserver depends on %s; of engram's packages it may import only client, api, memory and skill", dep)
		}
	}
}
