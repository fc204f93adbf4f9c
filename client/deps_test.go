package client_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The client imports only the standard library, uuid and engram's wire
// types (api, memory), so a program can use it without pulling in pgx or
// anything that talks to the database.
func TestImportsNoDatabase(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	allowed := []string{"github.com/engram-dev/engram/client", "github.com/engram-dev/engram/api",
		"github.com/engram-dev/engram/memory", "github.com/google/uuid"}
	for _, dep := range strings.Fields(string(out)) {
		if !slices.Contains(allowed, dep) {
			t.Errorf("client depends on %s; it may import only the standard library, uuid, api and memory", dep)
		}
	}
}
