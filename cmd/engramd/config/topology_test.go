package config_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/cmd/engramd/config"
)

func TestDatabaseTopology(t *testing.T) {
	t.Parallel()
	c, err := config.Load(nil, env(nil))
	require.NoError(t, err)
	require.Equal(t, config.PoolerNone, c.Database.Pooler)
	require.Equal(t, config.DefaultStalenessBudget, c.Database.StalenessBudget)
	require.Equal(t, c.DatabaseURL, c.Database.LockDSN(c.DatabaseURL), "no lock_url: the primary's")

	path := filepath.Join(t.TempDir(), "engram.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`
database_url: postgres://h1:6432,h2:6432/engram?target_session_attrs=read-write
database:
  read_url: [postgres://r1/engram, postgres://r2/engram]
  lock_url: postgres://h1:5432,h2:5432/engram?target_session_attrs=read-write
  pooler: transaction
  staleness_budget: 500ms
`), 0o600))
	c, err = config.Load([]string{"--config", path}, env(nil))
	require.NoError(t, err)
	require.Equal(t, config.URLs{"postgres://r1/engram", "postgres://r2/engram"}, c.Database.ReadURL)
	require.Equal(t, "postgres://h1:5432,h2:5432/engram?target_session_attrs=read-write", c.Database.LockDSN(c.DatabaseURL))
	require.Equal(t, 500*time.Millisecond, c.Database.StalenessBudget)

	c, err = config.Load(nil, env(map[string]string{"ENGRAM_READ_URL": "postgres://a/e postgres://b/e", "ENGRAM_STALENESS_BUDGET": "3s"}))
	require.NoError(t, err)
	require.Equal(t, config.URLs{"postgres://a/e", "postgres://b/e"}, c.Database.ReadURL)
	require.Equal(t, 3*time.Second, c.Database.StalenessBudget)

	for env, want := range map[string]map[string]string{
		"database.pooler":           {"ENGRAM_DATABASE_POOLER": "statement"},
		"database.lock_url":         {"ENGRAM_DATABASE_POOLER": "transaction"},
		"database.staleness_budget": {"ENGRAM_STALENESS_BUDGET": "-1s"},
	} {
		_, err := config.Load(nil, func(k string) string { return want[k] })
		require.ErrorContains(t, err, env)
	}
}
