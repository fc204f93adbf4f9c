// Package pgtest gives tests a real, migrated PostgreSQL schema of their own.
// Tests never mock the store: each one that calls [NewSchema] gets a schema
// in the database named by TEST_DATABASE_URL (the one `make test` sets up),
// in the state the project's migrations leave a fresh one in, and no other
// test, in this process or another, uses it until the test ends.
//
// Migrating a schema takes seconds, so schemas are pooled in the database
// and shared by the test processes `go test ./...` runs: a checkout claims a
// free one with a session advisory lock (a killed process's claims end with
// its connection), migrates it up, and resets it to what a fresh migration
// leaves, which costs milliseconds. Only when every pooled schema is taken
// is a new one made. The pool is named by a hash of the migration files, so
// branches with different migrations never share schemas.
package pgtest

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pg"
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

// NewSchema checks a migrated schema out of the pool and returns a pool of
// connections that use it; at cleanup the connections are closed and the
// schema goes back to the pool, to be reset at its next checkout. Tests
// may write to it, change its tables and functions, or leave a daemon
// running on it: the next checkout ends the daemon's sessions, and makes a
// schema whose catalog was changed again from scratch.
func NewSchema(t testing.TB) *Schema {
	t.Helper()
	// Generous: checkouts take milliseconds, but when the pool is empty
	// (a fresh database) many test processes migrate at once.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := theRegistry()
	require.NoError(t, err, "prepare test database %s (run `make db`)", URL())

	slot, name, err := r.claim(ctx)
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := r.checkIn(name, slot >= PoolSize); err != nil {
			t.Logf("check schema %s in: %v", name, err)
		}
	})
	note, err := r.prepare(ctx, name)
	require.NoError(t, err, "prepare schema %s", name)
	if note != "" {
		t.Log(note)
	}

	// The application name marks the sessions on this schema, so that the
	// next checkout can end those a test left behind.
	url := WithSearchPath(URL(), name) + "&application_name=" + name
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

// Template is the name of the schema the migrations built, which every
// test schema is a copy of and no test writes to: what the migrations
// make of an empty schema, for a test that reads the catalog.
func Template(t testing.TB) string {
	t.Helper()
	r, err := theRegistry()
	require.NoError(t, err, "prepare test database %s (run `make db`)", URL())
	return r.template()
}
