package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

// A reviewer works through the queue from the command line: lists it,
// reads a review, approves one and rejects another with a reason.
func TestReviewsCommands(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewSchema(t).Pool
	require.NoError(t, store.EnsureTenant(t.Context(), pool, "acme"))
	w := revise.New(pool, revise.Config{})
	srv := httptest.NewServer(server.New(server.Config{DB: pool, Writer: w, Keys: []server.Key{{Tenant: "acme", Name: "test", Secret: testKey, Role: server.RoleCurator}}}))
	t.Cleanup(srv.Close)
	e := &env{t: t, url: srv.URL, environ: map[string]string{"ENGRAM_URL": srv.URL, "ENGRAM_API_KEY": testKey}, dir: t.TempDir()}

	var ids []string
	for _, object := range []string{"helix", "nano"} {
		p, _ := json.Marshal(map[string]any{"kind": "semantic", "subject": "user", "predicate": "prefers_editor",
			"object": object, "validity": map[string]any{"mode": "global"}})
		_, rv, err := w.SubmitForReview(context.Background(), "acme", memory.Record{Type: memory.Semantic, Confidence: 0.6, Payload: p},
			revise.Change{Actor: "agent-7"}, revise.ReviewRequest{Tier: revise.TierAsync, Risk: 0.45, Reasons: []string{"weak evidence"}})
		require.NoError(t, err)
		ids = append(ids, rv.ID.String())
	}

	table := e.ok("reviews", "list")
	lines := rows(t, table)
	require.Len(t, lines, 2)
	require.True(t, strings.HasPrefix(table, "REVIEW"), table)
	require.Contains(t, lines[0], ids[0])
	require.Contains(t, lines[0], "pending")
	require.Contains(t, lines[0], "0.45")
	require.Contains(t, lines[0], "user prefers_editor = helix")
	require.Contains(t, lines[0], "weak evidence")
	var page api.ReviewPage
	decode(t, e.ok("reviews", "list", "--json"), &page)
	require.Len(t, page.Reviews, 2)
	require.Len(t, rows(t, e.ok("reviews", "list", "--limit", "1", "--all")), 2)

	var got api.Review
	decode(t, e.ok("reviews", "get", ids[0]), &got)
	require.Equal(t, memory.Draft, got.Record.Status)

	r := e.run("", "reviews", "approve", ids[0])
	require.Error(t, r.err)
	require.Equal(t, 2, exitCode(r.err), "a decision needs a justification")
	r = e.run("", "reviews", "reject", ids[1], "--justification", "no")
	require.Equal(t, 2, exitCode(r.err), "a rejection needs a reason")

	// A decision prints a few lines, like the other commands' tables;
	// --json the whole review.
	out := e.ok("reviews", "approve", ids[0], "--justification", "the user said so")
	require.Regexp(t, `^review\s+`+ids[0]+`\nstatus\s+approved\ndecided\s+\S+ \S+ by key:test\njustification\s+the user said so\n`+
		`record\s+\S+ semantic, active, version \d+: user prefers_editor = helix\n$`, out)
	require.LessOrEqual(t, strings.Count(out, "\n"), 6)
	decode(t, e.ok("reviews", "get", ids[0], "--json"), &got)
	require.Equal(t, "approved", got.Status)
	require.Equal(t, memory.Active, got.Record.Status)
	out = e.ok("--actor", "alice", "reviews", "reject", ids[1], "--reason", "factual_error", "--justification", "the user uses vim", "--json")
	decode(t, out, &got)
	require.Equal(t, "rejected", got.Status)
	require.Equal(t, "alice via key:test", got.DecidedBy)
	require.Equal(t, "factual_error", got.RejectionReason)

	r = e.run("", "reviews", "reject", ids[1], "--reason", "other", "--justification", "again")
	require.Equal(t, 1, exitCode(r.err))
	require.Contains(t, r.stderr, "HTTP 409")
	require.Contains(t, r.stderr, "already rejected")
	r = e.run("", "reviews", "reject", ids[0], "--reason", "bogus", "--justification", "x")
	require.Contains(t, r.stderr, "/reason")

	require.Empty(t, rows(t, e.ok("reviews", "list")), "the queue is empty")
	decided := rows(t, e.ok("reviews", "list", "--status", "approved,rejected"))
	require.Len(t, decided, 2)
	require.Contains(t, decided[1], "rejected: factual_error")
}
