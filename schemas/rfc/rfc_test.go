package rfc_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/schemas/rfc"
)

// The RFC's own example (§15A.12) passes; what its enums and bounds leave
// out does not.
func TestValidateRecord(t *testing.T) {
	t.Parallel()
	example := `{
	  "id": "9a2b", "type": "semantic", "sensitivity": "low", "confidence": 0.9, "salience": 0.8,
	  "created_at": "2026-01-28T00:00:00Z", "updated_at": "2026-01-28T00:00:00Z",
	  "lifecycle": {"decay": {"curve": "exponential", "half_life_seconds": 7776000}, "last_reinforced_at": "2026-01-28T00:00:00Z"},
	  "provenance": {"sources": [{"kind": "event", "ref": "evt://..."}]},
	  "payload": {"kind": "semantic", "subject": "user", "predicate": "prefers_backend_language", "object": "go",
	    "validity": {"mode": "conditional", "conditions": {"project_kind": "backend_service"}}, "revision": {"status": "active"}}}`
	require.NoError(t, rfc.ValidateRecord([]byte(example)))

	for name, bad := range map[string]string{
		"source kind":   `"kind": "event", "ref": "evt://..."` + "|" + `"kind": "record", "ref": "record://x"`,
		"decay curve":   `"curve": "exponential"` + "|" + `"curve": "cubic"`,
		"validity mode": `"mode": "conditional"` + "|" + `"mode": "sometimes"`,
		"type":          `"type": "semantic"` + "|" + `"type": "fact"`,
	} {
		old, repl, _ := strings.Cut(bad, "|")
		doc := strings.Replace(example, old, repl, 1)
		require.NotEqual(t, example, doc, name)
		require.Error(t, rfc.ValidateRecord([]byte(doc)), name)
	}
}
