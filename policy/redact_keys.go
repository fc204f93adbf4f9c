package policy

import "strings"

// This file holds what a JSON object's keys say: a key that names a secret
// (DB_PASSWORD, "api_key", AWS_SECRET_ACCESS_KEY) makes the value it holds
// one, whatever the value looks like. Text detectors cannot see that: a
// password alone is just a word.

// keyAnchors are substrings every key that names a secret contains, tested
// first so that ordinary keys cost a few scans of a short string.
var keyAnchors = []string{"pass", "pwd", "secret", "token", "key", "cred", "auth", "cookie"}

// secretNouns name a secret when they are a key's last word: client_secret,
// x-auth-token, Authorization, credentials, Set-Cookie. Plurals that count
// things (max_tokens) are not among them.
var secretNouns = map[string]bool{
	"password": true, "passwd": true, "passphrase": true, "secret": true, "secrets": true,
	"token": true, "credential": true, "credentials": true, "creds": true,
	"auth": true, "authorization": true, "cookie": true, "cookies": true,
	"apikey": true, "accesskey": true, "secretkey": true, "privatekey": true, "accountkey": true,
}

// secretKeyKinds are the words before a last word "key" that make it a
// secret: api_key, AWS_SECRET_ACCESS_KEY, private_key, AccountKey, APP_KEY.
// Other keys (sort_key, public_key, idempotency_key) are not.
var secretKeyKinds = map[string]bool{
	"api": true, "access": true, "secret": true, "private": true, "account": true,
	"signing": true, "encryption": true, "master": true, "session": true, "auth": true, "app": true,
}

// pagingWords before a last word "token" make it a page cursor, not a
// credential: NextToken, page_token, continuationToken.
var pagingWords = map[string]bool{"next": true, "page": true, "continuation": true, "pagination": true, "cursor": true}

// secretKey reports whether an object key names a secret, so that the
// value it holds is one. A key is split into words at separators and case
// changes (AWS_SECRET_ACCESS_KEY, clientSecret, x-api-key), and its last
// word decides, as the head of an English compound does: token_count,
// secret_name, password_file and token_type name something else. Words
// that only sometimes name a secret stay out: PWD (a directory) unless
// qualified (DB_PWD), pass unless qualified (SMTP_PASS), session ids.
func secretKey(key string) bool {
	if len(key) > 200 || !anyFold(key, keyAnchors) {
		return false
	}
	if strings.Contains(key, "REDACTED:") {
		// A redacted key's marker names what was there, not a secret
		// it holds: [REDACTED:github_token].
		key = replaceSpans(key, findMarkers(key), " ")
	}
	last, prev := lastWords(key)
	switch last {
	case "key":
		return secretKeyKinds[prev]
	case "token":
		return !pagingWords[prev]
	case "pwd", "pass":
		return prev != ""
	}
	return secretNouns[last]
}

func anyFold(s string, words []string) bool {
	for _, w := range words {
		if containsFold(s, w) {
			return true
		}
	}
	return false
}

// lastWords returns the last two words of a key, in lower case ("" when
// there are fewer). Words are split at non-alphanumeric bytes, before an
// upper-case letter that follows a lower-case one or a digit (apiKey), and
// before the last of a run of capitals followed by a lower-case letter
// (APIKey).
func lastWords(key string) (last, prev string) {
	start := -1
	for i := 0; i <= len(key); i++ {
		if start >= 0 && (i == len(key) || !isAlnum(key[i]) || wordStart(key, i)) {
			prev, last = last, key[start:i]
			start = -1
		}
		if i < len(key) && isAlnum(key[i]) && start < 0 {
			start = i
		}
	}
	return strings.ToLower(last), strings.ToLower(prev)
}

// wordStart reports whether a word starts at key[i] inside a run of
// alphanumeric bytes: at a change of case.
func wordStart(key string, i int) bool {
	if i <= 0 || !isAlnum(key[i-1]) {
		return false
	}
	c, p := key[i], key[i-1]
	switch {
	case isUpper(c) && (isLower(p) || isDigit(p)):
		return true
	case isUpper(c) && isUpper(p) && i+1 < len(key) && isLower(key[i+1]):
		return true
	}
	return false
}

// heldPlaceholder reports whether a value held by a secret's key is not
// one: empty, a template or variable reference (${DB_PASSWORD}, {{token}},
// <password>, %TOKEN%, $TOKEN), a mask (****), or a word such as null or
// redacted.
func heldPlaceholder(v string) bool {
	v = strings.TrimSpace(v)
	switch {
	case v == "", isNotSecretWord(v):
		return true
	case strings.HasPrefix(v, "${") && strings.HasSuffix(v, "}"),
		strings.HasPrefix(v, "{{") && strings.HasSuffix(v, "}}"),
		strings.HasPrefix(v, "<") && strings.HasSuffix(v, ">"),
		len(v) > 2 && v[0] == '%' && v[len(v)-1] == '%':
		return true
	case len(v) > 1 && v[0] == '$' && allOf(v[1:], func(c byte) bool { return isUpper(c) || isDigit(c) || c == '_' }):
		return true
	}
	return allOf(v, func(c byte) bool { return c == v[0] }) && len(v) > 1
}

// authSchemes are the words an Authorization value keeps before its
// redacted credentials.
var authSchemes = []string{"bearer", "basic", "token", "digest"}

// onlyMarkers reports whether s, already redacted, holds nothing but
// markers, punctuation, spaces and an authorization scheme: whether what a
// secret's key held was redacted whole.
func onlyMarkers(s string) bool {
	marks := findMarkers(s)
	if len(marks) == 0 {
		return false
	}
	var rest strings.Builder
	prev := 0
	for _, m := range marks {
		rest.WriteString(s[prev:m.start])
		rest.WriteByte(' ')
		prev = m.end
	}
	rest.WriteString(s[prev:])
	for w := range strings.FieldsFuncSeq(rest.String(), func(r rune) bool { return r > 0x7f || !isAlnum(byte(r)) }) {
		scheme := false
		for _, a := range authSchemes {
			scheme = scheme || strings.EqualFold(w, a)
		}
		if !scheme {
			return false
		}
	}
	return true
}
