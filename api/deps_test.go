package api_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The wire types import only the standard library, uuid and memory, so a
// client can use them without pulling in pgx or anything that talks to the
// database.
func TestImportsNoDatabase(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	allowed := []string{"github.com/engram-dev/engram/api", "github.com/engram-dev/engram/memory", "github.com/google/uuid"}
	for _, dep := range strings.Fields(string(out)) {
		if !slices.Contains(allowed, dep) {
			t.Errorf("api depends on %s; it may import only the standard library, uuid and memory", dep)
		}
	}
}
