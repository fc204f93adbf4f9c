package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// engram records rollback undoes a supersession; quarantine holds a record
// and flags what derives from it, which records list --flag finds; release
// ends it. Quarantine and release refuse to run without a rationale.
func TestRollbackQuarantineRelease(t *testing.T) {
	t.Parallel()
	e := setup(t)

	old := e.create(fact("go", nil))
	var sup struct{ Record struct{ ID string } }
	decode(t, e.ok("records", "supersede", old, "-f", e.file("next.json", fact("cobol", nil))), &sup)
	var rb struct {
		RolledBack struct {
			ID, Status string
		} `json:"rolled_back"`
		Reactivated []struct {
			ID, Status string
			Version    int
		}
	}
	decode(t, e.ok("records", "rollback", sup.Record.ID, "--version", "1", "--rationale", "a bad write"), &rb)
	require.Equal(t, "retracted", rb.RolledBack.Status)
	require.Len(t, rb.Reactivated, 1)
	require.Equal(t, old, rb.Reactivated[0].ID)
	require.Equal(t, "active", rb.Reactivated[0].Status)
	require.Contains(t, rows(t, e.ok("records", "audit", old))[2], " reactivate ")

	derived := fact("go", map[string]any{"os": "linux"})
	derived["relations"] = []any{map[string]any{"predicate": "derived_from", "target_id": old}}
	d := e.create(derived)

	r := e.run("", "records", "quarantine", old)
	require.Error(t, r.err)
	require.Equal(t, 2, exitCode(r.err))
	var q struct {
		Record  struct{ Status string }
		Flagged []string
	}
	decode(t, e.ok("records", "quarantine", old, "--rationale", "agent-7 poisons memory"), &q)
	require.Equal(t, "quarantined", q.Record.Status)
	require.Equal(t, []string{d}, q.Flagged)
	flagged := rows(t, e.ok("records", "list", "--flag", "derived_from_quarantined"))
	require.Len(t, flagged, 1)
	require.Contains(t, flagged[0], d)

	var rel struct {
		Record    struct{ Status string }
		Unflagged []string
	}
	decode(t, e.ok("records", "release", old, "--rationale", "sound after all"), &rel)
	require.Equal(t, "active", rel.Record.Status)
	require.Equal(t, []string{d}, rel.Unflagged)
	require.Empty(t, rows(t, e.ok("records", "list", "--flag", "derived_from_quarantined")))

	// Restore brings back what rollback retracted, once the fact whose
	// place it would take is out of the way.
	refused := e.run("", "records", "restore", sup.Record.ID, "--rationale", "it was right after all")
	require.Error(t, refused.err)
	require.Contains(t, refused.stderr, "an active fact")
	e.ok("records", "retract", old)
	var back struct{ ID, Status string }
	decode(t, e.ok("records", "restore", sup.Record.ID, "--rationale", "it was right after all"), &back)
	require.Equal(t, sup.Record.ID, back.ID)
	require.Equal(t, "active", back.Status)
}
