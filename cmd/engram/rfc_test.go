package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/schemas/rfc"
)

// records get --form rfc prints a record in the substrate RFC's canonical
// form, which the RFC's schemas accept (§15A); records create --form rfc
// takes it back (issue 28, finding 6).
func TestRecordsInTheRFCForm(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rec := fact("go", nil)
	rec["provenance"] = map[string]any{"sources": []any{map[string]any{"kind": "human", "ref": "chat://1"}}}
	id := e.create(rec)
	out := e.ok("records", "get", id, "--form", "rfc")
	require.NoError(t, rfc.ValidateRecord([]byte(out)), out)
	require.Contains(t, out, `"x-engram": {`)
	require.Contains(t, out, `"/provenance/sources/0/kind": "human"`)

	// Taken back: the same id is a record already, so the write path
	// absorbs it as the duplicate it is.
	r := e.run(out, "records", "create", "-f", "-", "--form", "rfc")
	require.NoError(t, r.err, r.stderr)
	require.Contains(t, r.stdout, id)

	r = e.run("", "records", "get", id, "--form", "xml")
	require.Error(t, r.err)
	require.Contains(t, r.stderr, "form")
}
