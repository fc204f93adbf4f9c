package revise

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/schemas"
)

// Limits of an erasure request.
const (
	// MaxSubjectIdentifiers bounds the identifiers one request names.
	MaxSubjectIdentifiers = 100
	// minIdentifierRunes: a shorter user id or name would match unrelated
	// text everywhere and erase it.
	minIdentifierRunes = 3
	// Phone numbers have 7 to 15 digits (E.164 allows 15).
	minPhoneDigits, maxPhoneDigits = 7, 15
)

// Subject is a data subject named by identifiers, normalised (write-path
// RFC §12.10.2, PII(s)): emails and names in lower case, names with single
// spaces between their words, phone numbers as digits alone. Its zero
// value names no one.
type Subject struct {
	Emails  []string
	UserIDs []string
	Names   []string
	Phones  []string
}

// NewSubject validates and normalises an erasure request's identifiers.
// A malformed identifier or a request that names none is a
// [*schemas.ValidationError] whose pointers name the fields; its messages
// never quote the values.
func NewSubject(req api.ErasureRequest) (Subject, error) {
	var s Subject
	var bad []schemas.Violation
	add := func(list *[]string, v string) {
		if !slices.Contains(*list, v) {
			*list = append(*list, v)
		}
	}
	for i, e := range req.Emails {
		e = strings.ToLower(strings.TrimSpace(e))
		if !emailAddress(e) {
			bad = append(bad, schemas.Violation{Pointer: fmt.Sprintf("/emails/%d", i), Message: "is not an email address (local@domain.tld)"})
			continue
		}
		add(&s.Emails, e)
	}
	for i, u := range req.UserIDs {
		u = strings.ToLower(strings.TrimSpace(u))
		if msg := checkToken(u, 200); msg != "" {
			bad = append(bad, schemas.Violation{Pointer: fmt.Sprintf("/user_ids/%d", i), Message: msg})
			continue
		}
		add(&s.UserIDs, u)
	}
	for i, n := range req.Names {
		n = strings.Join(strings.Fields(strings.ToLower(n)), " ")
		msg := checkToken(n, 200)
		if msg == "" && !strings.ContainsFunc(n, unicode.IsLetter) {
			msg = "must contain a letter"
		}
		if msg != "" {
			bad = append(bad, schemas.Violation{Pointer: fmt.Sprintf("/names/%d", i), Message: msg})
			continue
		}
		add(&s.Names, n)
	}
	for i, p := range req.PhoneNumbers {
		digits, ok := phoneDigits(p)
		if !ok {
			bad = append(bad, schemas.Violation{Pointer: fmt.Sprintf("/phone_numbers/%d", i),
				Message: fmt.Sprintf("is not a phone number: %d to %d digits, with spaces, +, -, ., / or parentheses between them", minPhoneDigits, maxPhoneDigits)})
			continue
		}
		add(&s.Phones, digits)
	}
	if n := len(req.Emails) + len(req.UserIDs) + len(req.Names) + len(req.PhoneNumbers); n == 0 {
		bad = append(bad, schemas.Violation{Pointer: "", Message: "name the subject by at least one identifier: emails, user_ids, names or phone_numbers"})
	} else if n > MaxSubjectIdentifiers {
		bad = append(bad, schemas.Violation{Pointer: "", Message: fmt.Sprintf("names %d identifiers; at most %d a request", n, MaxSubjectIdentifiers)})
	}
	if len(bad) > 0 {
		return Subject{}, &schemas.ValidationError{Violations: bad}
	}
	for _, l := range []*[]string{&s.Emails, &s.UserIDs, &s.Names, &s.Phones} {
		slices.Sort(*l)
	}
	return s, nil
}

// checkToken checks a user id or a name: long enough to identify someone,
// short enough to be one identifier, with no control characters.
func checkToken(v string, maxLen int) string {
	switch n := utf8.RuneCountInString(v); {
	case n < minIdentifierRunes:
		return fmt.Sprintf("is too short to identify a subject (%d characters at least): it would match unrelated text", minIdentifierRunes)
	case len(v) > maxLen:
		return fmt.Sprintf("is longer than %d bytes", maxLen)
	case strings.ContainsFunc(v, unicode.IsControl):
		return "holds a control character"
	}
	return ""
}

// emailAddress reports whether e (lower case) is an address local@domain
// with a dotted domain.
func emailAddress(e string) bool {
	local, domain, ok := strings.Cut(e, "@")
	if !ok || local == "" || len(local) > 64 || len(e) > 254 || strings.Contains(domain, "@") {
		return false
	}
	for _, r := range local {
		if !(isAlnum(r) || strings.ContainsRune("._%+-'", r)) {
			return false
		}
	}
	labels := strings.Split(domain, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if l == "" || l[0] == '-' || l[len(l)-1] == '-' || strings.ContainsFunc(l, func(r rune) bool { return !isAlnum(r) && r != '-' }) {
			return false
		}
	}
	return true
}

// phoneDigits returns a phone number's digits, if it is one.
func phoneDigits(p string) (string, bool) {
	var b strings.Builder
	for _, r := range strings.TrimSpace(p) {
		switch {
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		case strings.ContainsRune(" +-./()", r):
		default:
			return "", false
		}
	}
	d := b.String()
	return d, len(d) >= minPhoneDigits && len(d) <= maxPhoneDigits
}

func isAlnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// Empty reports whether s names no one.
func (s Subject) Empty() bool {
	return len(s.Emails)+len(s.UserIDs)+len(s.Names)+len(s.Phones) == 0
}

// SHA256 is the hex SHA-256 of the subject's normalised identifiers, one
// "kind:value" a line, sorted: what the erasure's certificate and audit
// entry name the subject by (write-path RFC §12.10.2, step 6: a hash, not
// the personal data).
func (s Subject) SHA256() string {
	var lines []string
	for _, e := range s.Emails {
		lines = append(lines, "email:"+e)
	}
	for _, u := range s.UserIDs {
		lines = append(lines, "user_id:"+u)
	}
	for _, n := range s.Names {
		lines = append(lines, "name:"+n)
	}
	for _, p := range s.Phones {
		lines = append(lines, "phone:"+p)
	}
	slices.Sort(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])
}

// Counts is how many identifiers of each kind the subject has.
func (s Subject) Counts() map[string]int {
	out := map[string]int{}
	for k, l := range map[string][]string{"email": s.Emails, "user_id": s.UserIDs, "name": s.Names, "phone": s.Phones} {
		if len(l) > 0 {
			out[k] = len(l)
		}
	}
	return out
}

// MentionedIn reports whether text names the subject: an email, user id
// or name stands in it as a whole (not inside a longer word, address or
// id), whatever the case and the spaces between a name's words; or a run
// of phone digits and punctuation holds the digits of a phone number, or is
// one without its country code.
func (s Subject) MentionedIn(text string) bool {
	if text == "" || s.Empty() {
		return false
	}
	norm := strings.Join(strings.FieldsFunc(strings.ToLower(text), unicode.IsSpace), " ")
	for _, e := range s.Emails {
		if occurs(norm, e, emailWord) {
			return true
		}
	}
	for _, u := range s.UserIDs {
		if occurs(norm, u, plainWord) {
			return true
		}
	}
	for _, n := range s.Names {
		if occurs(norm, n, plainWord) {
			return true
		}
	}
	if len(s.Phones) > 0 && phoneIn(norm, s.Phones) {
		return true
	}
	return false
}

// MentionedInJSON reports whether a JSON document names the subject in
// any of its strings, numbers or keys; a document that is not JSON is
// matched as text.
func (s Subject) MentionedInJSON(doc []byte) bool {
	found := false
	if !walkJSON(doc, func(v string) bool {
		found = s.MentionedIn(v)
		return !found
	}) {
		return s.MentionedIn(string(doc))
	}
	return found
}

// walkJSON calls f with every string, number and key of doc, until f
// returns false; it reports false if doc is not JSON.
func walkJSON(doc []byte, f func(string) bool) bool {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return false
	}
	var walk func(v any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case string:
			return f(x)
		case json.Number:
			return f(x.String())
		case []any:
			for _, e := range x {
				if !walk(e) {
					return false
				}
			}
		case map[string]any:
			for k, e := range x {
				if !f(k) || !walk(e) {
					return false
				}
			}
		}
		return true
	}
	walk(v)
	return true
}

// plainWord: what may not stand next to a user id or a name — a letter, a
// digit or an underscore would make it part of a longer word.
func plainWord(r rune, _ bool) bool { return isAlnum(r) || r == '_' }

// emailWord: what may not stand next to an email address, before it (the
// characters of a longer local part) or after it (of a longer domain).
func emailWord(r rune, before bool) bool {
	if isAlnum(r) || r == '_' || r == '-' {
		return true
	}
	if before {
		return strings.ContainsRune(".%+'", r)
	}
	return r == '@'
}

// occurs reports whether needle stands in hay as a whole: the characters
// around it are not word characters as word says. A period after an
// address continues it only when a letter or digit follows.
func occurs(hay, needle string, word func(r rune, before bool) bool) bool {
	for off := 0; ; {
		i := strings.Index(hay[off:], needle)
		if i < 0 {
			return false
		}
		i += off
		j := i + len(needle)
		off = i + 1
		if r, _ := utf8.DecodeLastRuneInString(hay[:i]); i > 0 && word(r, true) {
			continue
		}
		if j < len(hay) {
			r, n := utf8.DecodeRuneInString(hay[j:])
			if word(r, false) {
				continue
			}
			if r == '.' && j+n < len(hay) && strings.Contains(needle, "@") {
				if next, _ := utf8.DecodeRuneInString(hay[j+n:]); isAlnum(next) {
					continue
				}
			}
		}
		return true
	}
}

// phoneIn reports whether a run of digits and phone punctuation in text
// holds one of the phone numbers' digits, or is one of them without a
// country code or trunk prefix (up to 3 leading digits).
func phoneIn(text string, phones []string) bool {
	var run strings.Builder
	check := func() bool {
		d := run.String()
		run.Reset()
		if len(d) < minPhoneDigits {
			return false
		}
		for _, p := range phones {
			if strings.Contains(d, p) || (strings.HasSuffix(p, d) && len(p)-len(d) <= 3) {
				return true
			}
		}
		return false
	}
	for _, r := range text {
		switch {
		case r >= '0' && r <= '9':
			run.WriteRune(r)
		case strings.ContainsRune(" +-./()", r):
		default:
			if check() {
				return true
			}
		}
	}
	return check()
}

// likePatterns are ILIKE patterns that every text naming the subject
// matches (a superset: a prefilter that cannot miss), and LIKE patterns
// for its digits alone.
func (s Subject) likePatterns() (likes, digits []string) {
	esc := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	for _, e := range s.Emails {
		likes = append(likes, "%"+esc.Replace(e)+"%")
	}
	for _, u := range s.UserIDs {
		likes = append(likes, "%"+esc.Replace(u)+"%")
	}
	for _, n := range s.Names {
		words := strings.Fields(n)
		for i := range words {
			words[i] = esc.Replace(words[i])
		}
		likes = append(likes, "%"+strings.Join(words, "%")+"%")
	}
	for _, p := range s.Phones {
		digits = append(digits, "%"+p+"%")
		for cut := 1; cut <= 3 && len(p)-cut >= minPhoneDigits; cut++ {
			digits = append(digits, "%"+p[cut:]+"%")
		}
	}
	return likes, digits
}
