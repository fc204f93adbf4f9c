package client_test

import (
	"slices"
	"testing"

	"github.com/engram-dev/engram/internal/depstest"
)

// The client imports only the standard library, uuid and engram's wire
// types (api, memory), so a program can use it without pulling in pgx or
// anything that talks to the database.
func TestImportsNoDatabase(t *testing.T) {
	t.Parallel()
	allowed := []string{"github.com/engram-dev/engram/client", "github.com/engram-dev/engram/api",
		"github.com/engram-dev/engram/memory", "github.com/google/uuid"}
	for _, dep := range depstest.Deps(t) {
		if !slices.Contains(allowed, dep) {
			t.Errorf("client depends on %s; it may import only the standard library, uuid, api and memory", dep)
		}
	}
}
