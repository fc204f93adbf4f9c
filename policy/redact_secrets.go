package policy

import (
	"encoding/base64"
	"strings"
	"unicode/utf8"
)

// This file holds the secret detectors for fixed shapes: provider keys and
// tokens, JWTs, PEM private keys, Authorization schemes, passwords in URLs
// and labelled AWS secret keys. Password=-style pairs are in
// redact_assign.go.

// tokenRule finds a provider token by its fixed prefix: the prefix at a
// token boundary, then a body of min to max (0: any) bytes of its
// alphabet, not glued to a following word byte. It looks for anchor, which
// sits at offset at in every prefix and is chosen to start with a rare
// byte, because strings.Index is quick only when the first byte seldom
// occurs.
type tokenRule struct {
	anchor   string
	at       int
	prefixes []string
	body     func(byte) bool
	min, max int
	valid    func(body string) bool // nil: any body of the right length
}

func (t *tokenRule) find(s string, dst []span) []span {
	for off := 0; ; {
		i := strings.Index(s[off:], t.anchor)
		if i < 0 {
			return dst
		}
		i += off - t.at
		off = i + t.at + len(t.anchor)
		if i < 0 || !boundaryBefore(s, i) {
			continue
		}
		for _, p := range t.prefixes {
			if !strings.HasPrefix(s[i:], p) {
				continue
			}
			b := i + len(p)
			j := runOf(s, b, t.body)
			// Resume after the body either way: a later anchor inside it
			// would only see a suffix of the same run, and rescanning
			// would make "sk-sk-sk-…" quadratic.
			off = max(off, j)
			n := j - b
			if n < t.min || (t.max > 0 && n > t.max) || (j < len(s) && isWord(s[j])) || (t.valid != nil && !t.valid(s[b:j])) {
				break
			}
			dst = append(dst, span{i, j})
			break
		}
	}
}

func isB64URL(c byte) bool     { return isAlnum(c) || c == '-' || c == '_' }
func isUpperDigit(c byte) bool { return isUpper(c) || isDigit(c) }
func isAlnumDash(c byte) bool  { return isAlnum(c) || c == '-' }

// Provider keys and tokens, by their documented prefixes. Keys whose body
// is random base62 must mix cases and digits, which keeps kebab-case names
// that happen to start with "sk-" out.
var (
	anthropicKeyRule = tokenRule{anchor: "k-ant-", at: 1, prefixes: []string{"sk-ant-"}, body: isB64URL, min: 20, valid: mixedClasses}
	openAIKeyRule    = tokenRule{anchor: "k-", at: 1, prefixes: []string{"sk-"}, body: isB64URL, min: 20, valid: mixedClasses}
	awsAccessKeyRule = tokenRule{anchor: "IA", at: 2, prefixes: []string{"AKIA", "ASIA"}, body: isUpperDigit, min: 16, max: 16}
	gitlabTokenRule  = tokenRule{anchor: "glpat-", prefixes: []string{"glpat-"}, body: isB64URL, min: 20}
	slackTokenRule   = tokenRule{anchor: "xox", prefixes: []string{"xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-"}, body: isAlnumDash, min: 10, valid: hasDigit}
	stripeKeyRule    = tokenRule{anchor: "k_", at: 1, prefixes: []string{"sk_live_", "rk_live_", "sk_test_", "rk_test_"}, body: isAlnum, min: 16}
	googleAPIKeyRule = tokenRule{anchor: "AIza", prefixes: []string{"AIza"}, body: isB64URL, min: 35, max: 35}

	githubClassicRule = tokenRule{anchor: "gh", prefixes: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, body: isAlnum, min: 30, max: 255}
	githubFineRule    = tokenRule{anchor: "_pat_", at: 6, prefixes: []string{"github_pat_"}, body: isWord, min: 40, max: 255}
)

// mixedClasses reports whether s has an upper-case letter, a lower-case
// letter and a digit, as a random base62 string of 20 or more almost surely
// does.
func mixedClasses(s string) bool {
	up, lo, dig := classes(s)
	return up && lo && dig
}

func hasDigit(s string) bool {
	_, _, dig := classes(s)
	return dig
}

// classes reports whether s has upper-case letters, lower-case letters and
// digits.
func classes(s string) (up, lo, dig bool) {
	for i := range len(s) {
		c := s[i]
		up = up || isUpper(c)
		lo = lo || isLower(c)
		dig = dig || isDigit(c)
	}
	return up, lo, dig
}

// allOf reports whether every byte of s is in class.
func allOf(s string, class func(byte) bool) bool {
	return runOf(s, 0, class) == len(s)
}

// findJWTs finds compact JWTs: base64url header and payload that both
// encode JSON objects (so start with "eyJ"), then the signature, and any
// further segments of a JWE.
func findJWTs(s string, dst []span) []span {
	for off := 0; ; {
		i := strings.Index(s[off:], "yJ") // 'e' is too common an anchor
		if i < 0 {
			return dst
		}
		i += off - 1
		off = i + 3
		if i < 0 || s[i] != 'e' || !boundaryBefore(s, i) {
			continue
		}
		j := runOf(s, i, isB64URL)
		off = max(off, j)
		if j-i < 10 || j >= len(s) || s[j] != '.' || !strings.HasPrefix(s[j+1:], "eyJ") {
			continue
		}
		k := runOf(s, j+1, isB64URL)
		if k-(j+1) < 10 || k >= len(s) || s[k] != '.' {
			continue
		}
		e := runOf(s, k+1, isB64URL)
		for e+1 < len(s) && s[e] == '.' && isB64URL(s[e+1]) {
			e = runOf(s, e+1, isB64URL)
		}
		dst = append(dst, span{i, e})
		off = e
	}
}

// runOf returns the end of the run of bytes in class starting at s[i].
func runOf(s string, i int, class func(byte) bool) int {
	for i < len(s) && class(s[i]) {
		i++
	}
	return i
}

// findPrivateKeys finds PEM and PGP private-key blocks, BEGIN line to END
// line. A block cut short (a truncated tool output) is redacted through the
// last run of base64 after its BEGIN line.
func findPrivateKeys(s string, dst []span) []span {
	nextEnd := -2 // index of the next "-----END " at or after body; -1: none left; -2: not looked for
	for off := 0; ; {
		i := strings.Index(s[off:], "BEGIN ") // '-' is too common an anchor
		if i < 0 {
			return dst
		}
		i += off - len("-----")
		off = i + len("-----BEGIN ")
		if i < 0 || s[i:i+len("-----")] != "-----" {
			continue
		}
		h := strings.Index(s[off:min(len(s), off+70)], "-----")
		if h < 0 {
			continue
		}
		label := s[off : off+h]
		if !strings.HasSuffix(label, "PRIVATE KEY") && !strings.HasSuffix(label, "PRIVATE KEY BLOCK") {
			continue
		}
		body := off + h + len("-----")
		if nextEnd != -1 && nextEnd < body {
			nextEnd = strings.Index(s[body:], "-----END ")
			if nextEnd >= 0 {
				nextEnd += body
			}
		}
		end := -1
		if nextEnd >= 0 {
			e := nextEnd + len("-----END ")
			if t := strings.Index(s[e:min(len(s), e+70)], "-----"); t >= 0 {
				end = e + t + len("-----")
			}
		}
		if end < 0 {
			end = base64Tail(s, body)
		}
		dst = append(dst, span{i, end})
		off = end
	}
}

// base64Tail returns the end of the base64 lines that follow s[i:],
// separated by white space or the \n escapes of serialized text. It takes
// whole lines only: cutting into a token that merely starts like base64
// would leave its tail, maybe a secret's, in the clear and unrecognizable.
func base64Tail(s string, i int) int {
	end := i
	for j := i; j < len(s); {
		switch {
		case isSpace(s[j]):
			j++
		case escapedNewline(s, j):
			j += 2
		case isB64Std(s[j]):
			j = runOf(s, j, isB64Std)
			if j < len(s) && !isSpace(s[j]) && !escapedNewline(s, j) {
				return end
			}
			end = j
		default:
			return end
		}
	}
	return end
}

func escapedNewline(s string, j int) bool {
	return s[j] == '\\' && j+1 < len(s) && (s[j+1] == 'n' || s[j+1] == 'r')
}

func isB64Std(c byte) bool { return isAlnum(c) || c == '+' || c == '/' || c == '=' }

// findBearerTokens finds "Bearer <token>" (RFC 6750) and redacts the token,
// keeping the scheme. A token must look random (a digit, or both cases), so
// prose such as "bearer authentication" stays.
func findBearerTokens(s string, dst []span) []span {
	words := newFoldIndex("bearer")
	for off := 0; off < len(s); {
		i := words.next(s, off)
		if i < 0 {
			return dst
		}
		off = i + len("bearer")
		if !boundaryBefore(s, i) {
			continue
		}
		j := off
		for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
			j++
		}
		if j == off {
			continue
		}
		k := runOf(s, j, isB64Token)
		for k < len(s) && s[k] == '=' {
			k++
		}
		off = max(off, k)
		up, lo, dig := classes(s[j:k])
		if k-j < 12 || !(dig || (up && lo)) {
			continue
		}
		dst = append(dst, span{j, k})
		off = k
	}
	return dst
}

func isB64Token(c byte) bool {
	return isAlnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/'
}

// findBasicAuth finds "Basic <base64 of user:password>" (RFC 7617) and
// redacts the credentials, keeping the scheme. The token must decode to
// printable text with a colon, so "basic usage" stays.
func findBasicAuth(s string, dst []span) []span {
	words := newFoldIndex("basic")
	for off := 0; off < len(s); {
		i := words.next(s, off)
		if i < 0 {
			return dst
		}
		off = i + len("basic")
		if !boundaryBefore(s, i) || off >= len(s) || s[off] != ' ' {
			continue
		}
		j := off
		for j < len(s) && s[j] == ' ' {
			j++
		}
		k := runOf(s, j, func(c byte) bool { return isAlnum(c) || c == '+' || c == '/' })
		for k < len(s) && s[k] == '=' {
			k++
		}
		off = max(off, k)
		if k-j < 8 || (k < len(s) && isWord(s[k])) || !basicCredentials(s[j:k]) {
			continue
		}
		dst = append(dst, span{j, k})
		off = k
	}
	return dst
}

func basicCredentials(tok string) bool {
	enc := base64.StdEncoding
	if len(tok)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	b, err := enc.DecodeString(tok)
	if err != nil || !utf8.Valid(b) {
		return false
	}
	colon := false
	for _, c := range b {
		if c < 0x20 || c == 0x7f {
			return false
		}
		colon = colon || c == ':'
	}
	return colon
}

// findURLPasswords finds scheme://user:password@host and redacts the
// password, keeping scheme, user and host. The authority ends at its last
// '@', so a user part that is itself an email address (left for the email
// detector) or a password with an unescaped '@' are both handled.
func findURLPasswords(s string, dst []span) []span {
	for off := 0; ; {
		i := strings.Index(s[off:], "://")
		if i < 0 {
			return dst
		}
		i += off
		off = i + 3
		k := i
		for k > 0 && (isAlnum(s[k-1]) || s[k-1] == '+' || s[k-1] == '.' || s[k-1] == '-') {
			k--
		}
		if k == i || !isAlpha(s[k]) {
			continue
		}
		a := i + 3
		e := authorityEnd(s, a)
		at := strings.LastIndexByte(s[a:e], '@')
		if at < 0 {
			continue
		}
		c := strings.IndexByte(s[a:a+at], ':')
		if c < 0 {
			continue
		}
		ps, pe := a+c+1, a+at
		// A password may start with a percent-escape; %s and %v are format verbs.
		if pw := s[ps:pe]; pw == "" || pw == "%s" || pw == "%v" || (pw[0] != '%' && isPlaceholder(pw)) {
			continue
		}
		dst = append(dst, span{ps, pe})
		off = e
	}
}

// authorityEnd returns the end of the URL authority that starts at s[a].
func authorityEnd(s string, a int) int {
	for a < len(s) && !endsAuthority(s[a]) {
		a++
	}
	return a
}

func endsAuthority(c byte) bool {
	return c <= ' ' || c == 0x7f || strings.IndexByte("/?#\"'`<>\\", c) >= 0
}

// isPlaceholder reports whether a value is a template, a variable reference
// or a mask rather than a secret: ${X}, $X, {{x}}, <x>, %X%, ****, xxxx.
func isPlaceholder(v string) bool {
	if v == "" || strings.IndexByte("$%{<[(*#", v[0]) >= 0 {
		return true
	}
	for i := 1; i < len(v); i++ {
		if v[i] != v[0] {
			return false
		}
	}
	return len(v) > 1 // a run of one repeated byte
}

// findAWSSecretKeys finds an AWS secret access key where it is labelled as
// one (aws_secret_access_key = …, "SecretAccessKey": "…"): 40 base64 bytes
// that would be too ambiguous to catch unlabelled.
func findAWSSecretKeys(s string, dst []span) []span {
	words := newFoldIndex("secret")
	for off := 0; off < len(s); {
		i := words.next(s, off)
		if i < 0 {
			return dst
		}
		off = i + len("secret")
		ks, ke := i, runOf(s, off, isKeyChar)
		for ks > 0 && isKeyChar(s[ks-1]) {
			ks--
		}
		off = ke // other hits in this identifier name the same key
		if !awsSecretName(s[ks:ke]) {
			continue
		}
		a, ok := valueAfter(s, ke)
		if !ok {
			continue
		}
		off = max(off, a.end)
		// An unquoted value runs to a space or punctuation; what follows
		// it unspaced in another script (…, 」, é) is not part of it.
		if i := strings.IndexFunc(s[a.start:a.end], func(r rune) bool { return r >= utf8.RuneSelf }); i >= 0 {
			a.end = a.start + i
		}
		if a.end-a.start != 40 {
			continue
		}
		if !allOf(s[a.start:a.end], func(c byte) bool { return isAlnum(c) || c == '/' || c == '+' }) {
			continue
		}
		dst = append(dst, span{a.start, a.end})
	}
	return dst
}

// awsSecretName reports whether key names an AWS secret access key in any
// of the spellings of the CLI, SDKs and STS output.
func awsSecretName(key string) bool {
	var b [64]byte
	n := 0
	for i := 0; i < len(key) && n < len(b); i++ {
		if isAlnum(key[i]) {
			b[n] = lowerASCII(key[i])
			n++
		}
	}
	k := string(b[:n])
	return strings.HasSuffix(k, "secretaccesskey") || strings.HasSuffix(k, "awssecretkey")
}

func isKeyChar(c byte) bool { return isWord(c) || c == '-' || c == '.' }
