// Package migrations holds engram's embedded, ordered SQL migrations and
// applies them with goose under a PostgreSQL advisory lock, so several
// engramd processes can start against one database at once. Migrations run
// only when asked (`engramd migrate`, `engramd run --migrate`), never
// implicitly from library code.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed [0-9]*.sql
var files embed.FS

// Up applies every pending migration to the database and schema db points
// at (the first schema on its search_path). The advisory lock is keyed by
// database and schema, so migrations of different schemas (as in tests) do
// not wait for each other.
func Up(ctx context.Context, db *sql.DB, logger *slog.Logger) ([]*goose.MigrationResult, error) {
	p, err := provider(ctx, db, logger)
	if err != nil {
		return nil, err
	}
	res, err := p.Up(ctx)
	if err != nil {
		return res, fmt.Errorf("migrate up: %w", err)
	}
	return res, nil
}

// Pending reports whether db has migrations still to apply; engramd refuses
// to serve a database that does.
func Pending(ctx context.Context, db *sql.DB) (bool, error) {
	p, err := provider(ctx, db, nil)
	if err != nil {
		return false, err
	}
	return p.HasPending(ctx)
}

// NewerError says that a database was migrated by an engram newer than
// this one: its schema has migrations this build does not know, so this
// build's statements may not fit it.
type NewerError struct {
	Database int64 // the database's latest migration
	Known    int64 // this build's latest
}

func (e *NewerError) Error() string {
	return fmt.Sprintf("the database is at migration %d, newer than this engramd's latest (%d): "+
		"run the engramd release that migrated it (or a later one), or restore a backup taken before that migration; "+
		"never point an older engramd at it", e.Database, e.Known)
}

// Newer returns a *NewerError when db was migrated past the migrations
// this build embeds, and nil when it was not.
func Newer(ctx context.Context, db *sql.DB) error {
	p, err := provider(ctx, db, nil)
	if err != nil {
		return err
	}
	current, err := p.GetDBVersion(ctx)
	if err != nil {
		return fmt.Errorf("read database version: %w", err)
	}
	var known int64
	for _, s := range p.ListSources() {
		known = max(known, s.Version)
	}
	if current > known {
		return &NewerError{Database: current, Known: known}
	}
	return nil
}

func provider(ctx context.Context, db *sql.DB, logger *slog.Logger) (*goose.Provider, error) {
	var where string
	if err := db.QueryRowContext(ctx, "SELECT current_database() || '.' || current_schema()").Scan(&where); err != nil {
		return nil, fmt.Errorf("read current schema: %w", err)
	}
	h := fnv.New64a()
	h.Write([]byte("engram-migrations:" + where))
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(int64(h.Sum64())), lock.WithLockTimeout(1, 600))
	if err != nil {
		return nil, fmt.Errorf("create migration lock: %w", err)
	}
	opts := []goose.ProviderOption{goose.WithSessionLocker(locker)}
	if logger != nil {
		opts = append(opts, goose.WithSlog(logger))
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, files, opts...)
	if err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	return p, nil
}

// FS returns the embedded migration files, for a caller that needs to know
// which set it has (the test pool names its schemas by their hash).
func FS() fs.FS { return files }
