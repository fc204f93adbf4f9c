package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pgtest"
)

// pythonClient is the directory of the Python client, from this package's.
var pythonClient = filepath.Join("..", "..", "clients", "python")

// python3 is the path of python3, or the test is skipped: the Python
// client's tests need an interpreter, nothing else.
func python3(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH: the Python client's tests need it")
	}
	return py
}

// The Python client's unittest suite (clients/python/tests), README example
// included, against a real engramd on a fresh schema. Python's failures
// fail this test; its suite must run, not skip.
func TestPythonClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a daemon")
	}
	py := python3(t)
	t.Parallel()
	db := pgtest.NewSchema(t)
	addr := freeAddr(t)
	startDaemon(t, buildEngramd(t), db.URL, addr)

	dir, err := filepath.Abs(pythonClient)
	require.NoError(t, err)
	cmd := exec.Command(py, "-m", "unittest", "discover", "-s", "tests", "-v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONPATH="+dir, "PYTHONDONTWRITEBYTECODE=1",
		"ENGRAM_TEST_URL=http://"+addr, "ENGRAM_TEST_API_KEY="+testKey)
	out, err := cmd.CombinedOutput()
	t.Logf("python3 -m unittest discover:\n%s", out)
	require.NoError(t, err, "the Python client's tests failed")
	require.Regexp(t, `(?m)^Ran [1-9][0-9]* tests? in `, string(out))
	require.NotContains(t, string(out), "skipped", "the Python client's tests must run, not skip")
	require.Contains(t, string(out), "test_readme_example ")
}

// pip installs the Python client offline (its build backend is in the tree,
// standard library only), and the package imports from where it went.
func TestPythonClientInstallsOffline(t *testing.T) {
	py := python3(t)
	if err := exec.Command(py, "-m", "pip", "--version").Run(); err != nil {
		t.Skip("pip is not available to python3")
	}
	t.Parallel()
	dir, err := filepath.Abs(pythonClient)
	require.NoError(t, err)
	target := filepath.Join(t.TempDir(), "site")
	cmd := exec.Command(py, "-m", "pip", "install", "--no-index", "--no-cache-dir", "--disable-pip-version-check",
		"--target", target, dir)
	// No index and no proxy that works: anything pip tried to download
	// would fail the install.
	cmd.Env = append(os.Environ(), "PIP_NO_INDEX=1", "PYTHONDONTWRITEBYTECODE=1",
		"HTTP_PROXY=http://127.0.0.1:9", "HTTPS_PROXY=http://127.0.0.1:9")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "pip install: %s", out)
	require.DirExists(t, filepath.Join(target, "engram_client"))
	require.FileExists(t, filepath.Join(target, "engram_client", "py.typed"))

	imp := exec.Command(py, "-c", "import engram_client, engram_client.types as t; "+
		"print(engram_client.__file__); print(engram_client.__version__); print(t.RetrieveResult.__name__)")
	imp.Dir = t.TempDir() // not the source tree: the import must come from target
	imp.Env = append(os.Environ(), "PYTHONPATH="+target, "PYTHONDONTWRITEBYTECODE=1")
	out, err = imp.CombinedOutput()
	require.NoError(t, err, "import: %s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 3, string(out))
	require.True(t, strings.HasPrefix(lines[0], target), "imported from %s, not the install target", lines[0])
	require.Equal(t, []string{"0.1.0", "RetrieveResult"}, lines[1:])
}

// The clients' page shows the Python client's example as the file the
// tests run, word for word.
func TestPythonClientExampleInDocs(t *testing.T) {
	example, err := os.ReadFile(filepath.Join(pythonClient, "examples", "quickstart.py"))
	require.NoError(t, err)
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "clients.md"))
	require.NoError(t, err)
	require.Contains(t, string(page), "```python\n"+string(example)+"```\n",
		"docs/clients.md's Python client section must show clients/python/examples/quickstart.py as it is")
}
