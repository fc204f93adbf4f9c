package main

import (
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

// setupMetrics is setup with an operator key and the write path's metrics
// on the server's registry, as engramd wires them.
func setupMetrics(t *testing.T) *env {
	t.Helper()
	pool := pgtest.NewSchema(t).Pool
	require.NoError(t, store.EnsureTenant(t.Context(), pool, "acme"))
	reg := prometheus.NewRegistry()
	wr := revise.New(pool, revise.Config{Registry: reg})
	revise.NewEscalator(wr, revise.EscalatorConfig{Registry: reg})
	srv := httptest.NewServer(server.New(server.Config{
		DB: pool, Writer: wr, Registry: reg,
		Keys: []server.Key{{Tenant: "acme", Name: "test", Secret: testKey}, {Name: "ops", Secret: opsKey, Role: server.RoleOperator}},
	}))
	t.Cleanup(srv.Close)
	return &env{t: t, url: srv.URL, environ: map[string]string{"ENGRAM_URL": srv.URL, "ENGRAM_API_KEY": testKey}, dir: t.TempDir()}
}

// engram stats writes prints the writes by layer and outcome with their
// rates, the rejections, the gates' latencies and the review queue; with
// --json the API's answer. It takes an operator key.
func TestStatsWritesCommand(t *testing.T) {
	t.Parallel()
	e := setupMetrics(t)
	e.create(stated(fact("go", nil), "human"))
	e.create(fact("go", nil)) // absorbed: the same fact again
	r := e.run("", "records", "create", "-f", e.file("rust.json", stated(fact("rust", nil), "observation")))
	require.Equal(t, 1, exitCode(r.err))
	require.Contains(t, r.stderr, "Write rejected (HTTP 422)")
	e.create(working("t1"))

	r = e.run("", "stats", "writes")
	require.Equal(t, 1, exitCode(r.err))
	require.Contains(t, r.stderr, "engram stats writes; the other commands a tenant's key")

	e.environ["ENGRAM_API_KEY"] = opsKey
	out := e.ok("stats", "writes")
	require.Regexp(t, `^Writes through this daemon since it started, \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ \(\d+s ago\):\n\nLAYER\s+WRITES\s+CREATED\s+ABSORBED\s+MERGED\s+CONTESTED\s+QUEUED\s+REJECTED\s+ACCEPTED\s+WAR\s+DEDUP\n`, out)
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	for _, want := range []string{
		"working 1 1 0 0 0 0 0 1.00 1.00 0.00",
		"semantic 3 1 1 0 0 0 1 0.67 0.33 0.33",
		"all 4 2 1 0 0 0 1 0.75 0.50 0.25",
		"contradiction contradiction 1 1.00",
	} {
		require.Contains(t, lines, want, out)
	}
	require.Contains(t, out, "\nGATE ")
	require.True(t, slices.ContainsFunc(lines, regexp.MustCompile(`^schema 4 \S+ \S+ \S+ \S+$`).MatchString), out)
	require.Contains(t, out, "\nTampered provenance stamps found: 0\n")
	require.True(t, strings.HasSuffix(out, "\nReview queue of this daemon's tenants: 0 pending; 0 escalated since the daemon started\n"), out)

	var st api.WriteStats
	decode(t, e.ok("stats", "writes", "--json"), &st)
	require.Equal(t, int64(4), st.All.Writes)
	require.Len(t, st.Rejections, 1)

	for _, args := range [][]string{{"stats"}, {"stats", "reads"}, {"stats", "writes", "extra"}} {
		r := e.run("", args...)
		require.Equal(t, 2, exitCode(r.err), args)
	}
}

func TestLatency(t *testing.T) {
	t.Parallel()
	for s, want := range map[float64]string{0.000000523: "523ns", 0.0000123456: "12.3µs", 0.00123456: "1.23ms", 0.123456: "123ms", 2.5: "2.5s"} {
		require.Equal(t, want, latency(s), s)
	}
}
