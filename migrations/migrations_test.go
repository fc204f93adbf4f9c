package migrations_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/migrations"
)

// TestNewerDatabaseIsNamed: a database migrated past this build's
// migrations is refused with both versions; one at this build's is not.
func TestNewerDatabaseIsNamed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pgtest.NewSchema(t)
	pc, err := pgxpool.ParseConfig(s.URL)
	require.NoError(t, err)
	db := stdlib.OpenDB(*pc.ConnConfig)
	defer db.Close()

	require.NoError(t, migrations.Newer(ctx, db))
	_, err = s.Pool.Exec(ctx, `INSERT INTO goose_db_version (version_id, is_applied) VALUES (9999, true)`)
	require.NoError(t, err)
	err = migrations.Newer(ctx, db)
	var newer *migrations.NewerError
	require.True(t, errors.As(err, &newer), "got %v", err)
	require.Equal(t, int64(9999), newer.Database)
	require.Less(t, newer.Known, int64(9999))
	require.Contains(t, err.Error(), "restore a backup")
}
