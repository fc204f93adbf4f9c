package schemas_test

import (
	"errors"
	"fmt"

	"github.com/engram-dev/engram/schemas"
)

func ExampleValidateRecord() {
	doc := []byte(`{
		"id": "0190a7b4-7c1e-7b3a-9d2f-3c4e5f6a7b8c",
		"type": "semantic",
		"sensitivity": "low",
		"confidence": 1.5,
		"salience": 0.8,
		"created_at": "2026-01-28T00:00:00Z",
		"updated_at": "2026-01-28T00:00:00Z",
		"lifecycle": {"decay": {"curve": "exponential", "half_life_seconds": 7776000}, "last_reinforced_at": "2026-01-28T00:00:00Z"},
		"provenance": {"sources": [{"kind": "event", "ref": "evt://1"}]},
		"payload": {
			"kind": "semantic",
			"subject": "user",
			"predicate": "prefers_backend_language",
			"object": "go",
			"validity": {"mode": "conditional", "conditions": {"project_kind": null}}
		}
	}`)

	err := schemas.ValidateRecord(doc)
	var verr *schemas.ValidationError
	if errors.As(err, &verr) {
		for _, v := range verr.Violations {
			fmt.Printf("%s: %s\n", v.Pointer, v.Message)
		}
	}
	// Output:
	// /confidence: must be <= 1
	// /payload/validity/conditions/project_kind: expected string or number or boolean or object or array, but got null
}
