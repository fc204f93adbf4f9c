// Package depstest lists what a package depends on, for the tests that
// hold a package to the few imports its place in the architecture allows
// (the wire types and the clients without the database, the protocol
// adapters without the write path).
package depstest

import (
	"os/exec"
	"strings"
	"testing"
)

// Deps returns the import paths of every package outside the standard
// library that the package in the test's directory depends on, itself
// included (go list -deps). It skips the test when go is not on PATH.
func Deps(t testing.TB) []string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}
