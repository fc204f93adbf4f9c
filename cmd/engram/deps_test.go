package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The CLI speaks to engramd only through package client and the wire types
// of package api: it does not link pgx, nor any of engram's packages beyond
// client, api and memory — and loadgen, `engram bench ingest`'s load, which
// is an API client too — and mcpserver, `engram mcp`'s server, which calls the
// API through client, with skill, which names a procedure's SKILL.md — and
// internal/version, which names the build (engram --version).
func TestImportsNoDatabase(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH")
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case strings.HasPrefix(dep, "github.com/jackc/pgx"):
			t.Errorf("the CLI depends on %s", dep)
		case strings.HasPrefix(dep, "github.com/engram-dev/engram/") && dep != "github.com/engram-dev/engram/cmd/engram" &&
			dep != "github.com/engram-dev/engram/api" && dep != "github.com/engram-dev/engram/memory" &&
			dep != "github.com/engram-dev/engram/client" &&
			dep != "github.com/engram-dev/engram/mcpserver" && dep != "github.com/engram-dev/engram/skill" &&
			dep != "github.com/engram-dev/engram/internal/loadgen" && dep != "github.com/engram-dev/engram/internal/version":
			t.Errorf("the CLI depends on %s; it may use only client, api, memory, loadgen, version, and mcpserver and skill (engram mcp) of engram's packages", dep)
		}
	}
}
