package policy

import "strings"

// This file holds the password=-style pair detector: a value assigned to a
// key that names a secret, in the many notations agents meet.

// assignKeywords end the key names of password=-style pairs, compared
// without case: DB_PASSWORD, clientSecret, x-api-key, access_token, PWD,
// and the AccountKey of Azure connection strings.
var assignKeywords = []string{
	"password", "passwd", "passphrase", "pwd", "secret", "secret_key", "secretkey",
	"api_key", "apikey", "api-key", "token", "accountkey",
}

func assignKeyword(key string) bool {
	for _, kw := range assignKeywords {
		if hasSuffixFold(key, kw) {
			return true
		}
	}
	return false
}

// notSecretWords are values that sit where a secret would but are not one:
// literals, type names of the code an agent reads, redaction words.
var notSecretWords = []string{
	"null", "nil", "none", "true", "false", "undefined", "empty", "redacted", "hidden", "masked",
	"str", "string", "bytes", "int", "integer", "bool", "boolean", "number", "any", "object",
	"secretstr", "secretbytes", "optional", "required",
}

// assignment is a key's separator and value.
type assignment struct {
	sepAt      int  // index of the separator
	sep        byte // '=' or ':' (also for Go's ":=")
	spaced     bool // white space around the separator, or ":=": code rather than config
	keyQuoted  bool
	quote      byte // the value's quote, 0 when unquoted
	unclosed   bool // a quoted value whose line ends before its closing quote
	start, end int  // the value, quotes excluded
}

// valueAfter parses the separator and value that follow a key ending at
// s[ke]: an optional closing quote (or \" in serialized JSON), '=' or ':',
// then a quoted value up to its closing quote on the same line, or an
// unquoted one up to white space or punctuation.
func valueAfter(s string, ke int) (assignment, bool) {
	var a assignment
	j := ke
	switch {
	case strings.HasPrefix(s[j:], `\"`):
		j += 2
		a.keyQuoted = true
	case j < len(s) && (s[j] == '"' || s[j] == '\''):
		j++
		a.keyQuoted = true
	}
	sp := j
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	a.spaced = j > sp
	if j >= len(s) {
		return a, false
	}
	a.sepAt, a.sep = j, s[j]
	next := byte(0)
	if j+1 < len(s) {
		next = s[j+1]
	}
	switch a.sep {
	case '=':
		if next == '=' || next == '>' || next == '~' {
			return a, false // comparison, arrow, regexp match
		}
		j++
	case ':':
		switch {
		case next == ':' || strings.HasPrefix(s[j+1:], "//"):
			return a, false // path separator, URL scheme
		case next == '=':
			a.spaced = true // Go's :=
			j += 2
		default:
			j++
		}
	default:
		return a, false
	}
	vs := j
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	if a.sep == '=' && j > vs {
		a.spaced = true
	}
	switch {
	case strings.HasPrefix(s[j:], `\"`):
		a.quote = '"'
		a.start = j + 2
		a.end = a.start
		for a.end < len(s) && s[a.end] != '\n' && !strings.HasPrefix(s[a.end:], `\"`) && !strings.HasPrefix(s[a.end:], `\n`) {
			a.end++
		}
		a.unclosed = a.end < len(s) && !strings.HasPrefix(s[a.end:], `\"`)
	case j < len(s) && (s[j] == '"' || s[j] == '\'' || s[j] == '`'):
		a.quote = s[j]
		a.start = j + 1
		a.end = a.start
		for a.end < len(s) && s[a.end] != a.quote && s[a.end] != '\n' {
			if s[a.end] == '\\' && a.end+1 < len(s) {
				a.end++
			}
			a.end++
		}
		a.end = min(a.end, len(s))
		a.unclosed = a.end < len(s) && s[a.end] != a.quote
	default:
		a.start = j
		a.end = j
		for a.end < len(s) && !valueEnd(s[a.end]) {
			a.end++
		}
	}
	return a, true
}

func valueEnd(c byte) bool {
	return c <= ' ' || c == 0x7f || strings.IndexByte("\"'`,;&()[]{}<>\\", c) >= 0
}

// findAssignments finds password=-style pairs — key=value, key: value,
// "key": "value", key := "value", --key value, curl's -u user:password —
// whose key ends in one of [assignKeywords], in env files, query strings,
// JSON, YAML, headers and command lines, and redacts the value, keeping
// the key. Confidence depends on the shape: a quoted value, an unspaced
// key=value or a YAML key: value line is taken as is; anything looser
// (prose, code, type annotations) only when the value looks like a secret.
func findAssignments(s string, dst []span) []span {
	sep := twoBytes{a: '=', b: ':'}
	for off := 0; off < len(s); {
		p := sep.next(s, off)
		if p < 0 {
			break
		}
		off = p + 1
		ke := p
		for ke > 0 && (s[ke-1] == ' ' || s[ke-1] == '\t') {
			ke--
		}
		if ke > 0 && (s[ke-1] == '"' || s[ke-1] == '\'') {
			ke--
			if ke > 0 && s[ke-1] == '\\' {
				ke--
			}
		}
		// Every keyword ends in one of these: a cheap first test.
		if ke == 0 || strings.IndexByte("dDtTnNyYeE", s[ke-1]) < 0 {
			continue
		}
		ks := ke
		for ks > 0 && isKeyChar(s[ks-1]) {
			ks--
		}
		if ks > 0 && s[ks-1] == '/' { // a path: /etc/passwd: …
			continue
		}
		key := s[ks:ke]
		if !assignKeyword(key) {
			continue
		}
		a, ok := valueAfter(s, ke)
		if !ok || a.sepAt != p {
			continue
		}
		// Resume after the value whether or not it is taken: separators
		// inside it belong to it, and rescanning an unclosed quote for each
		// would be quadratic.
		off = max(off, a.end)
		if acceptAssignment(s, a, key, ks) {
			dst = append(dst, span{a.start, a.end})
		}
	}
	return findUserFlags(s, findFlagValues(s, dst))
}

// findUserFlags finds the password of curl's -u/--user user:password.
func findUserFlags(s string, dst []span) []span {
	// Anchored on '-', not on the preceding space: a space is the most
	// common byte there is, and strings.Index is slow on common first bytes.
	for _, flag := range []string{"-u ", "--user ", "--user="} {
		for off := 0; ; {
			i := strings.Index(s[off:], flag)
			if i < 0 {
				break
			}
			i += off
			b := i + len(flag)
			e := runOf(s, b, func(c byte) bool { return c > ' ' && c != '"' && c != '\'' })
			off = max(b, e)
			c := strings.IndexByte(s[b:e], ':')
			if c < 0 || (i > 0 && !isSpace(s[i-1])) {
				continue
			}
			// Not docker's -u uid:gid, nor a variable.
			if pw := s[b+c+1 : e]; len(pw) >= 3 && !isNumber(pw) && !isPlaceholder(pw) {
				dst = append(dst, span{b + c + 1, e})
			}
		}
	}
	return dst
}

// findFlagValues finds command-line flags given as "--password value".
func findFlagValues(s string, dst []span) []span {
	for off := 0; ; {
		i := strings.Index(s[off:], "--")
		if i < 0 {
			return dst
		}
		i += off
		off = i + 2
		if i > 0 && !isSpace(s[i-1]) && s[i-1] != '"' && s[i-1] != '\'' {
			continue
		}
		ke := runOf(s, off, isAlnumDash)
		if ke == off || ke+1 >= len(s) || s[ke] != ' ' || !assignKeyword(s[off:ke]) {
			continue
		}
		a := assignment{sep: ' ', spaced: true, start: ke + 1}
		switch q := s[a.start]; {
		case q == '-':
			continue
		case q == '"' || q == '\'':
			a.quote = q
			a.start++
			a.end = a.start
			for a.end < len(s) && s[a.end] != q && s[a.end] != '\n' {
				a.end++
			}
			a.unclosed = a.end < len(s) && s[a.end] != q
		default:
			a.end = runOf(s, a.start, func(c byte) bool { return c > ' ' && c != '"' && c != '\'' })
		}
		key := s[off:ke]
		off = max(off, a.end)
		if acceptAssignment(s, a, key, i) {
			dst = append(dst, span{a.start, a.end})
		}
	}
}

// acceptAssignment decides whether the value of a key that names a secret
// is one.
func acceptAssignment(s string, a assignment, key string, keyStart int) bool {
	v := s[a.start:a.end]
	if isPlaceholder(v) || strings.EqualFold(v, key) || isNotSecretWord(v) || isPath(v) || containsFold(v, "redacted") {
		return false
	}
	if a.sep == ':' && keyStart > 0 && s[keyStart-1] == ':' {
		return false // a colon-separated record: group:password:GID:users
	}
	if a.quote != 0 {
		// A quote that the line closes, and not the one that closes a
		// string literal holding the key: "PWD="+dir, println("token:", err).
		// A quote the text ends in opens a value cut short, if it looks
		// like one.
		switch {
		case a.unclosed, !a.keyQuoted && keyStart > 0 && s[keyStart-1] == a.quote:
			return false
		case a.end == len(s):
			return allOf(v, func(c byte) bool { return c > ' ' && strings.IndexByte(",;()", c) < 0 })
		}
		return true
	}
	if a.end < len(s) && strings.IndexByte("([<{", s[a.end]) >= 0 {
		return false // a call, an index, a generic type, a composite literal: code
	}
	if isIdentPath(v) {
		return false // config.password, process.env.TOKEN
	}
	if a.sep == '=' && !a.spaced && !a.keyQuoted {
		return len(v) >= 3 // KEY=value, ?token=…, --password=…
	}
	if a.sep == ':' && !a.keyQuoted && lineStart(s, keyStart) && restOfLineBlank(s, a.end) {
		return len(v) >= 3 // YAML: "password: value" alone on its line
	}
	if a.end < len(s) && strings.IndexByte(",);", s[a.end]) >= 0 && !isDigit(v[0]) && allOf(v, isWord) {
		return false // an identifier in code: Password: password16,
	}
	return secretLike(v)
}

func isNotSecretWord(v string) bool {
	for _, w := range notSecretWords {
		if strings.EqualFold(v, w) {
			return true
		}
	}
	return false
}

// isNumber reports whether v is a decimal or hexadecimal integer literal,
// as in a constant's definition (FOO_TOKEN = -0x3f879678).
func isNumber(v string) bool {
	v = strings.TrimPrefix(v, "-")
	if len(v) > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X') {
		return allOf(v[2:], isHex)
	}
	return v != "" && allOf(v, isDigit)
}

func isPath(v string) bool {
	return strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~/") || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../")
}

// isIdentPath reports whether v is a dotted path of identifiers (a.b, x.y.z).
func isIdentPath(v string) bool {
	parts := 0
	for part := range strings.SplitSeq(v, ".") {
		if part == "" || isDigit(part[0]) || !allOf(part, isWord) {
			return false
		}
		parts++
	}
	return parts >= 2
}

// secretLike reports whether an unquoted value in a loose context looks
// like a secret rather than a word or a number: six or more bytes with a
// letter and a digit or a symbol.
func secretLike(v string) bool {
	if len(v) < 6 || isNumber(v) {
		return false
	}
	var letter, other bool
	for i := range len(v) {
		c := v[i]
		switch {
		case isAlpha(c):
			letter = true
		case c != '-' && c != '_' && c != '.': // a digit or a symbol
			other = true
		}
	}
	return letter && other
}

// lineStart reports whether the key starting at s[ks] is the first thing on
// its line, after indentation, a YAML list dash or an opening quote.
func lineStart(s string, ks int) bool {
	k := ks
	if k > 0 && (s[k-1] == '"' || s[k-1] == '\'') {
		k--
	}
	for k > 0 && (s[k-1] == ' ' || s[k-1] == '\t' || s[k-1] == '-') {
		k--
	}
	return k == 0 || s[k-1] == '\n' || s[k-1] == '\r' || (k >= 2 && s[k-2] == '\\' && s[k-1] == 'n')
}

// restOfLineBlank reports whether only blanks or a comment follow s[i] on
// its line.
func restOfLineBlank(s string, i int) bool {
	for ; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\r':
		case '\n', '#':
			return true
		case '\\':
			return i+1 < len(s) && s[i+1] == 'n'
		default:
			return false
		}
	}
	return true
}
