package schemas

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
)

// CheckStorable reports every value and object key of doc, a JSON document,
// that PostgreSQL's text and jsonb cannot store, which would otherwise fail
// the write that carries it:
//   - a string or key holding the NUL character U+0000;
//   - one holding an unpaired UTF-16 surrogate escape such as "\ud800",
//     which is not Unicode text (RFC 7493 §2.1; encoding/json quietly
//     decodes it as U+FFFD, but a raw payload keeps it);
//   - a number beyond a double's range (about ±1.8e308, RFC 7493 §2.2),
//     which every Go reader of the stored document would fail to decode,
//     or with more digits after the decimal point than numeric's 16383, as
//     written (1e-16384 is one).
//
// It returns nil, or a [*ValidationError] with one violation per value, at
// its pointer, or per key, at its object's pointer: the key itself cannot be
// shown. A document that is not one JSON value is left to its decoder to
// refuse, and one that is not UTF-8 to the caller.
//
// Each can be written only as a \u escape, a number with an exponent or a
// very long number, so a document with none of those costs one scan; only
// the others are walked, token by token, to find where.
func CheckStorable(doc []byte) error {
	if !suspect(doc) {
		return nil
	}
	var (
		stack []walkFrame
		vs    []Violation
	)
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil // malformed: the decoder says why
		}
		switch tok := tok.(type) {
		case json.Delim:
			if tok == '{' || tok == '[' {
				stack = append(stack, walkFrame{object: tok == '{', wantKey: tok == '{'})
				continue
			}
			stack = stack[:len(stack)-1]
		case string:
			raw := doc[start:dec.InputOffset()]
			what := badEscape(raw[bytes.IndexByte(raw, '"'):])
			if n := len(stack); n > 0 && stack[n-1].wantKey {
				if what != "" {
					vs = append(vs, Violation{Pointer: walkPointer(stack[:n-1]), Message: "has a key holding " + what})
				}
				stack[n-1].key, stack[n-1].wantKey = tok, false
				continue
			}
			if what != "" {
				vs = append(vs, Violation{Pointer: walkPointer(stack), Message: "must not hold " + what})
			}
		case json.Number:
			if !numericFits(string(tok)) {
				vs = append(vs, Violation{Pointer: walkPointer(stack),
					Message: "is a number beyond what can be stored: at most ±1.8e308, and 16383 digits after the decimal point"})
			}
		}
		// A value ended: the document's, or its container's next member.
		if len(stack) == 0 {
			if len(bytes.TrimLeft(doc[dec.InputOffset():], " \t\r\n")) > 0 {
				return nil // more than one value: the decoder says so
			}
			break
		}
		if top := &stack[len(stack)-1]; top.object {
			top.wantKey = true
		} else {
			top.index++
		}
	}
	if len(vs) == 0 {
		return nil
	}
	return newValidationError(vs)
}

// walkFrame is a container [CheckStorable] is in, and where in it.
type walkFrame struct {
	object  bool
	key     string // the member being read, in an object
	index   int    // the element being read, in an array
	wantKey bool
}

// walkPointer is the JSON pointer of the value the innermost frame is at.
func walkPointer(stack []walkFrame) string {
	var b strings.Builder
	for _, f := range stack {
		b.WriteByte('/')
		if f.object {
			b.WriteString(EscapePointer(f.key))
		} else {
			b.WriteString(strconv.Itoa(f.index))
		}
	}
	return b.String()
}

// longNumber is a run of number characters long enough to need a look: no
// shorter number written without an exponent is beyond a double's range
// (whose largest has 309 digits) or numeric's scale.
const longNumber = 309

// suspect reports whether doc may hold something [CheckStorable] refuses: a
// \u escape of NUL or of a surrogate in a string, or outside strings an
// exponent or a long number. An escaped backslash before a "u" is a false
// alarm, which only costs a walk.
func suspect(doc []byte) bool {
	inString, run := false, 0
	for i := 0; i < len(doc); i++ {
		c := doc[i]
		if inString {
			switch c {
			case '"':
				inString = false
			case '\\':
				if i+5 < len(doc) && doc[i+1] == 'u' {
					hex := doc[i+2 : i+6]
					if string(hex) == "0000" || hex[0]|0x20 == 'd' && strings.IndexByte("89abcdefABCDEF", hex[1]) >= 0 {
						return true
					}
				}
				i++
			}
			continue
		}
		switch {
		case c == '"':
			inString, run = true, 0
		case '0' <= c && c <= '9' || c == '.' || c == '-' || c == '+':
			if run++; run >= longNumber {
				return true
			}
		case c == 'e' || c == 'E':
			if run > 0 {
				return true
			}
		default:
			run = 0
		}
	}
	return false
}

// badEscape names what an encoded JSON string (from its opening quote)
// holds that cannot be stored, or returns "".
func badEscape(s []byte) string {
	for i := 1; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		i++
		if i+4 >= len(s) || s[i] != 'u' {
			continue
		}
		r := hex4(s[i+1:])
		i += 4
		switch {
		case r == 0:
			return "the NUL character (U+0000)"
		case r >= 0xD800 && r < 0xDC00:
			if i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
				if lo := hex4(s[i+3:]); lo >= 0xDC00 && lo < 0xE000 {
					i += 6
					continue
				}
			}
			return unpaired
		case r >= 0xDC00 && r < 0xE000:
			return unpaired
		}
	}
	return ""
}

const unpaired = `an unpaired UTF-16 surrogate escape (\uD800–\uDFFF), which is not Unicode text`

// hex4 reads the four hex digits of a \u escape the decoder accepted.
func hex4(s []byte) rune {
	n, err := strconv.ParseUint(string(s[:4]), 16, 16)
	if err != nil {
		return -1
	}
	return rune(n)
}

// PostgreSQL's numeric limits (src/backend/utils/adt/numeric.c): the
// digits after the point as written, and the exponent its input accepts at
// all, even for zero.
const (
	numericMaxScale    = 16383
	numericMaxExponent = 1<<30 - 1 // INT_MAX / 2
)

// numericFits reports whether the JSON number lit can be stored and read
// back: a double holds it (beyond, encoding/json refuses to decode it, and a
// payload that retrieval cannot decode would fail every retrieval it is a
// candidate of), and PostgreSQL's numeric, and so jsonb, accepts its
// exponent and its scale as written (the digits after the point, less the
// exponent: 1.50e1 has scale 1).
func numericFits(lit string) bool {
	if _, err := strconv.ParseFloat(lit, 64); err != nil {
		return false
	}
	mant, exp, _ := strings.Cut(strings.ToLower(strings.TrimPrefix(lit, "-")), "e")
	e := new(big.Int)
	if exp != "" {
		if _, ok := e.SetString(strings.TrimPrefix(exp, "+"), 10); !ok {
			return false
		}
	}
	if e.CmpAbs(big.NewInt(numericMaxExponent)) >= 0 {
		return false
	}
	_, frac, _ := strings.Cut(mant, ".")
	return int64(len(frac))-e.Int64() <= numericMaxScale
}
