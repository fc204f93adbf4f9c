// Package pgtest gives tests a real, migrated PostgreSQL schema of their own.
// Tests never mock the store: each one that calls [NewSchema] gets a fresh
// schema in the database named by TEST_DATABASE_URL (the one `make test` sets
// up), migrated with the project's migrations and dropped at cleanup.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/migrations"
)

// DefaultURL is the test database `make test` creates.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/engram_test?sslmode=disable"

// URL is the test database: TEST_DATABASE_URL, or [DefaultURL].
func URL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

var extensionOnce = sync.OnceValue(func() error {
	// Extensions are database-wide; create them once, under a lock, so
	// parallel test processes do not race each other to them.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, URL())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return pg.WithTx(ctx, conn, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(7355608)"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public; CREATE EXTENSION IF NOT EXISTS btree_gin WITH SCHEMA public")
		return err
	})
})

// Schema is one test's migrated schema.
type Schema struct {
	Name string
	// URL connects to the database with the schema first on the search_path,
	// for code under test that makes its own connections (a daemon).
	URL  string
	Pool *pgxpool.Pool
}

// NewSchema creates a fresh schema, migrates it and returns a pool whose
// connections use it; both are closed and dropped when the test ends.
func NewSchema(t testing.TB) *Schema {
	t.Helper()
	// Generous: a schema's migrations take about a second on a quiet
	// machine, but many test processes migrate at once on a busy one.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, extensionOnce(), "prepare test database %s (run `make db`)", URL())

	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "test_" + hex.EncodeToString(b)

	admin, err := pgx.Connect(ctx, URL())
	require.NoError(t, err)
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize())
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, URL())
		if err != nil {
			t.Logf("drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			t.Logf("drop schema %s: %v", name, err)
		}
	})

	cfg, err := pgx.ParseConfig(URL())
	require.NoError(t, err)
	cfg.RuntimeParams["search_path"] = name + ",public"
	db := stdlib.OpenDB(*cfg)
	_, err = migrations.Up(ctx, db, nil)
	require.NoError(t, db.Close())
	require.NoError(t, err, "migrate schema %s", name)

	url := WithSearchPath(URL(), name)
	pool, err := pg.NewPool(ctx, url, nil)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return &Schema{Name: name, URL: url, Pool: pool}
}

// WithSearchPath returns url with search_path set to schema, then public
// (where the vector type lives).
func WithSearchPath(url, schema string) string {
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "search_path=" + schema + ",public"
}
