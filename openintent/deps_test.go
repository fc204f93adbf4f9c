package openintent_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The adapter is a translation onto the /v1 API: it imports the Go client
// and the wire types, never the write path, the store or the database, so
// it cannot write around the one door or keep state of its own.
func TestImportsOnlyTheClient(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	allowed := []string{"github.com/engram-dev/engram/openintent", "github.com/engram-dev/engram/client",
		"github.com/engram-dev/engram/api", "github.com/engram-dev/engram/memory", "github.com/google/uuid"}
	for _, dep := range strings.Fields(string(out)) {
		if !slices.Contains(allowed, dep) {
			t.Errorf("openintent depends on %s; it may import only the standard library, uuid, client, api and memory", dep)
		}
	}
}
