package loadgen

import (
	"os/exec"
	"strings"
	"testing"
)

// The load generator is an API client: it links no database code and none
// of engram's packages but api, so the CLI may use it.
func TestImportsOnlyTheAPI(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH")
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/jackc/pgx") || strings.HasPrefix(dep, "github.com/engram-dev/engram/") &&
			dep != "github.com/engram-dev/engram/internal/loadgen" && dep != "github.com/engram-dev/engram/api" && dep != "github.com/engram-dev/engram/memory" {
			t.Errorf("loadgen depends on %s", dep)
		}
	}
}
