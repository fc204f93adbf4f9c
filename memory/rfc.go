package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// RFCExtensions is the member of a record in the RFC's form that holds
// engram's extensions: each value engram keeps where the RFC's schemas
// (substrate RFC §15A.2–§15A.10) have none, or a value other than the
// RFC's, keyed by its JSON pointer (RFC 6901) in engram's form. The RFC's
// schemas leave a record open to members they do not name, and "x-" names
// an extension as JSON Schema's own vocabulary does.
const RFCExtensions = "x-engram"

// rfcSourceKinds maps the kinds of evidence engram cites beyond the RFC's
// enum (§15A.4: event, artifact, tool_call, observation, outcome) onto it:
// another memory record (write-path RFC §12.4.3, ref record://<id>) is a
// stored artifact of the host system; a person's statement (the struct
// variant's human, §15A.8) and an agent's own reasoning are observations.
// The kind engram keeps goes in [RFCExtensions].
var rfcSourceKinds = map[string]string{"record": "artifact", "human": "observation", "reasoning": "observation"}

// rfcMoved are the members engram adds at each place of a record that
// neither of the RFC's two appendices (§15A JSON Schemas, §15A struct
// variant) names: they move into [RFCExtensions]. "[]" stands for every
// element of an array; the payload's are by memory type.
var rfcMoved = map[string][]string{
	"":                     {"status", "version", "visibility", "agent_id", "thread_id", "flags"},
	"/lifecycle":           {"expires_at"},
	"/lifecycle/decay":     {"points"},
	"/payload/triggers/[]": {"template"},
	"/payload/performance": {"recent"},
}

// rfcMovedEpisodic are the members of an episodic payload that move: what
// compression keeps of a compressed episode (§5).
var rfcMovedEpisodic = []string{"summary", "compressed_at"}

// RFC returns r in the RFC's canonical form (substrate RFC §4: "a
// bijective, lossless mapping from their internal representation to those
// schemas"): the record as engram writes it, less engram's own members and
// with the RFC's source kinds, and under [RFCExtensions] everything that
// takes back to r exactly ([FromRFC]). The RFC's form of a record passes the
// RFC's schemas (package schemas/rfc) unchanged.
func (r Record) RFC() ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode record: %w", err)
	}
	var doc map[string]any
	if err := decodeExact(b, &doc); err != nil {
		return nil, fmt.Errorf("decode record: %w", err)
	}
	ext := map[string]any{}
	move := func(at string, obj map[string]any, names ...string) {
		for _, name := range names {
			if v, ok := obj[name]; ok {
				ext[at+"/"+escapePointer(name)] = v
				delete(obj, name)
			}
		}
	}
	mapKinds := func(at string, sources any) {
		list, _ := sources.([]any)
		for i, s := range list {
			src, _ := s.(map[string]any)
			kind, _ := src["kind"].(string)
			if rfc, ok := rfcSourceKinds[kind]; ok {
				ext[at+"/"+strconv.Itoa(i)+"/kind"] = kind
				src["kind"] = rfc
			}
		}
	}
	for path, names := range rfcMoved {
		for _, p := range expand(doc, "", strings.FieldsFunc(path, func(r rune) bool { return r == '/' })) {
			move(p.at, p.obj, names...)
		}
	}
	if prov, ok := doc["provenance"].(map[string]any); ok {
		mapKinds("/provenance/sources", prov["sources"])
	}
	if payload, ok := doc["payload"].(map[string]any); ok {
		switch r.Type {
		case Episodic:
			move("/payload", payload, rfcMovedEpisodic...)
		case Semantic:
			mapKinds("/payload/evidence", payload["evidence"])
		}
	}
	doc[RFCExtensions] = ext
	return json.Marshal(doc)
}

// FromRFC returns the record in engram's form that doc, a record in the
// RFC's form, stands for: each value of its [RFCExtensions] put back at its
// pointer. It is the inverse of [Record.RFC]; a record that was never
// engram's (no [RFCExtensions]) is taken as it is.
func FromRFC(doc []byte) ([]byte, error) {
	var v any
	if err := decodeExact(doc, &v); err != nil {
		return nil, err
	}
	rec, isRecord := v.(map[string]any)
	if !isRecord {
		return nil, &RFCError{Pointer: "", Message: "must be an object: a MemoryRecord (§15A.2)"}
	}
	raw, ok := rec[RFCExtensions]
	delete(rec, RFCExtensions)
	ext, isObject := raw.(map[string]any)
	if ok && !isObject {
		return nil, &RFCError{Pointer: "/" + RFCExtensions, Message: "must be an object of JSON pointers"}
	}
	// Shorter pointers first: a member put back before any inside it.
	for _, at := range slices.SortedFunc(maps.Keys(ext), func(a, b string) int {
		return strings.Count(a, "/") - strings.Count(b, "/")
	}) {
		if err := setPointer(rec, at, ext[at]); err != nil {
			return nil, &RFCError{Pointer: "/" + RFCExtensions + "/" + escapePointer(at), Message: err.Error()}
		}
	}
	return json.Marshal(rec)
}

// RFCError is a record in the RFC's form whose extensions cannot be put
// back: Pointer is where in the document.
type RFCError struct {
	Pointer string
	Message string
}

func (e *RFCError) Error() string { return e.Pointer + ": " + e.Message }

// place is an object of a document and its JSON pointer.
type place struct {
	at  string
	obj map[string]any
}

// expand finds the objects of obj (at pointer at) that a path of member
// names leads to, "[]" after an array's name standing for each of its
// elements.
func expand(obj map[string]any, at string, steps []string) []place {
	if len(steps) == 0 {
		return []place{{at: at, obj: obj}}
	}
	next := at + "/" + escapePointer(steps[0])
	switch v := obj[steps[0]].(type) {
	case map[string]any:
		return expand(v, next, steps[1:])
	case []any:
		if len(steps) < 2 || steps[1] != "[]" {
			return nil
		}
		var out []place
		for i, e := range v {
			if m, ok := e.(map[string]any); ok {
				out = append(out, expand(m, next+"/"+strconv.Itoa(i), steps[2:])...)
			}
		}
		return out
	}
	return nil
}

// setPointer sets the member or element a JSON pointer names in doc; its
// parent must exist.
func setPointer(doc map[string]any, pointer string, v any) error {
	if !strings.HasPrefix(pointer, "/") {
		return errors.New("is not a JSON pointer")
	}
	tokens := strings.Split(pointer[1:], "/")
	var cur any = doc
	for i, tok := range tokens {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		last := i == len(tokens)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				c[tok] = v
				return nil
			}
			cur = c[tok]
		case []any:
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 || n >= len(c) {
				return errors.New("names no element of the record")
			}
			if last {
				c[n] = v
				return nil
			}
			cur = c[n]
		default:
			return errors.New("names no member of the record")
		}
	}
	return nil
}

// escapePointer escapes a member name as a JSON pointer token (RFC 6901).
func escapePointer(name string) string {
	return strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
}

// decodeExact decodes one JSON value keeping its numbers as written.
func decodeExact(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}
