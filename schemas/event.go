package schemas

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// ValidateEvent is ValidateValue("Event", v) written out for the one schema
// every staged event passes (substrate RFC §15.4; event.schema.json, and
// Provenance's Source for a fact's evidence). It reports the same
// violations as the generic validator for every value [Decode] makes, but
// allocates nothing for a valid event: on the ingestion hot path the
// generic validator was nearly half of an event's CPU.
//
// The generic validator remains the reference: event_test.go and
// FuzzEventValidator hold the two to the same answers, and a change to
// either schema file fails a test until this function follows it. A value
// holding what JSON cannot (a Go type of no JSON type, a number that does
// not parse) is left to the generic validator, whatever it makes of it.
func ValidateEvent(v any) error {
	var c eventCheck
	c.event(v)
	if c.foreign {
		return ValidateValue("Event", v)
	}
	if len(c.vs) == 0 {
		return nil
	}
	return newValidationError(c.vs)
}

// The generic validator's messages for the Event schema's enums, as its
// compiler writes them ("value must be one of" and each value in %#v).
const (
	eventKinds     = `value must be one of "user_input", "tool_call", "tool_output", "observation", "error", "outcome", "fact"`
	outcomeStatus  = `value must be one of "success", "failure", "partial"`
	sourceKinds    = `value must be one of "event", "artifact", "tool_call", "observation", "outcome", "human", "reasoning", "record"`
	notDateTime    = "is not a valid date-time"
	unknownField   = "is not a known property"
	requiredField  = "is required"
	scalarTypes    = "string or number or boolean"
	factValueTypes = "string or number or boolean or object or array"
)

// isDateTime is the generic validator's own date-time format check.
var isDateTime = jsonschema.Formats["date-time"]

// eventCheck collects the violations of one event. Pointers are built only
// for a violation: a valid event costs no allocation.
type eventCheck struct {
	vs []Violation
	// foreign is set on meeting a value of no JSON type, or a number
	// big.Rat cannot read.
	foreign bool
}

func (c *eventCheck) add(pointer, message string) {
	c.vs = append(c.vs, Violation{Pointer: pointer, Message: message})
}

// addAt adds a violation at prefix/i, for an array's item.
func (c *eventCheck) addAt(prefix string, i int, message string) {
	c.add(prefix+"/"+strconv.Itoa(i), message)
}

// typeOf names v's JSON type as the generic validator does, noting a Go
// type it has no name for.
func (c *eventCheck) typeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float32, float64, int, int8, int32, int64, uint, uint8, uint32, uint64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	c.foreign = true
	return "?"
}

func expected(want, got string) string { return "expected " + want + ", but got " + got }

// str checks a string property with its length bounds in characters (-1
// for none) and returns the violation's message, "" for none. A failed
// type is the only violation the generic validator reports for a value.
func (c *eventCheck) str(v any, minLen, maxLen int) string {
	s, ok := v.(string)
	if !ok {
		return expected("string", c.typeOf(v))
	}
	// A string of n bytes has at most n characters, and at least one if
	// it has a byte: count only when the bytes do not settle it.
	if minLen > 0 && len(s) < minLen || maxLen >= 0 && len(s) > maxLen {
		n := utf8.RuneCountInString(s)
		if n < minLen {
			return fmt.Sprintf("length must be >= %d, but got %d", minLen, n)
		}
		if maxLen >= 0 && n > maxLen {
			return fmt.Sprintf("length must be <= %d, but got %d", maxLen, n)
		}
	}
	return ""
}

// check adds a violation with message at pointer when message is not "".
func (c *eventCheck) check(pointer, message string) {
	if message != "" {
		c.add(pointer, message)
	}
}

// enum checks a string against one of the enums above.
func (c *eventCheck) enum(v any, message string, allowed ...string) string {
	s, ok := v.(string)
	if !ok {
		return expected("string", c.typeOf(v))
	}
	for _, a := range allowed {
		if s == a {
			return ""
		}
	}
	return message
}

// dateTime checks a string of format date-time.
func (c *eventCheck) dateTime(v any) string {
	if _, ok := v.(string); !ok {
		return expected("string", c.typeOf(v))
	}
	if !isDateTime(v) {
		return notDateTime
	}
	return ""
}

// object returns v as an object, or adds the violation at pointer.
func (c *eventCheck) object(pointer string, v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		c.add(pointer, expected("object", c.typeOf(v)))
	}
	return m, ok
}

// array returns v as an array, or adds the violation at pointer; an array
// longer than maxItems (-1 for no bound) is a violation too, and its items
// are still judged.
func (c *eventCheck) array(pointer string, v any, maxItems int) ([]any, bool) {
	a, ok := v.([]any)
	if !ok {
		c.add(pointer, expected("array", c.typeOf(v)))
		return nil, false
	}
	if maxItems >= 0 && len(a) > maxItems {
		c.add(pointer, fmt.Sprintf("maximum %d items required, but found %d items", maxItems, len(a)))
	}
	return a, true
}

// required adds a violation for each of names m does not hold (a null
// value is held).
func (c *eventCheck) required(pointer string, m map[string]any, names ...string) {
	for _, name := range names {
		if _, ok := m[name]; !ok {
			c.add(pointer+"/"+name, requiredField)
		}
	}
}

// freeKey is the pointer the generic validator gives the value of a key
// its schema's additionalProperties judges. It names the value of the
// empty key by its object's pointer, as it joins no empty token to one.
func freeKey(pointer, name string) string {
	if name == "" {
		return pointer
	}
	return pointer + "/" + pointerEscaper.Replace(name)
}

// unknown adds the violation of a property the schema does not allow.
func (c *eventCheck) unknown(pointer, name string) {
	c.add(pointer+"/"+pointerEscaper.Replace(name), unknownField)
}

// stringArray checks tags, next_actions or open_questions: an array of
// non-empty strings.
func (c *eventCheck) stringArray(pointer string, v any, maxItems, maxLen int) {
	a, ok := c.array(pointer, v, maxItems)
	if !ok {
		return
	}
	for i, e := range a {
		if msg := c.str(e, 1, maxLen); msg != "" {
			c.addAt(pointer, i, msg)
		}
	}
}

// event checks the document's root, the Event schema itself.
func (c *eventCheck) event(v any) {
	m, ok := c.object("", v)
	if !ok {
		return
	}
	for k, e := range m {
		switch k {
		case "kind":
			c.check("/kind", c.enum(e, eventKinds, "user_input", "tool_call", "tool_output", "observation", "error", "outcome", "fact"))
		case "agent_id":
			c.check("/agent_id", c.str(e, 1, 200))
		case "thread_id":
			c.check("/thread_id", c.str(e, 1, 200))
		case "time":
			c.check("/time", c.dateTime(e))
		case "environment":
			if env, ok := c.object("/environment", e); ok {
				for name, x := range env {
					if msg := c.scalar(x); msg != "" {
						c.add(freeKey("/environment", name), msg)
					}
				}
			}
		case "text":
			c.check("/text", c.str(e, -1, -1))
		case "tool":
			c.tool(e)
		case "error":
			c.toolError(e)
		case "fact":
			c.fact(e)
		case "outcome":
			c.outcome(e)
		case "tags":
			c.stringArray("/tags", e, 64, 200)
		case "scope":
			c.check("/scope", c.str(e, -1, 200))
		case "idempotency_key":
			c.check("/idempotency_key", c.str(e, 1, 200))
		case "next_actions":
			c.stringArray("/next_actions", e, 32, 1000)
		case "open_questions":
			c.stringArray("/open_questions", e, 32, 1000)
		default:
			c.unknown("", k)
		}
	}
	c.required("", m, "kind", "agent_id", "thread_id")
	// The schema's allOf: what each kind must carry. Its if holds only for
	// a kind that is present and one of these strings.
	switch kind, _ := m["kind"].(string); kind {
	case "user_input", "observation":
		c.required("", m, "text")
	case "tool_call", "tool_output":
		c.required("", m, "tool")
	case "error":
		c.required("", m, "error")
	case "fact":
		c.required("", m, "fact")
	case "outcome":
		c.required("", m, "outcome")
	}
}

// scalar checks a value of environment: a string, number or boolean.
func (c *eventCheck) scalar(v any) string {
	switch t := c.typeOf(v); t {
	case "string", "number", "boolean":
		return ""
	default:
		return expected(scalarTypes, t)
	}
}

func (c *eventCheck) tool(v any) {
	m, ok := c.object("/tool", v)
	if !ok {
		return
	}
	for k, e := range m {
		switch k {
		case "name":
			c.check("/tool/name", c.str(e, 1, -1))
		case "call_id":
			c.check("/tool/call_id", c.str(e, -1, -1))
		case "arguments", "result":
			// Any JSON value: the generic validator looks no further.
		default:
			c.unknown("/tool", k)
		}
	}
	c.required("/tool", m, "name")
}

// toolError checks an error event's error.
func (c *eventCheck) toolError(v any) {
	m, ok := c.object("/error", v)
	if !ok {
		return
	}
	for k, e := range m {
		switch k {
		case "message":
			c.check("/error/message", c.str(e, 1, -1))
		case "code":
			c.check("/error/code", c.str(e, -1, -1))
		case "tool":
			c.check("/error/tool", c.str(e, -1, -1))
		default:
			c.unknown("/error", k)
		}
	}
	c.required("/error", m, "message")
}

func (c *eventCheck) outcome(v any) {
	m, ok := c.object("/outcome", v)
	if !ok {
		return
	}
	for k, e := range m {
		switch k {
		case "status":
			c.check("/outcome/status", c.enum(e, outcomeStatus, "success", "failure", "partial"))
		case "summary":
			c.check("/outcome/summary", c.str(e, -1, -1))
		default:
			c.unknown("/outcome", k)
		}
	}
	c.required("/outcome", m, "status")
}

func (c *eventCheck) fact(v any) {
	m, ok := c.object("/fact", v)
	if !ok {
		return
	}
	for k, e := range m {
		switch k {
		case "subject":
			c.check("/fact/subject", c.str(e, 1, -1))
		case "predicate":
			c.check("/fact/predicate", c.str(e, 1, -1))
		case "object":
			c.check("/fact/object", c.factValue(e))
		case "conditions":
			if conds, ok := c.object("/fact/conditions", e); ok {
				for name, x := range conds {
					if msg := c.factValue(x); msg != "" {
						c.add(freeKey("/fact/conditions", name), msg)
					}
				}
			}
		case "valid_from":
			c.check("/fact/valid_from", c.dateTime(e))
		case "valid_to":
			c.check("/fact/valid_to", c.dateTime(e))
		case "confidence":
			c.check("/fact/confidence", c.confidence(e))
		case "evidence":
			if a, ok := c.array("/fact/evidence", e, -1); ok {
				for i, s := range a {
					c.source(i, s)
				}
			}
		default:
			c.unknown("/fact", k)
		}
	}
	c.required("/fact", m, "subject", "predicate", "object")
}

// factValue checks a fact's object or a condition's value: any JSON value
// but null.
func (c *eventCheck) factValue(v any) string {
	if t := c.typeOf(v); t == "null" {
		return expected(factValueTypes, t)
	}
	return ""
}

var one = big.NewRat(1, 1)

// confidence checks a number in [0, 1] as the generic validator does,
// which reads it exactly (a big.Rat of its decimal form). A float64
// rounded to nearest keeps a number's side of 0 and of 1, both of which it
// holds exactly, so the float settles all but a number that rounds to 0
// or 1 without being an integer, or one out of a double's range; those
// are read exactly.
func (c *eventCheck) confidence(v any) string {
	t := c.typeOf(v)
	if t != "number" {
		return expected("number", t)
	}
	s, ok := v.(json.Number)
	if !ok {
		s = json.Number(fmt.Sprint(v))
	} else if isJSONNumber(string(s)) {
		// An integer of 15 digits or fewer is a double exactly.
		exact := len(s) <= 15 && !strings.ContainsAny(string(s), ".eE")
		if f, err := strconv.ParseFloat(string(s), 64); err == nil && (exact || f != 0 && f != 1) {
			return unitBound(f < 0, f > 1)
		}
	}
	r, ok := new(big.Rat).SetString(string(s))
	if !ok {
		c.foreign = true
		return ""
	}
	return unitBound(r.Sign() < 0, r.Cmp(one) > 0)
}

// unitBound is the violation of a number below 0 or above 1.
func unitBound(below, above bool) string {
	switch {
	case below:
		return "must be >= 0"
	case above:
		return "must be <= 1"
	}
	return ""
}

// isJSONNumber reports whether s is a number as JSON writes one (RFC 8259
// §6), which strconv.ParseFloat reads as big.Rat does; it also reads what
// JSON does not ("Inf", "0x1p-2").
func isJSONNumber(s string) bool {
	i := 0
	digits := func() bool {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	if !digits() {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	return i == len(s)
}

// source checks an item of a fact's evidence against Provenance's Source,
// which allows keys of its own.
func (c *eventCheck) source(i int, v any) {
	at := func(name string) string {
		p := "/fact/evidence/" + strconv.Itoa(i)
		if name != "" {
			p += "/" + name
		}
		return p
	}
	m, ok := v.(map[string]any)
	if !ok {
		c.add(at(""), expected("object", c.typeOf(v)))
		return
	}
	for k, e := range m {
		var msg string
		switch k {
		case "kind":
			msg = c.enum(e, sourceKinds, "event", "artifact", "tool_call", "observation", "outcome", "human", "reasoning", "record")
		case "ref", "hash":
			msg = c.str(e, -1, -1)
		case "timestamp":
			msg = c.dateTime(e)
		}
		if msg != "" {
			c.add(at(k), msg)
		}
	}
	for _, name := range [...]string{"kind", "ref"} {
		if _, ok := m[name]; !ok {
			c.add(at(name), requiredField)
		}
	}
}
