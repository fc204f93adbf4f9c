package openintent_test

import (
	"slices"
	"testing"

	"github.com/engram-dev/engram/internal/depstest"
)

// The adapter is a translation onto the /v1 API: it imports the Go client
// and the wire types, never the write path, the store or the database, so
// it cannot write around the one door or keep state of its own.
func TestImportsOnlyTheClient(t *testing.T) {
	t.Parallel()
	allowed := []string{"github.com/engram-dev/engram/openintent", "github.com/engram-dev/engram/client",
		"github.com/engram-dev/engram/api", "github.com/engram-dev/engram/memory", "github.com/google/uuid"}
	for _, dep := range depstest.Deps(t) {
		if !slices.Contains(allowed, dep) {
			t.Errorf("openintent depends on %s; it may import only the standard library, uuid, client, api and memory", dep)
		}
	}
}
