package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/memory"
)

// engram records pin, unpin, reclassify and annotate curate a record
// (write-path RFC §12.7.4), each kept in its audit trail.
func TestRecordsCuration(t *testing.T) {
	t.Parallel()
	e := setup(t)
	id := e.create(fact("go", nil))

	var rec memory.Record
	decode(t, e.ok("records", "pin", id, "--deletion-policy", "never", "--rationale", "keep it"), &rec)
	require.True(t, rec.Lifecycle.Pinned)
	require.Equal(t, memory.Never, rec.Lifecycle.DeletionPolicy)
	decode(t, e.ok("records", "unpin", id), &rec)
	require.False(t, rec.Lifecycle.Pinned)
	decode(t, e.ok("records", "reclassify", id, "--sensitivity", "high"), &rec)
	require.Equal(t, memory.High, rec.Sensitivity)
	e.ok("records", "annotate", id, "--note", "checked with the user")
	audit := e.ok("records", "audit", id)
	for _, action := range []string{"pin", "unpin", "reclassify", "annotate", "checked with the user"} {
		require.Contains(t, audit, action)
	}

	r := e.run("", "records", "reclassify", id)
	require.Error(t, r.err)
	require.Contains(t, r.stderr, "--sensitivity S")
	r = e.run("", "records", "annotate", id)
	require.Error(t, r.err)
	require.Contains(t, r.stderr, "--note TEXT")
}
