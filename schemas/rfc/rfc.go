// Package rfc holds the substrate RFC's canonical JSON Schemas (§15A.2–
// §15A.10) as the RFC writes them, transcribed without a change, and
// validates a record against them: the proof that a record engram exports
// in the RFC's form ([memory.Record.RFC], GET /v1/records/{id}?form=rfc)
// is one the RFC's own schemas accept (§4: "Conforming implementations MUST
// implement the canonical schemas defined in Section 15A ... or provide a
// bijective, lossless mapping ... to those schemas").
//
// engram validates what it stores against its own schemas (package
// schemas), which extend these; these stay the RFC's, so that a change to
// engram's cannot hide a departure from the RFC.
package rfc

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/engram-dev/engram/schemas"
)

//go:embed *.json
var files embed.FS

// recordID is the $id of the RFC's MemoryRecord schema (§15A.2).
const recordID = "mem://schemas/MemoryRecord"

// record is the RFC's MemoryRecord schema, compiled on first use. The
// schemas ship with the binary: one that does not compile is a programming
// error, and panics.
var record = sync.OnceValue(func() *jsonschema.Schema {
	s, err := compile()
	if err != nil {
		panic(fmt.Sprintf("schemas/rfc: %v", err))
	}
	return s
})

func compile() (*jsonschema.Schema, error) {
	c, err := schemas.NewCompiler(files, nil)
	if err != nil {
		return nil, err
	}
	return c.Compile(recordID)
}

// ValidateRecord checks one MemoryRecord document against the RFC's
// schemas. It returns nil or the validator's error, which lists every
// failed constraint with its place in the document.
func ValidateRecord(doc []byte) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("decode record: %w", err)
	}
	if err := record().Validate(v); err != nil {
		return fmt.Errorf("%#v", err)
	}
	return nil
}
