package api_test

import (
	"slices"
	"testing"

	"github.com/engram-dev/engram/internal/depstest"
)

// The wire types import only the standard library, uuid and memory, so a
// client can use them without pulling in pgx or anything that talks to the
// database.
func TestImportsNoDatabase(t *testing.T) {
	t.Parallel()
	allowed := []string{"github.com/engram-dev/engram/api", "github.com/engram-dev/engram/memory", "github.com/google/uuid"}
	for _, dep := range depstest.Deps(t) {
		if !slices.Contains(allowed, dep) {
			t.Errorf("api depends on %s; it may import only the standard library, uuid and memory", dep)
		}
	}
}
