// Package signature names the problem an error message reports: its
// signature is the message with the values that vary between occurrences
// replaced by placeholders (substrate RFC §8: procedures are found by
// their trigger), and its values are what those placeholders stood for,
// so that a procedure learned from one occurrence can be applied to the
// next (§15A.9: variables bound from the task). Consolidation groups
// episodes by signature and records where a recipe's variables are in the
// trigger; retrieval matches a task's signal to a trigger by signature and
// binds the variables from the task's own message.
package signature

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Placeholders a signature puts where a message had a value that varies
// from one occurrence of the same problem to the next.
const (
	Path   = "<path>"
	Quoted = "<q>"
	phNum  = "<n>"
	phHex  = "<hex>"
	phURL  = "<url>"
)

var (
	reURL  = regexp.MustCompile(`\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'"<>]+`)
	reUUID = regexp.MustCompile(`\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`)
	// Quoted names: '…', "…", `…`, ‘…’, “…” on one line.
	reQuoted = regexp.MustCompile("'[^'\\n]*'|\"[^\"\\n]*\"|`[^`\\n]*`|‘[^’\\n]*’|“[^”\\n]*”")
	// A path has at least one separator (absolute, relative, Windows),
	// optionally followed by :line[:col].
	// Names of any script count (\p{L}, \p{N}, marks): a path is
	// /srv/bü🚀ld-ñ/obj.o as much as /srv/build/obj.o.
	rePath = regexp.MustCompile(`(?:[A-Za-z]:)?(?:~|\.{1,2})?(?:[\p{L}\p{N}\p{M}\p{So}_.@+-]*[/\\])+[\p{L}\p{N}\p{M}\p{So}_.@+-]*(?::\d+)*`)
	// A file name with an extension and a line (main.go:12:5).
	reFileLine = regexp.MustCompile(`\b[\w.-]+\.[A-Za-z]\w*:\d+(?::\d+)*`)
	reHex      = regexp.MustCompile(`\b0[xX][0-9a-fA-F]+\b|\b[0-9a-fA-F]*[0-9][0-9a-fA-F]*[a-fA-F][0-9a-fA-F]*\b|\b[0-9a-fA-F]*[a-fA-F][0-9a-fA-F]*[0-9][0-9a-fA-F]*\b`)
	reNum      = regexp.MustCompile(`\b\d+(?:[.,:]\d+)*\b`)
	// A version with its v (v0.1.0).
	reVer  = regexp.MustCompile(`\bv\d+(?:\.\d+)+\b`)
	reLine = regexp.MustCompile(`(?i)\b(line|column|col|ln|offset|position|pos)\s+<n>`)
	reRun  = regexp.MustCompile(`(<\w+>)(?:[\s,:;-]*<\w+>)*`)
	reWS   = regexp.MustCompile(`\s+`)
	// A Python stack frame: the message is a traceback.
	rePyFrame = regexp.MustCompile(`(?m)^\s*File ".*", line \d+`)
	// Prefixes that repeat on every line of a tool's output.
	reNoise = regexp.MustCompile(`(?i)^(npm err!|npm error|error:?\s*$|warning:)\s*`)
)

// Of is the signature of an error message: the line that names the
// problem, with the values that vary between occurrences — file paths,
// line and column numbers, numbers, hex ids, quoted names, URLs — replaced
// by placeholders, lower-cased and with spaces folded, so that the same
// problem met twice has one signature (substrate RFC §8: procedures are
// found by their trigger). An empty message has an empty signature.
func Of(message string) string {
	line := problemLine(message)
	if line == "" {
		return ""
	}
	return Normalise(line)
}

// Normalise replaces the varying values of one line by placeholders, lower
// cases it and folds its spaces.
func Normalise(s string) string {
	s = reURL.ReplaceAllString(s, phURL)
	s = reUUID.ReplaceAllString(s, phHex)
	s = reQuoted.ReplaceAllString(s, Quoted)
	s = rePath.ReplaceAllStringFunc(s, func(m string) string {
		if !isPath(m) {
			return m
		}
		return Path
	})
	s = reFileLine.ReplaceAllString(s, Path)
	s = reHex.ReplaceAllStringFunc(s, func(m string) string {
		// Words such as "cafe" or "add" have no digit; a hex id is long or
		// marked 0x.
		if strings.HasPrefix(strings.ToLower(m), "0x") || len(m) >= 7 {
			return phHex
		}
		return m
	})
	s = reVer.ReplaceAllString(s, phNum)
	s = reNum.ReplaceAllString(s, phNum)
	s = reLine.ReplaceAllString(s, phNum)
	s = strings.ToLower(reWS.ReplaceAllString(s, " "))
	// Runs of placeholders ("<path>:<n>:<n>") are one value.
	s = reRun.ReplaceAllStringFunc(s, func(m string) string {
		if strings.Contains(m, Path) && !strings.Contains(m, Quoted) {
			return Path
		}
		first := reRun.FindStringSubmatch(m)[1]
		if strings.Count(m, "<") == strings.Count(m, first) {
			return first
		}
		return m
	})
	return strings.TrimRight(strings.TrimSpace(s), ".:;, ")
}

// isPath reports whether a match of rePath is a path: it has a separator,
// and more than separators ("a / b" stays words).
func isPath(m string) bool {
	return strings.ContainsAny(m, `/\`) && strings.Trim(m, `/\`) != ""
}

// problemLine picks the line of a message that names the problem: the last
// line of a Python traceback, else the first line that says more than a
// prefix, without repeated tool prefixes (npm ERR!).
func problemLine(message string) string {
	lines := strings.Split(strings.ReplaceAll(message, "\r\n", "\n"), "\n")
	if strings.Contains(message, "Traceback (most recent call last)") || rePyFrame.MatchString(message) {
		for i := len(lines) - 1; i >= 0; i-- {
			if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(lines[i], " ") {
				return l
			}
		}
	}
	first := ""
	for _, l := range lines {
		l = strings.TrimSpace(l)
		for {
			n := reNoise.ReplaceAllString(l, "")
			if n == l {
				break
			}
			l = n
		}
		if l == "" || strings.HasPrefix(l, "-->") {
			continue
		}
		if len(l) > 400 {
			l = l[:400]
			for len(l) > 0 && !utf8.ValidString(l) {
				l = l[:len(l)-1]
			}
		}
		if first == "" {
			first = l
		}
		if len(lines) == 1 || reErrorLine.MatchString(l) {
			return l
		}
	}
	return first
}

// reErrorLine is a line of a tool's output that names an error: in a
// compiler's or a build's output, the problem is rarely the first line
// ("Compiling app v0.1.0 …", "cc -O2 -c …").
var reErrorLine = regexp.MustCompile(`(?i)\b(error|fatal|failed|failure|exception|denied|not found|cannot|can't|could not|couldn't|no such|panic|refused|missing|unresolved|undefined|invalid|timed out|timeout)\b|ERR!|\w+(Error|Exception)\b`)

// rePlaceholder is a placeholder a signature holds.
var rePlaceholder = regexp.MustCompile(`<(?:path|q|n|hex|url)>`)

// Bare is a signature without its placeholders: the words that name the
// problem, whatever the values.
func Bare(sig string) string {
	return strings.TrimSpace(reWS.ReplaceAllString(rePlaceholder.ReplaceAllString(sig, " "), " "))
}
