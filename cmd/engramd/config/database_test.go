package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/cmd/engramd/config"
)

// The connections' timeouts have defaults fit for each kind of work, come
// from the file (0s turns one off), and a bad one is refused by name.
func TestDatabaseTimeouts(t *testing.T) {
	t.Parallel()
	c, err := loadFile(t, "listen: 127.0.0.1:9000\n")
	require.NoError(t, err)
	require.Equal(t, config.Database{StatementTimeout: 30 * time.Second, IngestStatementTimeout: 2 * time.Minute,
		JobStatementTimeout: 15 * time.Minute, LockTimeout: 30 * time.Second, IdleInTransactionTimeout: time.Minute,
		ClientCheckInterval: 5 * time.Second, KeepAlive: 30 * time.Second,
		Pooler: config.PoolerNone, StalenessBudget: config.DefaultStalenessBudget}, c.Database)
	s := c.Database.Session()
	require.Equal(t, "engramd", s.ApplicationName)
	require.Equal(t, 30*time.Second, s.StatementTimeout)

	c, err = loadFile(t, "database:\n  statement_timeout: 5s\n  job_statement_timeout: 1h\n  lock_timeout: 0s\n  keepalive: 1m\n")
	require.NoError(t, err)
	require.Equal(t, 5*time.Second, c.Database.StatementTimeout)
	require.Equal(t, time.Hour, c.Database.JobStatementTimeout)
	require.Zero(t, c.Database.LockTimeout)
	require.Equal(t, time.Minute, c.Database.KeepAlive)
	require.Equal(t, time.Minute, c.Database.IdleInTransactionTimeout, "what the file does not name keeps its default")

	for file, want := range map[string]string{
		"database: {statement_timeout: -1s}\n":            "database.statement_timeout: must not be negative",
		"database: {idle_in_transaction_timeout: 10us}\n": "database.idle_in_transaction_timeout: 10µs is under a millisecond",
		"database: {keepalive: 500ms}\n":                  "database.keepalive: 500ms is under a second",
		"database: {statement_timout: 5s}\n":              "statement_timout",
	} {
		_, err := loadFile(t, file)
		require.ErrorContains(t, err, want, file)
	}
}
