package config_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/access"
	"github.com/engram-dev/engram/cmd/engramd/config"
	"github.com/engram-dev/engram/memory"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestPrecedence(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "engram.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`
listen: 127.0.0.1:9000
pprof_listen: 127.0.0.1:6060
max_payload_bytes: 4096
shutdown_timeout: 5s
api_keys:
  - {tenant: acme, key: file-key-0123456789, name: acme-ci}
`), 0o600))

	c, err := config.Load([]string{"--config", path}, env(nil))
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9000", c.Listen)
	require.Equal(t, "127.0.0.1:6060", c.PprofListen)
	require.Equal(t, 4096, c.MaxPayloadBytes)
	require.Equal(t, 5*time.Second, c.ShutdownTimeout)
	require.Equal(t, []config.APIKey{{Tenant: "acme", Key: "file-key-0123456789", Name: "acme-ci"}}, c.APIKeys)
	require.Equal(t, config.DefaultDatabaseURL, c.DatabaseURL)

	c, err = config.Load([]string{"--listen", "127.0.0.1:9002", "--pprof-listen", "127.0.0.1:6062"}, env(map[string]string{
		"ENGRAM_CONFIG": path, "ENGRAM_LISTEN": "127.0.0.1:9001", "ENGRAM_PPROF_LISTEN": "127.0.0.1:6061", "ENGRAM_MAX_PAYLOAD_BYTES": "8192",
		"DATABASE_URL": "postgres://x/y", "ENGRAM_API_KEYS": "t1:env-key-0123456789,t2:env-key-9876543210",
	}))
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9002", c.Listen, "flags win over env")
	require.Equal(t, "127.0.0.1:6062", c.PprofListen)
	require.Equal(t, 8192, c.MaxPayloadBytes, "env wins over the file")
	require.Equal(t, "postgres://x/y", c.DatabaseURL)
	require.Len(t, c.APIKeys, 2)
	require.Equal(t, "t2", c.APIKeys[1].Tenant)
}

func TestValidateNamesTheBadField(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := map[string]struct {
		file string
		env  map[string]string
		args []string
	}{
		"max_payload_bytes":  {env: map[string]string{"ENGRAM_MAX_PAYLOAD_BYTES": "10"}},
		"ENGRAM_MAX_PAYLOAD": {env: map[string]string{"ENGRAM_MAX_PAYLOAD_BYTES": "lots"}},
		"log_level":          {args: []string{"--log-level", "chatty"}},
		"log_format":         {file: "log_format: xml\n"},
		"log_requests":       {env: map[string]string{"ENGRAM_LOG_REQUESTS": "loud"}},
		"api_keys[0].key":    {file: "api_keys: [{tenant: acme, key: short}]\n"},
		"api_keys[0].tenant": {file: "api_keys: [{tenant: Acme!, key: long-enough-key-0123}]\n"},
		"ENGRAM_API_KEYS":    {env: map[string]string{"ENGRAM_API_KEYS": "no-colon"}},
		"api_keys[1].role":   {file: "api_keys: [{tenant: acme, key: long-enough-key-0123}, {key: long-enough-key-4567, role: admin}]\n"},
		"api_keys[0].tenant: an operator key has no tenant":     {file: "api_keys: [{tenant: acme, key: long-enough-key-0123, role: operator}]\n"},
		"api_keys[0].tenant: a tenant key needs a tenant":       {file: "api_keys: [{key: long-enough-key-0123}]\n"},
		"api_keys[1].key: must be at least 16":                  {env: map[string]string{"ENGRAM_API_KEYS": "acme:long-enough-key-0123,*:short"}},
		"field nope not found":                                  {file: "nope: 1\n"},
		"shutdown_timeout":                                      {file: "shutdown_timeout: -1s\n"},
		"max_clock_skew: must be positive":                      {args: []string{"--max-clock-skew", "-1s"}},
		"max_clock_skew: 1m0s is less than ingest.max_skew":     {env: map[string]string{"ENGRAM_MAX_CLOCK_SKEW": "1m"}},
		"ENGRAM_STRICT":                                         {env: map[string]string{"ENGRAM_STRICT": "maybe"}},
		"write_path.contradiction.evidence_ratio":               {file: "write_path: {contradiction: {policy: evidence, evidence_ratio: 0.5}}\n"},
		"api_keys[0].agent_id: an executor key names its agent": {file: "api_keys: [{tenant: acme, key: long-enough-key-0123, role: executor}]\n"},
		"api_keys[0].clearance":                                 {file: "api_keys: [{tenant: acme, key: long-enough-key-0123, clearance: secret}]\n"},
		"budgets.writes.operator":                               {file: "budgets: {writes: {operator: 5}}\n"},
		"openwop.on_secret":                                     {file: "openwop: {on_secret: shred}\n"},
		"field policy not found":                                {file: "openwop: {policy: x}\n"},
	}
	for want, c := range cases {
		args := c.args
		if c.file != "" {
			path := filepath.Join(dir, want+".yaml")
			require.NoError(t, os.WriteFile(path, []byte(c.file), 0o600))
			args = append(args, "--config", path)
		}
		_, err := config.Load(args, env(c.env))
		require.ErrorContains(t, err, want)
	}
}

// An operator key has role operator and no tenant; in ENGRAM_API_KEYS it is
// "*:key".
func TestOperatorKeys(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "engram.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`
api_keys:
  - {tenant: acme, key: file-key-0123456789, name: acme-ci}
  - {name: ops, key: ops-key-0123456789, role: operator}
  - {tenant: globex, key: globex-key-0123456789, role: tenant}
`), 0o600))
	c, err := config.Load([]string{"--config", path}, env(nil))
	require.NoError(t, err)
	require.Equal(t, []config.APIKey{
		{Tenant: "acme", Key: "file-key-0123456789", Name: "acme-ci"},
		{Key: "ops-key-0123456789", Name: "ops", Role: config.RoleOperator},
		{Tenant: "globex", Key: "globex-key-0123456789", Role: config.RoleTenant},
	}, c.APIKeys)

	c, err = config.Load(nil, env(map[string]string{"ENGRAM_API_KEYS": "acme:env-key-0123456789, *:ops-key-0123456789, curator@globex:env-key:with-colon"}))
	require.NoError(t, err)
	require.Equal(t, []config.APIKey{
		{Tenant: "acme", Key: "env-key-0123456789", Name: "acme-env-1"},
		{Key: "ops-key-0123456789", Name: "operator-env-2", Role: config.RoleOperator},
		{Tenant: "globex", Key: "env-key:with-colon", Name: "globex-env-3", Role: "curator"},
	}, c.APIKeys)
	_, err = config.Load(nil, env(map[string]string{"ENGRAM_API_KEYS": "admin@acme:env-key-0123456789"}))
	require.ErrorContains(t, err, "api_keys[0].role")
}

// A key carries its role and attributes; budgets come from the file.
func TestKeyRolesAndBudgets(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "engram.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`
api_keys:
  - {tenant: acme, key: exec-key-0123456789, name: planner, role: executor, agent_id: planner-7, domains: [medical], clearance: medium}
budgets:
  window: 30m
  writes: {executor: 100}
`), 0o600))
	c, err := config.Load([]string{"--config", path}, env(nil))
	require.NoError(t, err)
	require.Equal(t, []config.APIKey{{Tenant: "acme", Key: "exec-key-0123456789", Name: "planner", Role: "executor",
		AgentID: "planner-7", Domains: []string{"medical"}, Clearance: memory.Medium}}, c.APIKeys)
	require.Equal(t, 30*time.Minute, c.Budgets.WindowOrDefault())
	require.Equal(t, 100, c.Budgets.Limit(access.Executor))
	require.Equal(t, 5_000, c.Budgets.Limit(access.Verifier))
}

// With embedding.provider none there are no embedding jobs: the defaults
// schedule none, and a file that schedules one is refused with both fields
// named.
func TestEmbeddingProviderNone(t *testing.T) {
	t.Parallel()
	c, err := loadFile(t, "embedding: {provider: none}\n")
	require.NoError(t, err)
	require.Equal(t, map[string]string{
		"audit_provenance": "@daily", "decay_sweep": "*/15 * * * *", "decay_purge": "17 * * * *", "retrieval_stats": "@every 5m", "review_escalation": "@every 5m", "consolidate": "@every 30s",
		"retention": "23 * * * *", "compliance": "53 * * * *",
	}, c.Jobs)

	c, err = loadFile(t, "embedding: {provider: lexical}\njobs: {decay_sweep: \"@hourly\"}\n")
	require.NoError(t, err)
	require.Equal(t, "@hourly", c.Jobs["decay_sweep"])
	require.Equal(t, "@every 1m", c.Jobs["embedding_backfill"], "the file's schedules over the defaults")
	require.Equal(t, "off", c.Jobs["embedding_reindex"])

	for _, job := range []string{"embedding_backfill", "embedding_reindex"} {
		_, err = loadFile(t, "embedding: {provider: none}\njobs: {"+job+": \"@hourly\"}\n")
		require.ErrorContains(t, err, "jobs."+job+": there is no such job with embedding.provider none")
	}
}

// openwop.on_secret chooses what an OpenWOP put does with a secret.
func TestOpenWOPOnSecret(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "engram.yaml")
	require.NoError(t, os.WriteFile(path, []byte("openwop: {on_secret: reject}\n"), 0o600))
	cfg, err := config.Load([]string{"--config", path}, env(nil))
	require.NoError(t, err)
	require.Equal(t, "reject", cfg.OpenWOP.OnSecret)
}
