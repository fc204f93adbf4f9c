package consolidate

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// A command is known by its program and sub-command, whatever its
// arguments, wrappers and the cd before it.
func TestCommandIdentity(t *testing.T) {
	t.Parallel()
	for cmd, want := range map[string]string{
		"make build":                          "make build",
		"cd /repo && make build -j4":          "make build",
		"sudo apt-get install -y jq":          "apt-get install",
		"FOO=1 timeout 30 python -m pytest x": "python -m pytest",
		"pytest tests/test_a.py::test_x":      "pytest",
		"/usr/bin/git -C /srv checkout main":  "git /srv",
		"python3 repro.py --fast":             "python3",
		"":                                    "",
	} {
		require.Equal(t, want, commandIdentity(cmd), cmd)
	}
}

// Writing a file by redirection, heredoc, tee or sed -i is not reading.
func TestWrites(t *testing.T) {
	t.Parallel()
	for cmd, want := range map[string]bool{
		"cat <<'EOF' > src/app.py\nprint(1)\nEOF": true,
		"echo hi >> notes.txt":                    true,
		"ls > /dev/null 2>&1":                     false,
		"grep -rn 'a > b' src":                    false,
		"sed -i s/a/b/ f.txt":                     true,
		"cat f.txt | tee out.txt":                 true,
		"cat f.txt":                               false,
	} {
		require.Equal(t, want, writes(cmd), cmd)
	}
}

// A search that finds nothing is an answer, not an error; a heredoc write
// is no probe, a cat is.
func TestShellPruning(t *testing.T) {
	t.Parallel()
	bash := func(cmd, result string) Action {
		a := Action{Tool: "bash", Args: map[string]any{"command": cmd}, Result: json.RawMessage(result)}
		a.Failed = failed(a, a.Result)
		return a
	}
	require.False(t, bash("grep -rn TODO src", `{"exit_code":1,"stdout":"","stderr":""}`).Failed)
	require.True(t, bash("grep -rn TODO src", `{"exit_code":2,"stderr":"grep: src: No such file or directory"}`).Failed)
	require.True(t, bash("make build", `{"exit_code":1,"stdout":"","stderr":""}`).Failed)
	got := Reduce([]Action{
		bash("cat README.md", `{"exit_code":0,"stdout":"# x"}`),
		bash("cat <<'EOF' > a.py\nx = 1\nEOF", `{"exit_code":0}`),
		bash("ls src && git status", `{"exit_code":0,"stdout":"a.py"}`),
	}, DefaultProbes)
	require.Len(t, got, 1)
	require.Contains(t, got[0].Args["command"], "EOF")
}

// What a command checks is its identity and first operand: a step of the
// fix with the same program is not the check run again.
func TestCommandKey(t *testing.T) {
	t.Parallel()
	require.Equal(t, "pip install requirements.txt", commandKey("pip install -r requirements.txt"))
	require.NotEqual(t, commandKey("pip install -r requirements.txt"), commandKey("pip install --upgrade pip"))
	require.Equal(t, commandKey("make build"), commandKey("cd /repo && make build -j4"))
	require.Equal(t, "python -m pytest tests/", commandKey("python -m pytest -x tests/"))
}
