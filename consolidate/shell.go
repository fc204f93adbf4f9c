package consolidate

import (
	"path"
	"regexp"
	"slices"
	"strings"
)

// shellTools are tools whose command argument is a shell command line.
var shellTools = []string{"shell", "bash", "sh", "zsh", "exec", "run", "terminal", "run_command", "cmd", "execute_bash", "run_shell_command"}

// shellWords splits a command line into words as a shell would: quotes
// and backslashes keep spaces inside one word. Each word keeps its text as
// written (quotes included), so that the words joined by single spaces
// are the same command; a heredoc's body stays inside its last word. An
// operator (&&, ||, ;, |) is a word of its own.
func shellWords(s string) []string {
	var out []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			out = append(out, b.String())
			b.Reset()
		}
	}
	var quote rune
	escaped := false
	for i, r := range s {
		switch {
		case escaped:
			b.WriteRune(r)
			escaped = false
		case r == '\\' && quote != '\'':
			b.WriteRune(r)
			escaped = true
		case quote != 0:
			b.WriteRune(r)
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"' || r == '`':
			b.WriteRune(r)
			quote = r
		case r == '\n' && strings.Contains(s[:i], "<<"):
			// A heredoc: its body is data, not words.
			flush()
			out = append(out, s[i:])
			return out
		case r == ' ' || r == '\t' || r == '\n':
			flush()
		case r == '&' && (strings.HasSuffix(b.String(), ">") || strings.HasPrefix(s[i+1:], ">")):
			b.WriteRune(r) // a redirection (2>&1, &>), not an operator
		case r == ';' || r == '|' || r == '&':
			if b.Len() > 0 && !strings.ContainsRune(";|&", rune(b.String()[b.Len()-1])) {
				flush()
			}
			b.WriteRune(r)
		default:
			if b.Len() > 0 && strings.ContainsRune(";|&", rune(b.String()[b.Len()-1])) {
				flush()
			}
			b.WriteRune(r)
		}
	}
	flush()
	return out
}

// segments are a command line's simple commands: its words cut at the
// operators between commands.
func segments(words []string) [][]string {
	var out [][]string
	var cur []string
	for _, w := range words {
		if w == "&&" || w == "||" || w == ";" || w == "|" || w == "&" {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, w)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// reAssign is an environment assignment before a command (FOO=1 make).
var reAssign = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// wrappers run the command that follows them.
var wrappers = []string{"sudo", "time", "env", "nohup", "exec", "command", "xargs"}

// program is a simple command's program and its words after it, past
// environment assignments and wrappers (sudo, time, timeout 30).
func program(seg []string) (string, []string) {
	for len(seg) > 0 {
		w := seg[0]
		switch {
		case reAssign.MatchString(w):
			seg = seg[1:]
		case slices.Contains(wrappers, w):
			seg = seg[1:]
		case w == "timeout" && len(seg) > 1:
			seg = seg[2:]
		default:
			return path.Base(strings.Trim(w, `"'`)), seg[1:]
		}
	}
	return "", nil
}

// subcommandProgs are programs whose first word names what they do.
var subcommandProgs = []string{"git", "npm", "pnpm", "yarn", "pip", "pip3", "go", "cargo", "docker", "kubectl", "helm",
	"apt", "apt-get", "brew", "make", "poetry", "uv", "conda", "gradle", "mvn", "dotnet", "terraform", "systemctl",
	"bundle", "gem", "composer", "rustup", "npx", "bun", "deno", "gh", "az", "aws", "gcloud", "nix", "dnf", "yum", "apk", "pacman"}

// commandIdentity is what a command does, whatever its arguments: its
// program and, for a program with sub-commands, the first word that is
// not a flag ("git checkout", "pip install", "python -m pytest"). A line
// of several commands is known by its last one that is not a cd or an
// export: "cd /repo && make test" is "make test".
func commandIdentity(cmd string) string {
	id, _ := commandParts(cmd)
	return id
}

// commandKey is what a command checks: its identity and its first
// operand ("pip install requirements.txt" of "pip install -r
// requirements.txt", "make build"), so that running it again tells
// whether a problem it failed on is fixed, while "pip install --upgrade
// pip", a step of the fix, does not.
func commandKey(cmd string) string {
	id, rest := commandParts(cmd)
	for _, w := range rest {
		if !strings.HasPrefix(w, "-") {
			return id + " " + w
		}
	}
	return id
}

// commandParts are a command line's identity and the words after it.
func commandParts(cmd string) (string, []string) {
	segs := segments(shellWords(cmd))
	for i := len(segs) - 1; i >= 0; i-- {
		prog, rest := program(segs[i])
		switch prog {
		case "", "cd", "export", "source", ".", "set", "pushd", "popd":
			continue
		}
		if (strings.HasPrefix(prog, "python") || prog == "py") && len(rest) > 1 && rest[0] == "-m" {
			return prog + " -m " + rest[1], rest[2:]
		}
		if slices.Contains(subcommandProgs, prog) {
			for j, w := range rest {
				if !strings.HasPrefix(w, "-") {
					return prog + " " + w, rest[j+1:]
				}
			}
		}
		return prog, rest
	}
	return "", nil
}

// searchProgs find things: one that finds nothing exits 1 with no output,
// which is an answer, not an error.
var searchProgs = []string{"grep", "egrep", "fgrep", "rg", "ag", "ack", "git grep", "find", "fd", "which", "test", "["}

// writes reports whether a command line writes a file: a redirection of
// output or a heredoc into a file, tee, sed -i.
func writes(cmd string) bool {
	ws := shellWords(cmd)
	for i, w := range ws {
		switch {
		case strings.HasPrefix(w, "\n"):
			continue // a heredoc's body
		case w == "tee" || w == "sed" && slices.ContainsFunc(ws[i:], func(a string) bool { return strings.HasPrefix(a, "-i") }):
			return true
		}
		j := strings.IndexByte(w, '>')
		if j < 0 || strings.ContainsAny(w[:j], `'"`) || strings.HasPrefix(w[j:], ">&") {
			continue
		}
		target := strings.TrimLeft(w[j:], ">")
		if target == "" && i+1 < len(ws) {
			target = ws[i+1]
		}
		if target != "/dev/null" {
			return true
		}
	}
	return false
}
