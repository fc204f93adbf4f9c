package policy

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/engram-dev/engram/memory"
)

// Finding is one redacted value: its label and the sensitivity it implies.
// It never carries the value.
type Finding struct {
	Label       string
	Sensitivity memory.Sensitivity
}

// MinLiteralLen is the shortest operator literal [NewRedactor] accepts, in
// characters, not counting surrounding spaces: shorter values would redact
// ordinary words.
const MinLiteralLen = 4

// maxPasses bounds the passes [Redactor.String] makes over a string. A pass
// that redacts something is followed by another, so that what one detector
// uncovered by redacting (a digit run no longer glued to a token, say) is
// seen by the detectors before it; the last pass finds nothing, which is
// what makes redaction idempotent. Two passes suffice in practice.
const maxPasses = 4

// Redactor replaces secrets and personal data with [REDACTED:<label>]
// markers (SR-1). Safe for concurrent use; build once with [NewRedactor].
type Redactor struct {
	literals  []string   // the operator's literal secrets, longest first
	detectors []detector // in priority order
	markers   []string   // "[REDACTED:<label>]" for each detector
	byLabel   []int      // detector indexes ordered by label: the findings order
	// Detectors whose markers replace what a secret's key holds: an AWS
	// secret access key's, and any other's (password_assignment).
	heldAWS, held int
}

// detector is one kind of secret or personal datum.
type detector struct {
	label string
	sens  memory.Sensitivity
	kind  detectorKind
}

// detectorKind selects a detector's find function in [Redactor.find]. A find
// function appends to dst the byte spans of s to replace with the
// detector's marker; spans may overlap or come unordered, and the caller
// drops those that touch an existing marker. It must be cheap when s holds
// nothing of its kind, since it runs on every ingested event: each looks
// for a literal anchor (a prefix, '@', "://", a run of digits) before doing
// anything costly.
type detectorKind uint8

const (
	detLiteralSecret detectorKind = iota
	detPrivateKey
	detJWT
	detAnthropicKey
	detOpenAIKey
	detAWSAccessKey
	detAWSSecretKey
	detGitHubToken
	detGitLabToken
	detSlackToken
	detStripeKey
	detGoogleAPIKey
	detBearerToken
	detBasicAuth
	detURLPassword
	detPasswordAssignment
	detEmail
	detCardNumber
	detIBAN
	detPhone
)

// find dispatches statically, so that the span buffer and the number scan
// stay on the caller's stack.
func (r *Redactor) find(k detectorKind, s string, nums *numberIndex, dst []span) []span {
	switch k {
	case detLiteralSecret:
		return findLiterals(s, r.literals, dst)
	case detPrivateKey:
		return findPrivateKeys(s, dst)
	case detJWT:
		return findJWTs(s, dst)
	case detAnthropicKey:
		return anthropicKeyRule.find(s, dst)
	case detOpenAIKey:
		return openAIKeyRule.find(s, dst)
	case detAWSAccessKey:
		return awsAccessKeyRule.find(s, dst)
	case detAWSSecretKey:
		return findAWSSecretKeys(s, dst)
	case detGitHubToken:
		return githubFineRule.find(s, githubClassicRule.find(s, dst))
	case detGitLabToken:
		return gitlabTokenRule.find(s, dst)
	case detSlackToken:
		return slackTokenRule.find(s, dst)
	case detStripeKey:
		return stripeKeyRule.find(s, dst)
	case detGoogleAPIKey:
		return googleAPIKeyRule.find(s, dst)
	case detBearerToken:
		return findBearerTokens(s, dst)
	case detBasicAuth:
		return findBasicAuth(s, dst)
	case detURLPassword:
		return findURLPasswords(s, dst)
	case detPasswordAssignment:
		return findAssignments(s, dst)
	case detEmail:
		return findEmails(s, dst)
	case detCardNumber:
		return findCards(s, nums.of(s), dst)
	case detIBAN:
		return findIBANs(s, nums.of(s), dst)
	case detPhone:
		return findPhones(s, nums.of(s), dst)
	}
	panic("policy: unknown detector kind")
}

// span is the byte range [start, end) of a value to redact.
type span struct{ start, end int }

// NewRedactor compiles the built-in detectors plus the operator's literal
// secret values, each at least [MinLiteralLen] characters once surrounding
// white space (a slip of the config file) is trimmed. The error names the
// index of a bad literal, never its value.
func NewRedactor(literals []string) (*Redactor, error) {
	lits := make([]string, 0, len(literals))
	for i, l := range literals {
		l = strings.TrimSpace(l)
		if utf8.RuneCountInString(l) < MinLiteralLen {
			return nil, fmt.Errorf("literal secret %d: want at least %d characters besides surrounding spaces", i, MinLiteralLen)
		}
		lits = append(lits, l)
	}
	// Longest first, so a literal that contains another is redacted whole.
	slices.SortFunc(lits, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b))
	})
	lits = slices.Compact(lits)

	var ds []detector
	if len(lits) > 0 {
		ds = append(ds, detector{"literal_secret", memory.High, detLiteralSecret})
	}
	ds = append(ds, builtins...)
	if len(ds) > 64 {
		panic("policy: more than 64 detectors") // findings are a bit set
	}
	r := &Redactor{literals: lits, detectors: ds, markers: make([]string, len(ds)), byLabel: make([]int, len(ds))}
	for i, d := range ds {
		r.markers[i] = "[REDACTED:" + d.label + "]"
		r.byLabel[i] = i
		switch d.kind {
		case detAWSSecretKey:
			r.heldAWS = i
		case detPasswordAssignment:
			r.held = i
		}
	}
	slices.SortFunc(r.byLabel, func(a, b int) int { return strings.Compare(ds[a].label, ds[b].label) })
	return r, nil
}

// builtins are the built-in detectors, in priority order: where two would
// claim overlapping text, the earlier one redacts it and the later one sees
// only its marker. Specific shapes come before generic ones (a JWT before
// the bearer token that carries it, an API key before the password= pair
// that assigns it, a URL's password before the email-looking user@host
// that follows it), secrets before personal data.
var builtins = []detector{
	{"private_key", memory.Hyper, detPrivateKey},
	{"jwt", memory.High, detJWT},
	{"anthropic_key", memory.High, detAnthropicKey},
	{"openai_key", memory.High, detOpenAIKey},
	{"aws_access_key", memory.High, detAWSAccessKey},
	{"aws_secret_key", memory.High, detAWSSecretKey},
	{"github_token", memory.High, detGitHubToken},
	{"gitlab_token", memory.High, detGitLabToken},
	{"slack_token", memory.High, detSlackToken},
	{"stripe_key", memory.High, detStripeKey},
	{"google_api_key", memory.High, detGoogleAPIKey},
	{"bearer_token", memory.High, detBearerToken},
	{"basic_auth", memory.High, detBasicAuth},
	{"url_password", memory.High, detURLPassword},
	{"password_assignment", memory.High, detPasswordAssignment},
	{"email", memory.Medium, detEmail},
	{"card_number", memory.High, detCardNumber},
	{"iban", memory.High, detIBAN},
	{"phone", memory.Medium, detPhone},
}

// String returns s with every detected secret or personal datum replaced,
// and what it found, deduplicated by label and ordered by label.
func (r *Redactor) String(s string) (string, []Finding) {
	s, found := r.redact(s)
	return s, r.findings(found)
}

// Value redacts a decoded JSON value (map[string]any, []any, string,
// json.Number, float64; also []string and map[string]string), recursively,
// in place where possible, and returns the new value and the findings.
//
// Inside objects, keys count too. A key that holds a secret (a token used
// as a map key) is renamed to its redacted form, numbered (#2, #3, …) if
// two keys redact alike. A key that names a secret (see [secretKey]:
// DB_PASSWORD, api_key, AWS_SECRET_ACCESS_KEY, Authorization) makes every
// string and number under it a secret: each is replaced whole by a marker
// (password_assignment, or aws_secret_key under an AWS secret key's name)
// unless the detectors already redacted all of it, or it is a placeholder
// such as "${DB_PASSWORD}" or "****". Other values are returned unchanged.
func (r *Redactor) Value(v any) (any, []Finding) {
	var found uint64
	v = r.value(v, -1, &found)
	return v, r.findings(found)
}

// value redacts v. held is -1, or the detector whose marker replaces v's
// strings and numbers because a key that names a secret holds v.
func (r *Redactor) value(v any, held int, found *uint64) any {
	switch t := v.(type) {
	case string:
		return r.scalar(t, held, found)
	case json.Number, float64:
		if held < 0 {
			return v
		}
		*found |= 1 << held
		return r.markers[held]
	case map[string]any:
		var renamed [][2]string
		for k, e := range t {
			h := r.heldBy(k, held)
			switch e := e.(type) {
			case string:
				if red := r.scalar(e, h, found); red != e {
					t[k] = red
				}
			case map[string]any:
				r.value(e, h, found) // in place
			default:
				t[k] = r.value(e, h, found)
			}
			if red, f := r.redact(k); f != 0 {
				*found |= f
				renamed = append(renamed, [2]string{k, red})
			}
		}
		renameKeys(t, renamed)
		return t
	case []any:
		for i, e := range t {
			t[i] = r.value(e, held, found)
		}
		return t
	case []string:
		for i, e := range t {
			t[i] = r.scalar(e, held, found)
		}
		return t
	case map[string]string:
		var renamed [][2]string
		for k, e := range t {
			if red := r.scalar(e, r.heldBy(k, held), found); red != e {
				t[k] = red
			}
			if red, f := r.redact(k); f != 0 {
				*found |= f
				renamed = append(renamed, [2]string{k, red})
			}
		}
		renameKeys(t, renamed)
		return t
	default:
		return v
	}
}

// heldBy is the held detector for the value of key k in an object that is
// itself held by held.
func (r *Redactor) heldBy(k string, held int) int {
	switch {
	case held >= 0:
		return held
	case !secretKey(k):
		return -1
	case awsSecretName(k):
		return r.heldAWS
	}
	return r.held
}

// scalar redacts one string; held as in [Redactor.value].
func (r *Redactor) scalar(s string, held int, found *uint64) string {
	red, f := r.redact(s)
	*found |= f
	if held < 0 || heldPlaceholder(s) || onlyMarkers(red) {
		return red
	}
	*found |= 1 << held
	return r.markers[held]
}

// renameKeys moves the values of m's keys to their redacted names, given
// as {old, new} pairs, in the order of the old names so that the numbering
// of names redacted alike is the same on every run.
func renameKeys[V any](m map[string]V, renamed [][2]string) {
	slices.SortFunc(renamed, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	for _, kv := range renamed {
		v := m[kv[0]]
		delete(m, kv[0])
		name := kv[1]
		for n := 2; ; n++ {
			if _, taken := m[name]; !taken {
				break
			}
			name = kv[1] + "#" + strconv.Itoa(n)
		}
		m[name] = v
	}
}

// Strings redacts each string of ss (an event's tags). It leaves ss alone
// and returns a new slice when something was redacted, ss itself otherwise.
func (r *Redactor) Strings(ss []string) ([]string, []Finding) {
	var found uint64
	out := ss
	for i, s := range ss {
		red, f := r.redact(s)
		if f == 0 {
			continue
		}
		if found == 0 {
			out = slices.Clone(ss)
		}
		found |= f
		out[i] = red
	}
	return out, r.findings(found)
}

// MaxSensitivity returns the highest sensitivity of the findings, or ""
// when there are none.
func MaxSensitivity(fs []Finding) memory.Sensitivity {
	var m memory.Sensitivity
	for i, f := range fs {
		if i == 0 {
			m = f.Sensitivity
			continue
		}
		m = m.Max(f.Sensitivity)
	}
	return m
}

// redact runs every detector over s until a pass finds nothing and returns
// the result with a bit set per detector that fired.
func (r *Redactor) redact(s string) (string, uint64) {
	var found uint64
	var buf [16]span
	var nums numberIndex
	for range maxPasses {
		changed := false
		for i, d := range r.detectors {
			spans := r.find(d.kind, s, &nums, buf[:0])
			if len(spans) == 0 {
				continue
			}
			spans = tidySpans(s, spans)
			if len(spans) == 0 {
				continue
			}
			s = replaceSpans(s, spans, r.markers[i])
			nums.scanned = false
			found |= 1 << i
			changed = true
		}
		if !changed {
			break
		}
	}
	return s, found
}

func (r *Redactor) findings(found uint64) []Finding {
	if found == 0 {
		return nil
	}
	var fs []Finding
	for _, i := range r.byLabel {
		if found&(1<<i) != 0 {
			fs = append(fs, Finding{Label: r.detectors[i].label, Sensitivity: r.detectors[i].sens})
		}
	}
	return fs
}

// tidySpans sorts spans, drops empty ones, ones that overlap an earlier (or, at
// the same start, a longer) span, and ones that touch a marker already in s,
// which is what keeps markers from being redacted again.
func tidySpans(s string, spans []span) []span {
	slices.SortFunc(spans, func(a, b span) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(b.end, a.end))
	})
	var marks []span
	if strings.Contains(s, "REDACTED:") {
		marks = findMarkers(s)
	}
	out := spans[:0]
	prevEnd, m := 0, 0
	for _, sp := range spans {
		if sp.end <= sp.start || sp.start < prevEnd {
			continue
		}
		// Both are sorted: skip the markers that end before this span.
		for m < len(marks) && marks[m].end <= sp.start {
			m++
		}
		if m < len(marks) && marks[m].start < sp.end {
			continue // touches a marker
		}
		out = append(out, sp)
		prevEnd = sp.end
	}
	return out
}

// findMarkers returns the spans of the redaction markers in s: ours,
// [REDACTED:label], and the <REDACTED:label> of the RFC's text, which an
// upstream BYOK harness may already have written.
func findMarkers(s string) []span {
	var out []span
	for off := 0; ; {
		i := strings.Index(s[off:], "REDACTED:")
		if i < 0 {
			return out
		}
		i += off
		off = i + len("REDACTED:")
		if i == 0 || (s[i-1] != '[' && s[i-1] != '<') {
			continue
		}
		end := byte(']')
		if s[i-1] == '<' {
			end = '>'
		}
		j := off
		for j < len(s) && (isLower(s[j]) || isDigit(s[j]) || s[j] == '_') {
			j++
		}
		if j == off || j >= len(s) || s[j] != end {
			continue
		}
		out = append(out, span{i - 1, j + 1})
		off = j + 1
	}
}

// replaceSpans returns s with each of the sorted, disjoint spans replaced by
// marker.
func replaceSpans(s string, spans []span, marker string) string {
	n := len(s)
	for _, sp := range spans {
		n += len(marker) - (sp.end - sp.start)
	}
	var b strings.Builder
	b.Grow(n)
	prev := 0
	for _, sp := range spans {
		b.WriteString(s[prev:sp.start])
		b.WriteString(marker)
		prev = sp.end
	}
	b.WriteString(s[prev:])
	return b.String()
}

// findLiterals finds the operator's literal values (sorted longest first)
// wherever they occur.
func findLiterals(s string, lits []string, dst []span) []span {
	for _, l := range lits {
		for off := 0; ; {
			i := strings.Index(s[off:], l)
			if i < 0 {
				break
			}
			i += off
			dst = append(dst, span{i, i + len(l)})
			off = i + len(l)
		}
	}
	return dst
}

// Byte classes. Detectors work on bytes: every shape they look for is
// ASCII, so a span never splits a multi-byte character and invalid UTF-8
// is just another byte that ends a token.

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }
func isAlpha(c byte) bool { return isLower(c) || isUpper(c) }
func isAlnum(c byte) bool { return isAlpha(c) || isDigit(c) }
func isWord(c byte) bool  { return isAlnum(c) || c == '_' }
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func lowerASCII(c byte) byte {
	if isUpper(c) {
		return c + 'a' - 'A'
	}
	return c
}

// boundaryBefore reports whether a token may start at s[i]: at the start,
// after a non-word byte, or right after an escape that glues a letter or
// hex digits to it in serialized text (\n in a JSON string, %3D in a URL).
func boundaryBefore(s string, i int) bool {
	if i == 0 || !isWord(s[i-1]) {
		return true
	}
	if i >= 2 && s[i-2] == '\\' && strings.IndexByte("nrtbf", s[i-1]) >= 0 {
		return true
	}
	return i >= 3 && s[i-3] == '%' && isHex(s[i-2]) && isHex(s[i-1])
}

func isHex(c byte) bool { return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F') }

// hasPrefixFold reports whether s starts with the lower-case ASCII prefix p,
// ignoring case.
func hasPrefixFold(s, p string) bool {
	if len(s) < len(p) {
		return false
	}
	for i := range len(p) {
		if lowerASCII(s[i]) != p[i] {
			return false
		}
	}
	return true
}

// hasSuffixFold reports whether s ends with the lower-case ASCII suffix p,
// ignoring case.
func hasSuffixFold(s, p string) bool {
	return len(s) >= len(p) && hasPrefixFold(s[len(s)-len(p):], p)
}

// foldIndex finds the lower-case ASCII word p in a string, ignoring case.
// Keep one per scan of a string: it remembers where the first byte of p
// was last seen in either case, so a scan stays linear however rare one
// case is.
type foldIndex struct {
	p     string
	first twoBytes
}

func newFoldIndex(p string) foldIndex {
	return foldIndex{p: p, first: twoBytes{a: p[0], b: p[0] - 'a' + 'A'}}
}

// next returns the index of the first instance of p in s at or after off,
// or -1. Offsets must not decrease between calls.
func (f *foldIndex) next(s string, off int) int {
	for {
		i := f.first.next(s, off)
		if i < 0 || i+len(f.p) > len(s) {
			return -1
		}
		if hasPrefixFold(s[i:], f.p) {
			return i
		}
		off = i + 1
	}
}

// containsFold reports whether s contains the lower-case ASCII word p,
// ignoring case.
func containsFold(s, p string) bool {
	f := newFoldIndex(p)
	return f.next(s, 0) >= 0
}

// twoBytes finds the next instance of either of two bytes with IndexByte,
// which is much quicker than a loop over the bytes, remembering where each
// one was last seen. Offsets passed to next must not decrease.
type twoBytes struct {
	a, b         byte
	nextA, nextB int // index of the next a and b at or after the last offset; -1: none left
	started      bool
}

func (t *twoBytes) next(s string, off int) int {
	if !t.started {
		t.nextA, t.nextB, t.started = -2, -2, true // -2: not looked for yet
	}
	if t.nextA != -1 && t.nextA < off {
		t.nextA = indexByteFrom(s, off, t.a)
	}
	if t.nextB != -1 && t.nextB < off {
		t.nextB = indexByteFrom(s, off, t.b)
	}
	switch {
	case t.nextA < 0:
		return t.nextB
	case t.nextB < 0 || t.nextA < t.nextB:
		return t.nextA
	default:
		return t.nextB
	}
}

func indexByteFrom(s string, off int, c byte) int {
	if off >= len(s) {
		return -1
	}
	if i := strings.IndexByte(s[off:], c); i >= 0 {
		return off + i
	}
	return -1
}
