package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/config"
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
		{Tenant: "acme", Name: "acme", Secret: "acme-key-0123456789", Role: server.RoleTenant},
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
	require.Equal(t, server.Key{Tenant: config.DefaultTenant, Name: "generated", Secret: keys[0].Secret, Role: server.RoleTenant}, keys[0])
	require.Equal(t, server.Key{Name: "generated-operator", Secret: keys[1].Secret, Role: server.RoleOperator}, keys[1])
	require.NotEqual(t, keys[0].Secret, keys[1].Secret)
	for _, k := range keys {
		require.Contains(t, out.String(), k.Secret)
	}
	require.Contains(t, out.String(), "export ENGRAM_API_KEY="+keys[0].Secret)
	require.Contains(t, out.String(), "operator key")
}
