package eval

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Call is a tool call of the session worlds: a tool and its arguments,
// any JSON value (an object, an array of strings, one string), whose
// strings may hold variables ({package}) until bound.
type Call struct {
	Tool string `json:"tool"`
	Args any    `json:"args"`
}

// Bind replaces the variables {name} in the call's strings, at any depth,
// by the values of vars; a variable vars does not name stays as it is.
func (c Call) Bind(vars map[string]string) Call {
	return Call{Tool: c.Tool, Args: bindDeep(c.Args, vars)}
}

func bindDeep(v any, vars map[string]string) any {
	switch x := v.(type) {
	case string:
		for name, val := range vars {
			x = strings.ReplaceAll(x, "{"+name+"}", val)
		}
		return x
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = bindDeep(e, vars)
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = bindDeep(e, vars)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = bindDeep(e, vars)
		}
		return out
	}
	return v
}

// Unbound reports whether the call still holds a variable.
func (c Call) Unbound() bool { return hasVariable(c.Args) }

// Same reports whether two calls are the same call.
func (c Call) Same(d Call) bool { return c.Tool == d.Tool && sameArgs(c.Args, d.Args) }

// String is the call as one line of JSON.
func (c Call) String() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// Surface is how a family's agent sees the world: how a command, in its
// canonical shell form, renders as a tool call, and how a tool's output
// renders as the result the agent reads. The world decides what a command
// does; the surface only how it looks.
type Surface interface {
	// Name names the surface in a report.
	Name() string
	// Call renders a canonical command as a tool call.
	Call(command string) Call
	// Output renders what a command did: its exit status, standard output
	// and standard error.
	Output(command string, exit int, stdout, stderr string) any
}

// Shell is family (b)'s surface: one tool, bash, whose one argument is the
// command string; outputs are {"exit_code", "stdout", "stderr"}, except
// that ls and cat that succeed print plain text.
type Shell struct{}

// Name implements [Surface].
func (Shell) Name() string { return "shell-only (bash)" }

// Call implements [Surface].
func (Shell) Call(command string) Call {
	return Call{Tool: "bash", Args: map[string]any{"command": command}}
}

// Output implements [Surface].
func (Shell) Output(command string, exit int, stdout, stderr string) any {
	if exit == 0 && (strings.HasPrefix(command, "ls") || strings.HasPrefix(command, "cat ") && !strings.Contains(command, "<<")) {
		return stdout
	}
	return map[string]any{"exit_code": exit, "stdout": stdout, "stderr": stderr}
}

// Structured is family (c)'s surface: a tool per program, whose arguments
// are objects of several shapes ({"action", "package"}, {"subcommand",
// "crate"}, {"formula"}), an array of words (go) or one string (pkg,
// ["install tokio-28"]); files are read, listed, searched and written by
// tools of their own. Outputs are {"ok", "output"} or {"ok", "error"} or,
// for a file read, the text.
type Structured struct{}

// Name implements [Surface].
func (Structured) Name() string { return "structured tool calls" }

// Call implements [Surface].
func (Structured) Call(command string) Call {
	if path, content, ok := heredoc(command); ok {
		return Call{Tool: "write_file", Args: map[string]any{"path": path, "content": content}}
	}
	w := strings.Fields(command)
	if len(w) == 0 {
		return Call{Tool: "shell", Args: map[string]any{"cmd": command}}
	}
	rest := strings.Join(w[1:], " ")
	switch w[0] {
	case "ls":
		return Call{Tool: "list_dir", Args: map[string]any{"path": lastOr(w[1:], ".")}}
	case "cat":
		return Call{Tool: "read_file", Args: map[string]any{"path": rest}}
	case "grep":
		return Call{Tool: "search", Args: map[string]any{"pattern": strings.Trim(w[len(w)-2], `"`), "path": w[len(w)-1]}}
	case "git":
		return Call{Tool: "git", Args: map[string]any{"subcommand": w[1], "args": words(w[2:])}}
	case "apt-get", "apk", "brew", "snap", "nix-env":
		return Call{Tool: "system_package", Args: map[string]any{"manager": w[0], "install": w[len(w)-1], "flags": words(w[1 : len(w)-1])}}
	case "pip", "poetry", "conda":
		return Call{Tool: "pip", Args: map[string]any{"action": w[1], "package": lastOr(w[2:], ""), "options": words(options(w[2:]))}}
	case "python", "python3":
		if len(w) > 3 && w[1] == "-m" && w[2] == "pip" {
			return Call{Tool: "pip", Args: map[string]any{"action": w[3], "package": w[len(w)-1], "options": words(options(w[4:]))}}
		}
		return Call{Tool: "python", Args: map[string]any{"argv": words(w[1:])}}
	case "npm":
		return Call{Tool: "npm", Args: map[string]any{"command": w[1], "args": words(w[2:])}}
	case "cargo":
		return Call{Tool: "cargo", Args: map[string]any{"subcommand": w[1], "crate": lastOr(w[2:], ""), "flags": words(options(w[2:]))}}
	case "go":
		return Call{Tool: "go", Args: words(w[1:])}
	case "make":
		return Call{Tool: "make", Args: map[string]any{"target": lastOr(w[1:], "all"), "flags": words(options(w[1:]))}}
	case "docker":
		return Call{Tool: "docker", Args: map[string]any{"cmd": w[1], "args": strings.TrimSpace(rest[len(w[1]):])}}
	case "pkg":
		return Call{Tool: "pkg", Args: []any{rest}}
	case "pytest":
		return Call{Tool: "run_tests", Args: map[string]any{"runner": "pytest", "args": rest}}
	}
	return Call{Tool: "shell", Args: map[string]any{"cmd": command}}
}

// Output implements [Surface].
func (Structured) Output(command string, exit int, stdout, stderr string) any {
	if exit != 0 {
		return map[string]any{"ok": false, "exit": exit, "error": strings.TrimSpace(stderr + "\n" + stdout)}
	}
	if strings.HasPrefix(command, "cat ") && !strings.Contains(command, "<<") {
		return stdout
	}
	return map[string]any{"ok": true, "output": stdout}
}

// heredoc splits a command that writes a file by heredoc
// (cat <<'EOF' > path …EOF) into the path and the content.
func heredoc(command string) (path, content string, ok bool) {
	first, body, found := strings.Cut(command, "\n")
	if !found || !strings.HasPrefix(first, "cat <<") {
		return "", "", false
	}
	_, path, _ = strings.Cut(first, "> ")
	body = strings.TrimSuffix(body, "EOF")
	return strings.TrimSpace(path), body, true
}

func lastOr(w []string, def string) string {
	if len(w) == 0 {
		return def
	}
	return w[len(w)-1]
}

// options are the words of w that start with a dash.
func options(w []string) []string {
	var out []string
	for _, s := range w {
		if strings.HasPrefix(s, "-") {
			out = append(out, s)
		}
	}
	return out
}

// words is w as JSON array values (never null).
func words(w []string) []any {
	out := make([]any, 0, len(w))
	for _, s := range w {
		out = append(out, s)
	}
	return out
}

// failure is what a command that did not help prints: the way its
// program refuses, naming the command's last word.
func failure(command string) (exit int, stderr string) {
	w := strings.Fields(command)
	if len(w) == 0 {
		return 1, "error"
	}
	last := w[len(w)-1]
	switch w[0] {
	case "apt-get":
		return 100, fmt.Sprintf("E: Unable to locate package %s", last)
	case "brew":
		return 1, fmt.Sprintf("Error: No available formula with the name \"%s\".", last)
	case "apk":
		return 1, fmt.Sprintf("ERROR: unable to select packages:\n  %s (no such package):\n    required by: world[%s]", last, last)
	case "snap", "nix-env", "conda", "poetry":
		return 127, fmt.Sprintf("bash: %s: command not found", w[0])
	case "pip", "python3":
		return 1, "ERROR: Could not install packages due to an OSError: [Errno 13] Permission denied: '/usr/lib/python3/dist-packages'"
	case "npm":
		return 1, "npm ERR! code EACCES\nnpm ERR! syscall open\nnpm ERR! errno -13"
	case "cargo":
		return 101, "error: the lock file /srv/app/Cargo.lock needs to be updated but --locked was passed to prevent this"
	case "go":
		return 1, "go: cannot use path@version syntax in GOPATH mode"
	case "make", "./configure", "autoreconf", "cmake":
		return 2, fmt.Sprintf("%s: *** No rule to make target '%s'.  Stop.", w[0], last)
	case "docker":
		return 1, "Error response from daemon: unauthorized: authentication required"
	case "pkg":
		return 3, fmt.Sprintf("pkg: %s: nothing to do for %s", w[1], last)
	case "sudo":
		return 1, "sudo: a terminal is required to read the password; either use the -S option to read from standard input or configure an askpass helper"
	}
	return 1, fmt.Sprintf("%s: %s: No such file or directory", w[0], last)
}

// transients are the errors of a flaky step: they go away when the step is
// tried again.
var transients = []string{
	"curl: (6) Could not resolve host: mirror.internal",
	"error: connection reset by peer (os error 104)",
	"Temporary failure in name resolution",
	"fatal: unable to access 'https://git.internal/': Operation timed out after 30001 milliseconds",
}
