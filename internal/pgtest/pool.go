package pgtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/engram-dev/engram/migrations"
)

// PoolSize bounds the schemas kept for one set of migrations. A checkout
// while all of them are taken gets a schema of its own, dropped at cleanup.
const PoolSize = 32

// goose's version table, the one table a reset keeps.
const versionTable = "goose_db_version"

// registry is this process's view of the pool: the connection whose session
// holds its claims, and what a freshly migrated schema looks like.
type registry struct {
	hash string // of the migration files; names the pool

	mu   sync.Mutex
	conn *pgx.Conn       // holds the session advisory locks of the claims
	held map[string]bool // schemas this process has claimed (session locks re-enter)

	// The template's state, and its catalog, read when a schema's
	// catalog has to be compared with it.
	ref        *state
	refCatalog func() ([]string, error)
}

// theRegistry is the process's registry, set up by the first checkout.
var theRegistry = sync.OnceValues(func() (*registry, error) {
	if err := extensionOnce(); err != nil {
		return nil, err
	}
	hash, err := migrationsHash()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := newRegistry(ctx, hash)
	if err != nil {
		return nil, err
	}
	if err := r.collect(ctx); err != nil {
		r.conn.Close(ctx)
		return nil, fmt.Errorf("collect unused schemas: %w", err)
	}
	return r, nil
})

// newRegistry opens the claim connection of the pool named hash and makes
// sure its template is there.
func newRegistry(ctx context.Context, hash string) (*registry, error) {
	conn, err := pgx.Connect(ctx, URL())
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	r := &registry{hash: hash, conn: conn, held: map[string]bool{}}
	if err := r.open(ctx); err != nil {
		conn.Close(ctx)
		return nil, err
	}
	return r, nil
}

func (r *registry) open(ctx context.Context) (err error) {
	// A shared lock on the migration set for the life of the connection:
	// the collector drops another set's schemas only when it can take this
	// lock exclusively, so never a template or schema someone is using.
	if _, err := r.conn.Exec(ctx, "SELECT pg_advisory_lock_shared(hashtextextended('pgtest:' || $1::text, 0))", r.hash); err != nil {
		return fmt.Errorf("lock migration set: %w", err)
	}
	if err := r.ensureTemplate(ctx); err != nil {
		return err
	}
	if r.ref, err = readState(ctx, r.conn, r.template()); err != nil {
		return fmt.Errorf("read template: %w", err)
	}
	r.refCatalog = sync.OnceValues(func() ([]string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, URL())
		if err != nil {
			return nil, err
		}
		defer conn.Close(ctx)
		return readCatalog(ctx, conn, r.template())
	})
	return nil
}

// migrationsHash names the pool by the migration files, so a branch with a
// migration of its own (or one fewer) never gets a schema migrated past or
// short of its code.
func migrationsHash() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS(), path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", path, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hash migrations: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

func (r *registry) template() string { return "pgtest_" + r.hash + "_t" }

func (r *registry) slot(i int) string { return fmt.Sprintf("pgtest_%s_%02d", r.hash, i) }

// ensureTemplate makes the migration set's template, a schema migrated and
// never handed out, which resets compare with and restore from. It is
// built under another name and renamed when complete, so a process killed
// while building leaves nothing that looks finished.
func (r *registry) ensureTemplate(ctx context.Context) error {
	const lockBuild = "SELECT pg_advisory_lock(hashtextextended('pgtest-build:' || $1::text, 0))"
	const unlockBuild = "SELECT pg_advisory_unlock(hashtextextended('pgtest-build:' || $1::text, 0))"
	if _, err := r.conn.Exec(ctx, lockBuild, r.hash); err != nil {
		return fmt.Errorf("lock template build: %w", err)
	}
	defer func() { _, _ = r.conn.Exec(context.WithoutCancel(ctx), unlockBuild, r.hash) }()
	if ok, err := schemaExists(ctx, r.conn, r.template()); err != nil || ok {
		return err
	}
	building := r.template() + "b"
	if _, err := r.conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+ident(building)+" CASCADE"); err != nil {
		return fmt.Errorf("drop unfinished template: %w", err)
	}
	if _, err := r.conn.Exec(ctx, "CREATE SCHEMA "+ident(building)); err != nil {
		return fmt.Errorf("create template: %w", err)
	}
	if err := migrate(ctx, building); err != nil {
		return err
	}
	if _, err := r.conn.Exec(ctx, "ALTER SCHEMA "+ident(building)+" RENAME TO "+ident(r.template())); err != nil {
		return fmt.Errorf("finish template: %w", err)
	}
	return nil
}

// collect drops the schemas no one will claim again: this set's beyond
// [PoolSize] left by killed processes, and, once there are more than a
// pool's worth of them, every schema of migration sets no process is using.
func (r *registry) collect(ctx context.Context) error {
	const listSQL = `SELECT nspname FROM pg_namespace WHERE nspname LIKE 'pgtest\_%' ORDER BY nspname`
	rows, err := r.conn.Query(ctx, listSQL)
	if err != nil {
		return err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	others := map[string][]string{}
	var count int
	for _, name := range names {
		parts := strings.Split(name, "_")
		if len(parts) != 3 {
			continue
		}
		if parts[1] != r.hash {
			others[parts[1]] = append(others[parts[1]], name)
			count++
			continue
		}
		if i, err := strconv.Atoi(parts[2]); err == nil && i >= PoolSize {
			if err := r.dropUnclaimed(ctx, name); err != nil {
				return err
			}
		}
	}
	if count <= PoolSize {
		return nil
	}
	const tryLockSet = "SELECT pg_try_advisory_lock(hashtextextended('pgtest:' || $1::text, 0))"
	const unlockSet = "SELECT pg_advisory_unlock(hashtextextended('pgtest:' || $1::text, 0))"
	for hash, names := range others {
		var free bool
		if err := r.conn.QueryRow(ctx, tryLockSet, hash).Scan(&free); err != nil {
			return err
		}
		if !free {
			continue
		}
		for _, name := range names {
			if _, err := r.conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+ident(name)+" CASCADE"); err != nil {
				_, _ = r.conn.Exec(ctx, unlockSet, hash)
				return err
			}
		}
		if _, err := r.conn.Exec(ctx, unlockSet, hash); err != nil {
			return err
		}
	}
	return nil
}

// dropUnclaimed drops name unless some process has claimed it.
func (r *registry) dropUnclaimed(ctx context.Context, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ok, err := r.tryLock(ctx, name)
	if err != nil || !ok {
		return err
	}
	defer func() { _ = r.unlock(context.WithoutCancel(ctx), name) }()
	_, err = r.conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+ident(name)+" CASCADE")
	return err
}

// claim takes the first slot no test anywhere holds. The claim is a session
// advisory lock on r's connection, so a killed process's claims end with
// its connection.
func (r *registry) claim(ctx context.Context) (int, string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := 0; ; i++ {
		name := r.slot(i)
		if r.held[name] {
			continue
		}
		ok, err := r.tryLock(ctx, name)
		if err != nil {
			return 0, "", fmt.Errorf("claim schema: %w", err)
		}
		if ok {
			r.held[name] = true
			return i, name, nil
		}
	}
}

func (r *registry) release(ctx context.Context, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.held, name)
	return r.unlock(ctx, name)
}

func (r *registry) tryLock(ctx context.Context, name string) (bool, error) {
	var ok bool
	err := r.conn.QueryRow(ctx, "SELECT pg_try_advisory_lock(hashtextextended('pgtest:' || $1::text, 0))", name).Scan(&ok)
	return ok, err
}

func (r *registry) unlock(ctx context.Context, name string) error {
	_, err := r.conn.Exec(ctx, "SELECT pg_advisory_unlock(hashtextextended('pgtest:' || $1::text, 0))", name)
	return err
}

// migrate applies the migrations to schema name, refusing to when name is
// not the schema they would land in (goose would use public).
func migrate(ctx context.Context, name string) error {
	cfg, err := pgx.ParseConfig(URL())
	if err != nil {
		return err
	}
	cfg.RuntimeParams["search_path"] = name + ",public"
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	var current string
	if err := db.QueryRowContext(ctx, "SELECT coalesce(current_schema(), '')").Scan(&current); err != nil {
		return fmt.Errorf("migrate schema %s: %w", name, err)
	}
	if current != name {
		return fmt.Errorf("migrate schema %s: the connection's schema is %q", name, current)
	}
	if _, err := migrations.Up(ctx, db, nil); err != nil {
		return fmt.Errorf("migrate schema %s: %w", name, err)
	}
	return nil
}

// endSessions ends the sessions a test left on schema name (a daemon still
// running), found by the application name [NewSchema] gives them, and
// waits for them to go.
func endSessions(ctx context.Context, conn *pgx.Conn, name string) error {
	const endSQL = `
SELECT count(pg_terminate_backend(pid, 10000)) FROM pg_stat_activity
WHERE application_name = $1 AND pid <> pg_backend_pid()`
	if _, err := conn.Exec(ctx, endSQL, name); err != nil {
		return fmt.Errorf("end sessions on %s: %w", name, err)
	}
	return nil
}

func schemaExists(ctx context.Context, conn *pgx.Conn, name string) (bool, error) {
	var ok bool
	err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)", name).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("look for schema %s: %w", name, err)
	}
	return ok, nil
}

func ident(parts ...string) string { return pgx.Identifier(parts).Sanitize() }

// checkIn ends a checkout: the claim is released, and a schema beyond
// [PoolSize] is dropped first.
func (r *registry) checkIn(name string, drop bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if drop {
		conn, err := pgx.Connect(ctx, URL())
		if err != nil {
			return fmt.Errorf("connect: %w", err)
		}
		defer conn.Close(ctx)
		if err := endSessions(ctx, conn, name); err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+ident(name)+" CASCADE"); err != nil {
			return fmt.Errorf("drop schema: %w", err)
		}
	}
	return r.release(ctx, name)
}
