package policy

import (
	"regexp"
	"strings"
)

// This file holds the personal-data detectors: email addresses, payment
// card numbers, IBANs and phone numbers.

// findEmails finds email addresses around each '@'. It leaves alone what
// only looks like one in agent traces: git@host:org/repo and other
// scp-style remotes, user@host in a URL, system accounts (root@, ubuntu@),
// image@2x.png, and package@version.
func findEmails(s string, dst []span) []span {
	for off := 0; ; {
		at := strings.IndexByte(s[off:], '@')
		if at < 0 {
			return dst
		}
		at += off
		off = at + 1
		ls := at
		for ls > 0 && isEmailLocal(s[ls-1]) {
			ls--
		}
		if ls > 0 && s[ls-1] == '\\' && strings.IndexByte("nrtbf", s[ls]) >= 0 {
			ls++ // the letter of a \n escape
		}
		for ls < at && s[ls] == '.' {
			ls++
		}
		if ls == at {
			continue
		}
		de := runOf(s, at+1, func(c byte) bool { return isAlnum(c) || c == '.' || c == '-' })
		for de > at+1 && (s[de-1] == '.' || s[de-1] == '-') {
			de--
		}
		if !emailDomain(s[at+1:de]) || (de < len(s) && (isWord(s[de]) || s[de] == '@')) {
			continue
		}
		if systemAccount(s[ls:at]) || scpLike(s, de) || urlUserHost(s, ls, de) || urlPasswordHost(s, ls) {
			continue
		}
		dst = append(dst, span{ls, de})
		off = de
	}
}

func isEmailLocal(c byte) bool {
	return isAlnum(c) || strings.IndexByte("._%+-", c) >= 0
}

// emailDomain reports whether d is a domain name with a top-level domain of
// letters that is not a file extension.
func emailDomain(d string) bool {
	labels := 0
	var last string
	for label := range strings.SplitSeq(d, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		if labels == 0 && retina(label) {
			return false
		}
		labels++
		last = label
	}
	if labels < 2 || len(last) < 2 || len(last) > 24 || fileExtensions[strings.ToLower(last)] {
		return false
	}
	for i := range len(last) {
		if !isAlpha(last[i]) {
			return false
		}
	}
	return true
}

// retina reports whether a label is the scale of an image asset: 2x in
// icon@2x.png.
func retina(label string) bool {
	n := len(label)
	if n < 2 || lowerASCII(label[n-1]) != 'x' {
		return false
	}
	for i := range n - 1 {
		if !isDigit(label[i]) {
			return false
		}
	}
	return true
}

// fileExtensions are file and unit name extensions that are not top-level
// domains, for names such as logo@dark.svg.
var fileExtensions = map[string]bool{
	"png": true, "jpg": true, "jpeg": true, "gif": true, "svg": true, "webp": true, "ico": true,
	"js": true, "mjs": true, "cjs": true, "ts": true, "tsx": true, "jsx": true, "go": true, "java": true,
	"json": true, "yaml": true, "yml": true, "toml": true, "txt": true, "lock": true, "log": true,
	"tar": true, "gz": true, "tgz": true, "zip": true, "css": true, "scss": true, "html": true, "rb": true,
	// systemd template units: user@1000.service, getty@tty1.service.
	"service": true, "socket": true, "timer": true, "mount": true, "target": true, "slice": true,
	"scope": true, "path": true, "device": true, "swap": true, "automount": true,
}

// systemAccount reports whether an address's local part is a Unix account
// used in ssh and git remotes rather than a person's mailbox.
func systemAccount(local string) bool {
	switch local {
	case "git", "root", "ubuntu", "ec2-user", "centos", "debian":
		return true
	}
	return false
}

// scpLike reports whether the address ending at s[de] is the host of an
// scp-style path (deploy@example.com:/var/www) rather than an address.
func scpLike(s string, de int) bool {
	return de+1 < len(s) && s[de] == ':' && (isAlnum(s[de+1]) || strings.IndexByte("_~./", s[de+1]) >= 0)
}

// urlUserHost reports whether the address at s[ls:de] is the user@host of
// a URL's authority (https://alice@example.com/). When the authority has
// another '@' after it, the address is the URL's user name and is kept as
// an address.
func urlUserHost(s string, ls, de int) bool {
	if ls < 3 || s[ls-3:ls] != "://" {
		return false
	}
	return strings.IndexByte(s[de:authorityEnd(s, de)], '@') < 0
}

// numberIndex is where the numbers of a string are, found in one pass and
// shared by the card, IBAN and phone detectors: the runs of digits and
// phone punctuation (" .-/()+") that hold 8 or more digits, and the places
// where two upper-case letters precede a digit, as an IBAN's country code
// does. The first few live in fixed buffers, so that a short text costs no
// allocation.
type numberIndex struct {
	scanned bool
	nRuns   int
	nIBANs  int
	runBuf  [32]numberRun
	ibanBuf [16]int
	// Past the buffers, for long texts (a log with a timestamp on every
	// line has a run per line): every number must be looked at.
	moreRuns  []numberRun
	moreIBANs []int
}

type numberRun struct{ start, end, digits int }

// Counts rather than slices into the buffers, so that a numberIndex can live
// on its user's stack.
func (n *numberIndex) runs() []numberRun {
	if n.moreRuns != nil {
		return n.moreRuns
	}
	return n.runBuf[:n.nRuns]
}

func (n *numberIndex) ibans() []int {
	if n.moreIBANs != nil {
		return n.moreIBANs
	}
	return n.ibanBuf[:n.nIBANs]
}

func (n *numberIndex) addRun(r numberRun) {
	switch {
	case n.moreRuns != nil:
		n.moreRuns = append(n.moreRuns, r)
	case n.nRuns < len(n.runBuf):
		n.runBuf[n.nRuns] = r
		n.nRuns++
	default:
		n.moreRuns = append(make([]numberRun, 0, 4*len(n.runBuf)), n.runBuf[:]...)
		n.moreRuns = append(n.moreRuns, r)
	}
}

func (n *numberIndex) addIBAN(i int) {
	switch {
	case n.moreIBANs != nil:
		n.moreIBANs = append(n.moreIBANs, i)
	case n.nIBANs < len(n.ibanBuf):
		n.ibanBuf[n.nIBANs] = i
		n.nIBANs++
	default:
		n.moreIBANs = append(make([]int, 0, 4*len(n.ibanBuf)), n.ibanBuf[:]...)
		n.moreIBANs = append(n.moreIBANs, i)
	}
}

// of returns the numbers of s, scanning it if it changed since the last
// call (the caller resets scanned when it rewrites s).
func (n *numberIndex) of(s string) *numberIndex {
	if n.scanned {
		return n
	}
	*n = numberIndex{scanned: true}
	for i := 0; i < len(s); {
		c := s[i]
		if !isDigit(c) && c != '+' && c != '(' {
			i++
			continue
		}
		if isDigit(c) && i >= 2 && isUpper(s[i-1]) && isUpper(s[i-2]) {
			n.addIBAN(i - 2)
		}
		j, d := i, 0
		for ; j < len(s) && phoneChar[s[j]]; j++ {
			if isDigit(s[j]) {
				d++
			}
		}
		if d >= 8 {
			n.addRun(numberRun{i, j, d})
		}
		i = j
	}
	return n
}

var phoneChar = func() (t [256]bool) {
	for _, c := range []byte("0123456789 .-/()+") {
		t[c] = true
	}
	return t
}()

// urlPasswordHost reports whether the address starting at s[ls] is the
// password@host of a URL (https://user:xxxxx@example.com/) whose password
// the URL detector left alone as a placeholder.
func urlPasswordHost(s string, ls int) bool {
	if ls == 0 || s[ls-1] != ':' {
		return false
	}
	j := ls - 1
	for j > 0 && s[j-1] != ':' && s[j-1] != '@' && !endsAuthority(s[j-1]) {
		j--
	}
	return j >= 3 && s[j-3:j] == "://"
}

// findCards finds payment card numbers: 13 to 19 digits, bare or grouped
// by spaces or dashes the way cards print them (4-4-4-4, 4-6-5, …), with a
// card network's leading digits and a valid Luhn check digit. A number
// glued to a longer digit group or a decimal point is not one.
func findCards(s string, nums *numberIndex, dst []span) []span {
	var groups [8]int // group lengths
	var digits [19]byte
	for _, run := range nums.runs() {
		if run.digits < 13 {
			continue
		}
		for i := run.start; i < run.end; i++ {
			// Not glued to a decimal point, a sign (a card is never negative;
			// a phone number starts with +) or a digit list's comma.
			if !isDigit(s[i]) || !boundaryBefore(s, i) || (i > 0 && strings.IndexByte(".+-,", s[i-1]) >= 0) {
				continue
			}
			// Read up to 8 groups separated by one consistent ' ' or '-'.
			n, total, j := 0, 0, i
			sep := byte(0)
			for n < len(groups) {
				e := runOf(s, j, isDigit)
				groups[n] = e - j
				for k := j; k < e && total < len(digits); k++ {
					digits[total] = s[k]
					total++
				}
				n++
				j = e
				if groups[n-1] > 19 || j+1 >= len(s) || (s[j] != ' ' && s[j] != '-') || !isDigit(s[j+1]) || (sep != 0 && s[j] != sep) {
					break
				}
				sep = s[j]
				j++
			}
			if end, ok := cardShape(s, i, groups[:n], digits[:total]); ok {
				dst = append(dst, span{i, end})
				i = end
				continue
			}
			i += groups[0] // try again at the next group
		}
	}
	return dst
}

// cardShape returns the end of the longest prefix of the groups that is a
// card number, if any. digits holds the first 19 digits of the groups.
func cardShape(s string, start int, groups []int, digits []byte) (int, bool) {
	if len(groups) == 1 {
		n := groups[0]
		end := start + n
		if n < 13 || n > 19 || !cardEnd(s, end) {
			return 0, false
		}
		// Bare 17 to 19 digits are far more often an int64, a trace id or
		// a span id than a card; of those long cards, only UnionPay's
		// commonly print ungrouped.
		if n > 16 && (digits[0] != '6' || digits[1] != '2') {
			return 0, false
		}
		return end, cardNumber(digits[:n])
	}
	if groups[0] != 4 {
		return 0, false
	}
	for k := len(groups); k >= 3; k-- {
		total := 0
		for _, g := range groups[:k] {
			total += g
		}
		if total < 13 || total > 19 || !cardGrouping(groups[:k]) {
			continue
		}
		end := start + total + k - 1
		if k == len(groups) && !cardEnd(s, end) {
			continue
		}
		if cardNumber(digits[:total]) {
			return end, true
		}
	}
	return 0, false
}

// cardGrouping reports whether group lengths are how cards print: fours
// with a shorter last group (4-4-4-4, 4-4-4-4-3), or 4-6-5 and 4-6-4.
func cardGrouping(g []int) bool {
	if len(g) == 3 && g[1] == 6 && (g[2] == 4 || g[2] == 5) {
		return true
	}
	for _, n := range g[:len(g)-1] {
		if n != 4 {
			return false
		}
	}
	last := g[len(g)-1]
	return last >= 1 && last <= 4
}

// cardEnd reports whether a number may end at s[e]: not glued to a word
// byte or to a decimal part.
func cardEnd(s string, e int) bool {
	if e >= len(s) {
		return true
	}
	if isWord(s[e]) {
		return false
	}
	return !((s[e] == '.' || s[e] == ',') && e+1 < len(s) && isDigit(s[e+1]))
}

// cardNumber reports whether digits have a card network's leading digits
// and one of its lengths, and pass Luhn. Leading digits keep out the epoch
// timestamps and snowflake ids that fill agent traces, which start with 1;
// lengths keep out most other Luhn-valid coincidences.
func cardNumber(d []byte) bool {
	n := len(d)
	p2 := int(d[0]-'0')*10 + int(d[1]-'0')
	p4 := p2*100 + int(d[2]-'0')*10 + int(d[3]-'0')
	var ok bool
	switch {
	case d[0] == '4': // Visa
		ok = n == 13 || n == 16 || n == 19
	case p2 >= 51 && p2 <= 55, p4 >= 2221 && p4 <= 2720: // Mastercard
		ok = n == 16
	case p2 == 34 || p2 == 37: // American Express
		ok = n == 15
	case p2 == 36: // Diners Club
		ok = n == 14
	case p2 == 30 || p2 == 38 || p2 == 39: // Diners Club International
		ok = n == 14 || n == 16
	case p2 == 35, p2 == 62, p2 == 64, p2 == 65, p4 == 6011: // JCB, UnionPay, Discover
		ok = n >= 16 && n <= 19
	case p2 == 50, p2 >= 56 && p2 <= 58, p2 == 63, p2 == 67: // Maestro
		ok = n >= 16 && n <= 19
	}
	return ok && luhn(d)
}

// findIBANs finds IBANs (ISO 13616): a country code, two check digits and
// the country's length of upper-case letters and digits, bare or in groups
// of four, that pass the mod-97 check.
func findIBANs(s string, nums *numberIndex, dst []span) []span {
	var buf [34]byte
	for _, i := range nums.ibans() {
		if !boundaryBefore(s, i) {
			continue
		}
		want := ibanLengths[s[i:i+2]]
		if want == 0 || i+want > len(s) {
			continue
		}
		n, j := 0, i
	chars:
		for n < want && j < len(s) {
			switch c := s[j]; {
			case isUpperDigit(c):
				buf[n] = c
				n++
				j++
			case c == ' ' && n%4 == 0 && j+1 < len(s) && isUpperDigit(s[j+1]):
				j++
			default:
				break chars
			}
		}
		if n != want || (j < len(s) && isWord(s[j])) || !ibanValid(buf[:n]) {
			continue
		}
		dst = append(dst, span{i, j})
	}
	return dst
}

// Phone number shapes. Each runs only on a window of digits and
// separators that a cheap scan found plausible, and each match is then
// checked in its context (see findPhones).
var (
	// International, starting with + and a country code:
	// +44 20 7946 0958, +1 (415) 555-2671, +49 (0)30 901820, +4915112345678.
	phoneIntl = regexp.MustCompile(`\+[1-9][0-9]{0,2}(?:[ .\-]?(?:\([0-9]{1,4}\)|[0-9]{1,6})){1,7}`)
	// North American: (415) 555-2671, 415-555-2671, 415.555.2671, 1-800-555-0199.
	phoneNANP = regexp.MustCompile(`(?:1[ .\-])?(?:\([0-9]{3}\) ?|[0-9]{3}[.\-])[0-9]{3}[.\-][0-9]{4}`)
	// European national, with a trunk 0 and one kind of separator:
	// 020 7946 0958, 030 901820, 01 23 45 67 89, 0151-12345678.
	phoneNational = regexp.MustCompile(`0[0-9]{1,4}(?:[ .\-/][0-9]{2,8}){1,5}`)
)

// findPhones finds phone numbers in international, North American and
// European national formats. It leaves plain digit runs, dates, times,
// versions and ids alone: a number needs a leading +, or the grouping of
// its format, and must not be glued to more digits or letters.
func findPhones(s string, nums *numberIndex, dst []span) []span {
	for _, run := range nums.runs() {
		dst = phonesIn(s, run.start, s[run.start:run.end], dst)
	}
	return dst
}

func countDigits(w string) int {
	n := 0
	for i := range len(w) {
		if isDigit(w[i]) {
			n++
		}
	}
	return n
}

// phonesIn checks the window w, which starts at s[off], for each format
// that its shape allows.
func phonesIn(s string, off int, w string, dst []span) []span {
	intl, nanp, national := phoneShapes(w)
	if intl {
		dst = phoneMatches(s, off, w, phoneIntl, validIntl, dst)
	}
	if nanp {
		dst = phoneMatches(s, off, w, phoneNANP, validNANP, dst)
	}
	if national {
		dst = phoneMatches(s, off, w, phoneNational, validNational, dst)
	}
	return dst
}

// phoneShapes says which formats could match in w, from its digit groups,
// so that the regexps run only where they might succeed: a '+' with 9
// digits after it; groups of 3, 3 and 4; a group starting with 0 followed
// by 9 or more digits in all.
func phoneShapes(w string) (intl, nanp, national bool) {
	var g [24]int
	var zero [24]bool
	n, after := 0, 0
	for i := 0; i < len(w) && n < len(g); {
		if !isDigit(w[i]) {
			i++
			continue
		}
		e := runOf(w, i, isDigit)
		g[n], zero[n] = e-i, w[i] == '0'
		n++
		i = e
	}
	for k := n - 1; k >= 0; k-- {
		after += g[k]
		if k+2 < n && g[k] == 3 && g[k+1] == 3 && g[k+2] == 4 {
			nanp = true
		}
		if zero[k] && g[k] >= 2 && g[k] <= 5 && k+1 < n && after >= 9 {
			national = true
		}
	}
	if p := strings.IndexByte(w, '+'); p >= 0 && countDigits(w[p:]) >= 9 {
		intl = true
	}
	return intl, nanp, national
}

func phoneMatches(s string, off int, w string, re *regexp.Regexp, valid func(string) bool, dst []span) []span {
	national := re == phoneNational
	for _, m := range re.FindAllStringIndex(w, -1) {
		a, b := off+m[0], off+m[1]
		if phoneBounded(s, a, b, national) && valid(s[a:b]) {
			dst = append(dst, span{a, b})
		}
	}
	return dst
}

// phoneBounded reports whether s[a:b] stands alone: not glued to a word,
// a decimal point, a path or, through a separator, more digits. National
// numbers, whose shape is the weakest, must also not follow a hex field
// and a colon (01:02-03-04-05-06 is a MAC address) nor sit among other
// numbers separated by spaces (hex-dump bytes, tables).
func phoneBounded(s string, a, b int, national bool) bool {
	if !boundaryBefore(s, a) || (a > 0 && strings.IndexByte(".-/+", s[a-1]) >= 0) {
		return false
	}
	if national && a >= 2 && ((s[a-1] == ':' && isHex(s[a-2])) || (s[a-1] == ' ' && isDigit(s[a-2]))) {
		return false
	}
	seps := ".-/"
	if national {
		seps = " .-/"
	}
	if b < len(s) && (isWord(s[b]) || (strings.IndexByte(seps, s[b]) >= 0 && b+1 < len(s) && isDigit(s[b+1]))) {
		return false
	}
	return true
}

// validIntl: 9 to 15 digits (E.164; fewer is a time-zone offset and a
// year, +1130 2010), 10 or more when not grouped at all, and not a signed
// decimal (+123.456789).
func validIntl(m string) bool {
	n := countDigits(m)
	if n < 9 || n > 15 {
		return false
	}
	seps := 0
	for i := range len(m) {
		if c := m[i]; c == ' ' || c == '.' || c == '-' || c == '(' {
			seps++
		}
	}
	if seps == 1 && strings.IndexByte(m, '.') >= 0 {
		return false
	}
	return n >= 10 || seps > 0
}

// validNANP: area code and exchange start with 2–9.
func validNANP(m string) bool {
	var d [11]byte
	n := 0
	for i := 0; i < len(m) && n < len(d); i++ {
		if isDigit(m[i]) {
			d[n] = m[i]
			n++
		}
	}
	ds := d[:n]
	if n == 11 {
		ds = ds[1:]
	}
	return len(ds) == 10 && ds[0] >= '2' && ds[3] >= '2'
}

// validNational: 9 to 12 digits after a trunk 0 and an area code (not 00,
// the international prefix), one kind of separator throughout, and the
// grouping of a national format: a 3 to 5 digit trunk and area code then
// groups of 3 or more, one of them 4 or more (020 7946 0958, 030 901820,
// 01632 960123); a 2-digit one then groups of 2 to 4 (06 1234 5678,
// 02 123 45 67); or the French five pairs (01 23 45 67 89). That keeps out
// hex-dump bytes (04 40 00 00 00 00), device fields (fc:01 1318064), octal
// triples (013 014 015), MAC addresses, zero-padded IPv4 addresses and
// binary strings.
func validNational(m string) bool {
	n := countDigits(m)
	if n < 9 || n > 12 || m[1] == '0' {
		return false
	}
	if strings.Trim(m, "01 .-/") == "" {
		return false // a binary string
	}
	var groups [8]int
	k, sep := 0, byte(0)
	for i := 0; i < len(m) && k < len(groups); {
		e := runOf(m, i, isDigit)
		groups[k] = e - i
		k++
		if e == len(m) {
			break
		}
		if sep != 0 && m[e] != sep {
			return false
		}
		sep = m[e]
		i = e + 1
	}
	g := groups[:k]
	pairs, short := true, true
	for _, x := range g {
		pairs = pairs && x == 2
		short = short && x <= 3
	}
	switch {
	case pairs:
		return len(g) == 5 && (sep == ' ' || sep == '.') // not a MAC address's '-'
	case short && sep == '.':
		return false // an IPv4 address with leading zeros
	case g[0] >= 3:
		long := false
		for _, x := range g[1:] {
			if x < 3 {
				return false
			}
			long = long || x >= 4
		}
		return long // not octal triples (013 014 015)
	default:
		for _, x := range g[1:] {
			if x < 2 || x > 4 {
				return false
			}
		}
		return true
	}
}
