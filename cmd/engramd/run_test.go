package main

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/cmd/engramd/config"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
)

// Configured keys keep their roles; an operator key has no tenant.
func TestAPIKeysCarryRoles(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.APIKeys = []config.APIKey{
		{Tenant: "acme", Key: "acme-key-0123456789"},
		{Key: "ops-key-0123456789", Name: "ops", Role: config.RoleOperator},
	}
	var out strings.Builder
	keys, err := apiKeys(cfg, &out)
	require.NoError(t, err)
	require.Equal(t, []server.Key{
		{Tenant: "acme", Name: "acme", Secret: "acme-key-0123456789"},
		{Name: "ops", Secret: "ops-key-0123456789", Role: server.RoleOperator},
	}, keys)
	require.Empty(t, out.String(), "configured keys are never printed")
}

// With no keys configured, engramd generates a key for tenant "default"
// and an operator key, and prints both: the one place keys are shown.
func TestGeneratedKeys(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	keys, err := apiKeys(config.Default(), &out)
	require.NoError(t, err)
	require.Len(t, keys, 2)
	require.Equal(t, server.Key{Tenant: config.DefaultTenant, Name: "generated", Secret: keys[0].Secret, Role: server.RoleCurator}, keys[0],
		"the generated key is the person's who started the daemon: a curator")
	require.Equal(t, server.Key{Name: "generated-operator", Secret: keys[1].Secret, Role: server.RoleOperator}, keys[1])
	require.NotEqual(t, keys[0].Secret, keys[1].Secret)
	for _, k := range keys {
		require.Contains(t, out.String(), k.Secret)
	}
	require.Contains(t, out.String(), "export ENGRAM_API_KEY="+keys[0].Secret)
	require.Contains(t, out.String(), "operator key")
}

// A key configured with no role is warned of at start-up, with the way to
// keep a curator's powers; a key naming its role is not.
func TestUnroledKeysAreWarnedOf(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	warnUnroled([]server.Key{
		{Tenant: "acme", Name: "old-agents", Secret: "acme-key-0123456789"},
		{Tenant: "acme", Name: "person", Secret: "acme-key-9876543210", Role: server.RoleCurator},
	}, slog.New(slog.NewTextHandler(&logs, nil)))
	require.Contains(t, logs.String(), "key=old-agents")
	require.Contains(t, logs.String(), "orchestrator with clearance medium")
	require.Contains(t, logs.String(), "role: curator")
	require.NotContains(t, logs.String(), "key=person")
}

// Unsigned provenance stamps and no encryption at rest are logged loudly
// by default, and refused with --strict, which names both; with both set
// there is nothing to say.
func TestStrictRefusesInsecureSettings(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	cfg := config.Default()
	require.NoError(t, checkInsecure(cfg, false, logger))
	require.Contains(t, logs.String(), "level=ERROR")
	require.Contains(t, logs.String(), "UNSIGNED")
	require.Contains(t, logs.String(), "encryption at rest is OFF")

	cfg, err := config.Load([]string{"--strict"}, func(string) string { return "" })
	require.NoError(t, err)
	err = checkInsecure(cfg, false, logger)
	require.ErrorContains(t, err, "strict: refusing to start")
	require.ErrorContains(t, err, "UNSIGNED")
	require.ErrorContains(t, err, "encryption at rest is OFF")
	cfg.WritePath.Provenance.Keys = []revise.SigningKey{{ID: "k1", Secret: "a-long-enough-signing-secret"}}
	require.ErrorContains(t, checkInsecure(cfg, false, logger), "encryption at rest is OFF")
	require.NoError(t, checkInsecure(cfg, true, logger))
}

// The profiler is off by default; pprof_listen serves it on an address of
// its own, and never on the API's.
func TestProfilerOnlyOnItsOwnAddress(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a daemon")
	}
	t.Parallel()
	bin := buildEngramd(t)
	db := pgtest.NewSchema(t)
	get := func(url string) int {
		res, err := http.Get(url)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}

	d := startWithYAML(t, bin, db, "jobs: {}\n", io.Discard)
	require.NotEqual(t, http.StatusOK, get("http://"+d.addr+"/debug/pprof/"), "not on the API")

	profiler := freeAddr(t)
	d = startWithYAML(t, bin, db, "pprof_listen: "+profiler+"\n", io.Discard)
	require.Equal(t, http.StatusOK, get("http://"+profiler+"/debug/pprof/"))
	require.Equal(t, http.StatusOK, get("http://"+profiler+"/debug/pprof/heap?debug=1"))
	require.NotEqual(t, http.StatusOK, get("http://"+d.addr+"/debug/pprof/"), "still not on the API")
}

// A database URL that sizes the pool is taken for migrations too: the
// pool's parameters are not sent to the server.
func TestMigrationConnectionTakesPoolParameters(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.DatabaseURL = pgtest.URL() + "&pool_max_conns=6"
	db, err := openSQL(cfg)
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.PingContext(t.Context()))
}
