package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/buildtest"
	"github.com/engram-dev/engram/internal/pgtest"
)

// tourBlock is a fenced block of the README's tour: a shell block, and
// the output shown after it (a text block), if any.
type tourBlock struct {
	sh, want string
}

// readTour returns the blocks of the README's section heading, in order.
func readTour(t *testing.T, heading string) []tourBlock {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	s := string(readme)
	start := strings.Index(s, "\n"+heading+"\n")
	require.GreaterOrEqual(t, start, 0, "the README has no %q", heading)
	s = s[start+len(heading)+2:]
	if end := strings.Index(s, "\n## "); end >= 0 {
		s = s[:end]
	}
	var blocks []tourBlock
	for _, m := range regexp.MustCompile("(?s)```(sh|text)\n(.*?)```").FindAllStringSubmatch(s, -1) {
		switch {
		case m[1] == "sh":
			blocks = append(blocks, tourBlock{sh: m[2]})
		case len(blocks) > 0 && blocks[len(blocks)-1].want == "":
			blocks[len(blocks)-1].want = m[2]
		default:
			t.Fatalf("a text block follows no shell block: %s", m[2])
		}
	}
	return blocks
}

// masks are what changes from run to run in the tour's output: ids,
// scores, token counts and times.
var masks = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "<id>"},
	{regexp.MustCompile(`(?m)^(\s+)\d\.\d\d  `), "${1}<score>  "},
	{regexp.MustCompile(`\d+ of (\d+) tokens`), "<n> of $1 tokens"},
	{regexp.MustCompile(`\d+(\.\d+)?(ms|µs|s)\b`), "<duration>"},
	{regexp.MustCompile(` +\n`), "\n"},
}

func mask(s string) string {
	for _, m := range masks {
		s = m.re.ReplaceAllString(s, m.with)
	}
	return strings.TrimSpace(s)
}

// The README's five-minute tour, run as it is written: engramd started as
// its first block starts it (its keys), every other shell block run in
// one shell in order (make lines aside: the test built the binaries),
// and each output the README shows compared with what the commands print,
// ids, scores, token counts and times masked. It ends with a learned
// procedure recalled with its bindings.
func TestReadmeTour(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a daemon")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not on PATH")
	}
	t.Parallel()
	blocks := readTour(t, "## A five-minute tour")
	require.NotEmpty(t, blocks)

	keys := regexp.MustCompile(`(?m)^export ENGRAM_API_KEYS='([^']+)'\nmake run$`).FindStringSubmatch(blocks[0].sh)
	require.NotNil(t, keys, "the tour starts engramd with chosen keys: %s", blocks[0].sh)
	db := pgtest.NewSchema(t)
	addr := freeAddr(t)
	startDaemonWith(t, buildEngramd(t), "ENGRAM_API_KEYS="+keys[1], "DATABASE_URL="+db.URL, "ENGRAM_LISTEN="+addr)

	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "bin"), 0o755))
	require.NoError(t, os.Symlink(buildtest.Command(t, "engram"), filepath.Join(dir, "bin", "engram")))

	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for i, b := range blocks[1:] {
		fmt.Fprintf(&script, "echo '@@block %d@@'\n", i)
		for _, line := range strings.SplitAfter(b.sh, "\n") {
			if !strings.HasPrefix(line, "make ") {
				script.WriteString(strings.ReplaceAll(line, "127.0.0.1:8080", addr))
			}
		}
	}
	cmd := exec.Command(bash, "-c", script.String())
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LANG=C.UTF-8"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "the tour failed:\n%s\n%s", stdout.String(), stderr.String())

	got := regexp.MustCompile(`@@block \d+@@\n`).Split(stdout.String(), -1)[1:]
	require.Len(t, got, len(blocks)-1)
	for i, b := range blocks[1:] {
		if b.want == "" {
			continue
		}
		require.Equal(t, mask(b.want), mask(got[i]), "the output of the tour's block\n%s", b.sh)
	}
	require.Contains(t, got[len(got)-1], "with package=dayjs\n        1. run bash npm install dayjs\n")
}
