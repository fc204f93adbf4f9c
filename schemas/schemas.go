package schemas

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

//go:embed *.json
var files embed.FS

// idPrefix is the base of every schema's $id (substrate RFC §15A.2).
const idPrefix = "mem://schemas/"

// recordSchema is the short name of the schema of a complete record.
const recordSchema = "MemoryRecord"

// memoryTypes lists the memory types in the RFC's order (§15A.1).
var memoryTypes = []string{"episodic", "working", "semantic", "competence", "plan_graph"}

// payloadSchemas names the payload schema of each memory type (§15A.6–15A.10).
var payloadSchemas = map[string]string{
	"episodic":   "EpisodicPayload",
	"working":    "WorkingPayload",
	"semantic":   "SemanticPayload",
	"competence": "CompetencePayload",
	"plan_graph": "PlanGraphPayload",
}

// payloadBranches prefixes the keyword locations of errors from the branches
// of the record schema's payload oneOf. Those say why the payload is not each
// of the other four payloads; the record schema's if/then over type reports
// the errors that matter.
const payloadBranches = "/properties/payload/oneOf/"

// registry is the embedded schemas, compiled.
type registry struct {
	raw      map[string][]byte // file contents by short name
	names    []string          // short names, sorted
	record   *jsonschema.Schema
	payloads map[string]*jsonschema.Schema // by memory type
	all      map[string]*jsonschema.Schema // by short name
}

// load compiles the embedded schemas on first use. They ship with the binary,
// so one that does not compile is a programming error and panics.
var load = sync.OnceValue(func() *registry {
	r, err := compile()
	if err != nil {
		panic(fmt.Sprintf("schemas: %v", err))
	}
	return r
})

// NewCompiler returns a 2020-12 compiler, formats asserted, holding every
// *.json schema of fsys under its $id. each, when not nil, checks a schema
// (its path, $id and bytes) before it is added.
func NewCompiler(fsys fs.FS, each func(path, id string, b []byte) error) (*jsonschema.Compiler, error) {
	paths, err := fs.Glob(fsys, "*.json")
	if err != nil {
		return nil, fmt.Errorf("list schemas: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	for _, path := range paths {
		b, err := fs.ReadFile(fsys, path)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		var head struct {
			ID string `json:"$id"`
		}
		if err := json.Unmarshal(b, &head); err != nil {
			return nil, fmt.Errorf("parse %s: %w", path, err)
		}
		if each != nil {
			if err := each(path, head.ID, b); err != nil {
				return nil, err
			}
		}
		if err := c.AddResource(head.ID, bytes.NewReader(b)); err != nil {
			return nil, fmt.Errorf("add %s: %w", path, err)
		}
	}
	return c, nil
}

func compile() (*registry, error) {
	r := &registry{raw: make(map[string][]byte), payloads: make(map[string]*jsonschema.Schema)}
	c, err := NewCompiler(files, func(path, id string, b []byte) error {
		name, ok := strings.CutPrefix(id, idPrefix)
		if !ok || name == "" || strings.Contains(name, "/") {
			return fmt.Errorf("%s: $id %q is not %s<Name>", path, id, idPrefix)
		}
		if _, dup := r.raw[name]; dup {
			return fmt.Errorf("%s: duplicate $id %q", path, id)
		}
		r.raw[name] = b
		r.names = append(r.names, name)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(r.names)

	compiled := make(map[string]*jsonschema.Schema, len(r.names))
	for _, name := range r.names {
		s, err := c.Compile(idPrefix + name)
		if err != nil {
			return nil, fmt.Errorf("compile %s: %w", name, err)
		}
		compiled[name] = s
	}
	r.all = compiled
	if r.record = compiled[recordSchema]; r.record == nil {
		return nil, fmt.Errorf("no %s schema", recordSchema)
	}
	for t, name := range payloadSchemas {
		if r.payloads[t] = compiled[name]; r.payloads[t] == nil {
			return nil, fmt.Errorf("no %s schema for type %s", name, t)
		}
	}
	return r, nil
}

// Raw returns the embedded schema file whose $id is mem://schemas/<name>,
// e.g. Raw("MemoryRecord").
func Raw(name string) ([]byte, bool) {
	b, ok := load().raw[name]
	return bytes.Clone(b), ok
}

// Names lists the short names of the embedded schemas, sorted; each is
// accepted by [Raw].
func Names() []string {
	return slices.Clone(load().names)
}

// ValidateRecord checks one complete MemoryRecord document given as JSON bytes.
// It returns nil, a [*ValidationError], or an error from the validator itself.
func ValidateRecord(doc []byte) error {
	r := load()
	v, err := decode(doc)
	if err != nil {
		return malformed(err)
	}
	err = r.record.Validate(v)
	if err == nil {
		return nil
	}
	all, err := leaves(err)
	if err != nil {
		return fmt.Errorf("validate record: %w", err)
	}
	vs := make([]Violation, 0, len(all))
	for _, e := range all {
		if !strings.HasPrefix(e.KeywordLocation, payloadBranches) {
			vs = append(vs, violations(e)...)
		}
	}
	if m, ok := v.(map[string]any); ok {
		if m["payload"] == nil && !slices.ContainsFunc(vs, func(x Violation) bool { return strings.HasPrefix(x.Pointer, "/payload") }) {
			// No type to judge a payload by, and no payload: say both are
			// missing, not only the first.
			vs = append(vs, Violation{Pointer: "/payload", Message: "is required"})
		}
		if t, ok := m["type"].(string); ok {
			if mv, ok := kindMismatch(t, m["payload"]); ok {
				// The payload was judged against another type's schema: every
				// other error under it follows from the wrong kind.
				vs = slices.DeleteFunc(vs, func(x Violation) bool {
					return x.Pointer == "/payload" || strings.HasPrefix(x.Pointer, "/payload/")
				})
				mv.Pointer = "/payload" + mv.Pointer
				vs = append(vs, mv)
			}
		}
	}
	if len(vs) == 0 {
		// Only the oneOf failed, which the shipped schemas rule out; never
		// report an invalid record without saying why.
		for _, e := range all {
			vs = append(vs, violations(e)...)
		}
	}
	return newValidationError(vs)
}

// ValidatePayload checks a payload against the schema of memory type t
// ("semantic", ...). Pointers are relative to the payload. An unknown t is a
// violation at the root.
func ValidatePayload(t string, payload []byte) error {
	s, ok := load().payloads[t]
	if !ok {
		return newValidationError([]Violation{{
			Message: fmt.Sprintf("unknown memory type %q: must be one of %s", t, quoteAll(memoryTypes)),
		}})
	}
	v, err := decode(payload)
	if err != nil {
		return malformed(err)
	}
	if mv, ok := kindMismatch(t, v); ok {
		return newValidationError([]Violation{mv})
	}
	err = s.Validate(v)
	if err == nil {
		return nil
	}
	all, err := leaves(err)
	if err != nil {
		return fmt.Errorf("validate payload: %w", err)
	}
	var vs []Violation
	for _, e := range all {
		vs = append(vs, violations(e)...)
	}
	return newValidationError(vs)
}

// Validate checks a JSON document against the embedded schema whose $id is
// mem://schemas/<name>, such as "Event", reporting every leaf violation.
func Validate(name string, doc []byte) error {
	s, ok := load().all[name]
	if !ok {
		return fmt.Errorf("no schema named %q", name)
	}
	v, err := decode(doc)
	if err != nil {
		return malformed(err)
	}
	return validateValue(name, s, v)
}

// ValidateValue is [Validate] for a document already decoded as [Decode]
// decodes one into an any (numbers as json.Number): a caller that holds
// the decoded document does not parse its encoding again.
func ValidateValue(name string, v any) error {
	s, ok := load().all[name]
	if !ok {
		return fmt.Errorf("no schema named %q", name)
	}
	return validateValue(name, s, v)
}

func validateValue(name string, s *jsonschema.Schema, v any) error {
	err := s.Validate(v)
	if err == nil {
		return nil
	}
	all, err := leaves(err)
	if err != nil {
		return fmt.Errorf("validate %s: %w", name, err)
	}
	var vs []Violation
	for _, e := range all {
		vs = append(vs, violations(e)...)
	}
	return newValidationError(vs)
}

// decode parses one JSON value the way the validator expects it (see
// [Decode]): numbers as json.Number, so that integers and bounds compare
// exactly.
func decode(doc []byte) (any, error) {
	var v any
	if err := Decode(doc, &v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty document")
		}
		return nil, err
	}
	return v, nil
}

func malformed(err error) *ValidationError {
	return newValidationError([]Violation{{Message: "malformed JSON: " + err.Error()}})
}

// leaves returns the errors of err's tree that have no causes: the failed
// constraints themselves, not the combinators ($ref, allOf, oneOf, if/then)
// that led to them.
func leaves(err error) ([]*jsonschema.ValidationError, error) {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, err
	}
	var out []*jsonschema.ValidationError
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, e)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return out, nil
}

// violations turns a failed constraint into violations whose messages
// quote nothing from the document: a property's name or a value may be a
// secret, and problem responses carry these messages (SR-1). The
// validator's messages that quote one are rewritten; an unknown property
// becomes a violation at its own pointer.
func violations(e *jsonschema.ValidationError) []Violation {
	at := jsonPointer(e.InstanceLocation)
	switch e.KeywordLocation[strings.LastIndexByte(e.KeywordLocation, '/')+1:] {
	case "additionalProperties":
		names, ok := unknownProperties(e.Message)
		if !ok {
			return []Violation{{Pointer: at, Message: "has properties that are not allowed"}}
		}
		vs := make([]Violation, len(names))
		for i, name := range names {
			vs[i] = Violation{Pointer: at + "/" + pointerEscaper.Replace(name), Message: "is not a known property"}
		}
		return vs
	case "required":
		// "missing properties: 'a', 'b'": a violation for each, at its own
		// pointer, so that a client sees every field it left out.
		list, ok := strings.CutPrefix(e.Message, "missing properties: ")
		names, ok2 := quotedNames(list)
		if !ok || !ok2 {
			return []Violation{{Pointer: at, Message: e.Message}}
		}
		vs := make([]Violation, len(names))
		for i, name := range names {
			vs[i] = Violation{Pointer: at + "/" + pointerEscaper.Replace(name), Message: "is required"}
		}
		return vs
	case "format":
		// "'<value>' is not valid '<format>'"
		if i := strings.LastIndex(e.Message, " is not valid "); i >= 0 {
			return []Violation{{Pointer: at, Message: "is not a valid " + strings.Trim(e.Message[i+len(" is not valid "):], "'")}}
		}
		return []Violation{{Pointer: at, Message: "is not valid in this format"}}
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		// "must be <= 1 but found 1.5"
		bound, _, _ := strings.Cut(e.Message, " but found ")
		return []Violation{{Pointer: at, Message: bound}}
	case "multipleOf":
		// "<value> not multipleOf <n>"
		_, n, _ := strings.Cut(e.Message, " not multipleOf ")
		return []Violation{{Pointer: at, Message: "must be a multiple of " + n}}
	}
	return []Violation{{Pointer: at, Message: e.Message}}
}

// jsonPointer turns the validator's instance location, a JSON pointer in
// its URI fragment form (RFC 6901 §6: each token percent-encoded), into
// the plain pointer into the document that a problem's errors name: the
// key " os" is /conditions/ os, not /conditions/%20os.
func jsonPointer(loc string) string {
	if !strings.Contains(loc, "%") {
		return loc
	}
	tokens := strings.Split(loc, "/")
	for i, t := range tokens {
		if u, err := url.PathUnescape(t); err == nil {
			tokens[i] = u
		}
	}
	return strings.Join(tokens, "/")
}

// pointerEscaper escapes a property name as a JSON pointer segment (RFC 6901).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// unknownProperties parses the names out of the validator's message
// "additionalProperties 'a', 'b' not allowed", in which each name is quoted
// as Go's %q would with \" unescaped and ' escaped. It reports false for a
// message of another shape.
func unknownProperties(msg string) ([]string, bool) {
	list, ok := strings.CutPrefix(msg, "additionalProperties ")
	if !ok {
		return nil, false
	}
	if list, ok = strings.CutSuffix(list, " not allowed"); !ok {
		return nil, false
	}
	names, ok := quotedNames(list)
	slices.Sort(names)
	return names, ok
}

// quotedNames parses a list of property names "'a', 'b'" as the validator
// writes it, in its order.
func quotedNames(list string) ([]string, bool) {
	var names []string
	for list != "" {
		if list[0] != '\'' {
			return nil, false
		}
		// A name ends at the first quote no backslash escapes.
		end := 1
		for ; end < len(list) && list[end] != '\''; end++ {
			if list[end] == '\\' {
				end++
			}
		}
		if end >= len(list) {
			return nil, false
		}
		name, err := unquoteName(list[1:end])
		if err != nil {
			return nil, false
		}
		names = append(names, name)
		if list = list[end+1:]; list != "" {
			var ok bool
			if list, ok = strings.CutPrefix(list, ", "); !ok {
				return nil, false
			}
		}
	}
	return names, len(names) > 0
}

// unquoteName undoes the validator's quoting of a property name.
func unquoteName(q string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		switch c := q[i]; {
		case c == '\\' && i+1 < len(q):
			if q[i+1] != '\'' {
				b.WriteByte(c)
			}
			b.WriteByte(q[i+1])
			i++
		case c == '"':
			b.WriteString(`\"`)
		default:
			b.WriteByte(c)
		}
	}
	return strconv.Unquote(`"` + b.String() + `"`)
}

// kindMismatch reports a payload whose kind names a known memory type other
// than t, as a violation at /kind. Against t's schema such a payload fails on
// its kind and on every field the two payloads do not share; the kind is the
// one problem.
func kindMismatch(t string, payload any) (Violation, bool) {
	if _, ok := payloadSchemas[t]; !ok {
		return Violation{}, false
	}
	m, ok := payload.(map[string]any)
	if !ok {
		return Violation{}, false
	}
	kind, ok := m["kind"].(string)
	if _, known := payloadSchemas[kind]; !ok || !known || kind == t {
		return Violation{}, false
	}
	return Violation{
		Pointer: "/kind",
		Message: fmt.Sprintf("payload kind %q does not match type %q", kind, t),
	}, true
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
