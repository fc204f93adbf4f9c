package mcpserver_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The MCP server is a thin translation onto the API: of engram's packages
// it imports only the client, the wire types (api, memory) and skill (a
// procedure's SKILL.md name), never the database, the write path or
// retrieval, so it cannot write around the API.
func TestImportsOnlyTheClient(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	allowed := map[string]bool{"mcpserver": true, "client": true, "api": true, "memory": true, "skill": true}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/jackc/pgx") {
			t.Errorf("mcpserver depends on %s", dep)
		}
		if name, ok := strings.CutPrefix(dep, "github.com/engram-dev/engram/"); ok && !allowed[name] {
			t.Errorf("mcpserver depends on %s; of engram's packages it may import only client, api, memory and skill", dep)
		}
	}
}
