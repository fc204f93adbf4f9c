package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/jobs/jobstest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/retention"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

// engram compliance prints the latest compliance report: each class with
// what is past it, by tenant, the violations and the erasures; with --json
// the API's answer. It takes an operator key.
func TestComplianceCommand(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewSchema(t).Pool
	ctx := context.Background()
	require.NoError(t, store.EnsureTenant(ctx, pool, "acme"))
	wr := revise.New(pool, revise.Config{})
	srv := httptest.NewServer(server.New(server.Config{DB: pool, Writer: wr,
		Keys: []server.Key{{Tenant: "acme", Name: "test", Secret: testKey}, {Name: "ops", Secret: opsKey, Role: server.RoleOperator}}}))
	t.Cleanup(srv.Close)
	e := &env{t: t, url: srv.URL, environ: map[string]string{"ENGRAM_URL": srv.URL, "ENGRAM_API_KEY": opsKey}, dir: t.TempDir()}

	r := e.run("", "compliance")
	require.Equal(t, 1, exitCode(r.err))
	require.Contains(t, r.stderr, "the compliance job has not run yet")

	p, _ := json.Marshal(map[string]any{"kind": "semantic", "subject": "alice", "predicate": "email", "object": "[REDACTED:email]",
		"validity": map[string]any{"mode": "global"}})
	rec, err := wr.Create(ctx, "acme", memory.Record{Type: memory.Semantic, Sensitivity: memory.Low, Tags: []string{memory.PIITag},
		Confidence: 0.9, Payload: p, CreatedAt: time.Now().Add(-100 * 24 * time.Hour)}, revise.Change{Actor: "test"})
	require.NoError(t, err)
	settings, err := retention.NewSettings(retention.DefaultConfig())
	require.NoError(t, err)
	_, err = retention.New(retention.Options{DB: pool, Writer: wr, Settings: settings}).Check(ctx, &jobstest.Run{}, 42)
	require.NoError(t, err)

	out := e.ok("compliance")
	require.Regexp(t, `^Compliance report of \S+ \S+ by run 42: 1 record past retention, 2 violations\n\nCLASS\s+MAX AGE\s+ACTION\s+CUTOFF\s+PAST RETENTION\s+RETRIEVABLE\n`, out)
	require.Regexp(t, `\npii\s+90d\s+hard_delete\s+\S+ \S+\s+1\s+1\n`, out)
	require.Regexp(t, `\npublic\s+none\s+soft_delete\s+-\s+0\s+0\n`, out)
	require.Regexp(t, `\nacme\s+pii\s+1\s+1\s+`, out)
	require.Regexp(t, `\nP0\s+retention_overdue\s+acme\s+pii\s+1\s+-\s+`, out)
	require.Regexp(t, `\nP0\s+pii_unmarked\s+acme\s+-\s+1\s+`+rec.ID.String(), out)
	require.Contains(t, out, "\nerasures not checked: erasure requests are not tracked by this daemon\n")

	var rep api.ComplianceReport
	decode(t, e.ok("compliance", "--json"), &rep)
	require.EqualValues(t, 42, rep.RunID)

	e.environ["ENGRAM_API_KEY"] = testKey
	r = e.run("", "compliance")
	require.Equal(t, 1, exitCode(r.err))
	require.Contains(t, r.stderr, "engram compliance")
}
