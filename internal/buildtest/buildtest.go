// Package buildtest builds the module's commands for the tests that run
// them as processes (engramd, the engram CLI, engram-eval): each once per
// test process, whichever tests ask, into one directory that [Main]
// removes when the tests end.
package buildtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Module is the module's import path; a command is Module + "/cmd/" + its
// name.
const Module = "github.com/engram-dev/engram"

var (
	mu    sync.Mutex
	dir   string
	built = map[string]*result{}
)

type result struct {
	once sync.Once
	bin  string
	err  error
}

// Command returns the path of command name (engramd, engram,
// engram-eval), built with ldflags on first use in this test process, or
// fails the test with the build's output.
func Command(t testing.TB, name string, ldflags ...string) string {
	t.Helper()
	bin, err := Build(name, ldflags...)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// Build is [Command] for a caller with no test (a TestMain).
func Build(name string, ldflags ...string) (string, error) {
	key := name + fmt.Sprint(ldflags)
	mu.Lock()
	if dir == "" {
		d, err := os.MkdirTemp("", "engram-test-bin-")
		if err != nil {
			mu.Unlock()
			return "", err
		}
		dir = d
	}
	r, ok := built[key]
	if !ok {
		r = &result{}
		built[key] = r
	}
	out := filepath.Join(dir, fmt.Sprintf("%d", len(built)), name)
	mu.Unlock()
	r.once.Do(func() {
		args := []string{"build", "-o", out}
		if len(ldflags) > 0 {
			args = append(args, "-ldflags="+strings.Join(ldflags, " "))
		}
		args = append(args, Module+"/cmd/"+name)
		if b, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			r.err = fmt.Errorf("go build %s: %v\n%s", name, err, b)
			return
		}
		r.bin = out
	})
	return r.bin, r.err
}

// Main runs the tests of m and removes what they built, and exits with
// their code: call it from a package's TestMain.
func Main(m *testing.M) {
	code := m.Run()
	mu.Lock()
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
	mu.Unlock()
	os.Exit(code)
}
