package openwop

import (
	"bytes"
	"embed"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// The wire schemas of OpenWOP RFC 0004 the adapter uses, copied verbatim
// from the OpenWOP spec's schemas/ (draft 2020-12), as engram's spec bundle
// carries them. The other copies in schema/ (the discovery document, the
// error envelope) are for the tests.
//
//go:embed schema/memory-entry.schema.json schema/memory-list-options.schema.json
var schemaFiles embed.FS

// Schema $ids.
const (
	EntrySchemaID       = "https://openwop.dev/spec/v1/memory-entry.schema.json"
	ListOptionsSchemaID = "https://openwop.dev/spec/v1/memory-list-options.schema.json"
)

// EntrySchema returns memory-entry.schema.json as the spec publishes it.
func EntrySchema() []byte {
	b, err := schemaFiles.ReadFile("schema/memory-entry.schema.json")
	if err != nil {
		panic(fmt.Sprintf("openwop: %v", err))
	}
	return b
}

var listOptionsSchema = sync.OnceValue(func() *jsonschema.Schema {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	b, err := schemaFiles.ReadFile("schema/memory-list-options.schema.json")
	if err == nil {
		err = c.AddResource(ListOptionsSchemaID, bytes.NewReader(b))
	}
	if err != nil {
		panic(fmt.Sprintf("openwop: %v", err))
	}
	return c.MustCompile(ListOptionsSchemaID)
})

// listOptions is a MemoryListOptions (memory-list-options.schema.json).
type listOptions struct {
	Limit *int    `json:"limit,omitempty"`
	Tag   *string `json:"tag,omitempty"`
}

// validate checks o against the spec's schema, naming the first field at
// fault.
func (o listOptions) validate() *Error {
	doc := map[string]any{}
	if o.Limit != nil {
		doc["limit"] = *o.Limit
	}
	if o.Tag != nil {
		doc["tag"] = *o.Tag
	}
	err := listOptionsSchema().Validate(doc)
	if err == nil {
		return nil
	}
	field := "limit"
	if ve, ok := err.(*jsonschema.ValidationError); ok {
		for _, c := range ve.BasicOutput().Errors {
			if c.InstanceLocation == "/tag" {
				field = "tag"
			}
		}
	}
	if field == "tag" {
		return invalid("tag", "must be 1 to 256 characters (MemoryListOptions.tag)")
	}
	return invalid("limit", "must be a whole number, 0 or more (MemoryListOptions.limit)")
}
