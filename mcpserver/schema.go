package mcpserver

import (
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// Value is any JSON value, passed through as it is: a tool call's
// arguments or result.
type Value any

// Object is a JSON object of the API's, passed through as it is: a
// record's payload, provenance or lifecycle.
type Object any

// Objects is a JSON array of objects of the API's, passed through as it
// is: a record's relations or flags, an audit entry's evidence.
type Objects any

// Scalars are named strings, numbers or booleans: the conditions under
// which a fact holds, a task's or an event's context.
type Scalars map[string]any

// anyOf is a schema of a value of one of types, each a branch with one
// type: a client that maps a schema onto a dialect with a single type per
// schema drops a type array (["string", "number"]) or refuses the tool.
func anyOf(types ...string) *jsonschema.Schema {
	s := &jsonschema.Schema{}
	for _, t := range types {
		s.AnyOf = append(s.AnyOf, &jsonschema.Schema{Type: t})
	}
	return s
}

// typeSchemas are the schemas of the types above. Inferred, an interface
// is the schema true, which clients refuse where a schema object is
// expected (the TypeScript SDK does, in every tool list), and a map of
// them has no type for its values.
var typeSchemas = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[Value]():   anyOf("string", "number", "boolean", "object", "array", "null"),
	reflect.TypeFor[Object]():  {Type: "object"},
	reflect.TypeFor[Objects](): {Type: "array", Items: &jsonschema.Schema{Type: "object"}},
	reflect.TypeFor[Scalars](): {Type: "object", AdditionalProperties: anyOf("string", "number", "boolean")},
}

// schemaFor is the schema of T, changed by edit (nil changes nothing):
// the derived schema with the enums and bounds struct tags cannot state,
// every subschema an object with one type. It is made once per process,
// so that a [mcp.SchemaCache], which caches by pointer, holds it once.
func schemaFor[T any](edit func(props map[string]*jsonschema.Schema)) *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: typeSchemas})
	if err != nil {
		panic(fmt.Sprintf("mcpserver: schema of %T: %v", *new(T), err))
	}
	single(s)
	if edit != nil {
		edit(s.Properties)
	}
	return s
}

// single gives each subschema of s inferred as nullable (a slice, a
// pointer: ["null", "array"]) its one type. A nil slice or pointer is
// left out (omitempty) or sent empty, never as null, and a client that
// sends null for an optional field may leave it out instead.
func single(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && s.Types[0] == "null" {
		s.Type, s.Types = s.Types[1], nil
	}
	for _, p := range s.Properties {
		single(p)
	}
	single(s.Items)
	single(s.AdditionalProperties)
	for _, b := range s.AnyOf {
		single(b)
	}
}

func enum(values ...string) []any {
	out := make([]any, len(values))
	for i, v := range values {
		out[i] = v
	}
	return out
}
