package pgtest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// snapshot is what a test can see of a schema: its catalog, the rows of
// every table, where every sequence stands, and the planner statistics.
func snapshot(t *testing.T, ctx context.Context, conn *pgx.Conn, name string) map[string]string {
	t.Helper()
	catalog, err := readCatalog(ctx, conn, name)
	require.NoError(t, err)
	versions, err := readVersions(ctx, conn, name)
	require.NoError(t, err)
	snap := map[string]string{"catalog": strings.Join(catalog, "\n"), "versions": versions}
	rows, err := conn.Query(ctx, "WITH "+tablesCTE+" SELECT relname, relkind FROM rel WHERE relkind IN ('r', 'S')", name)
	require.NoError(t, err)
	var rels [][2]string
	var rel, kind string
	_, err = pgx.ForEachRow(rows, []any{&rel, &kind}, func() error {
		rels = append(rels, [2]string{rel, kind})
		return nil
	})
	require.NoError(t, err)
	for _, r := range rels {
		q := "SELECT count(*)::text || ' ' || coalesce(md5(string_agg(t::text, ',' ORDER BY t::text)), '') FROM " + ident(name, r[0]) + " t"
		if r[0] == versionTable {
			// tstamp is when the migration ran.
			q = "SELECT string_agg(version_id || ' ' || is_applied, ',' ORDER BY id) FROM " + ident(name, r[0])
		}
		if r[1] == "S" {
			q = "SELECT last_value || ' ' || is_called FROM " + ident(name, r[0])
		}
		var v string
		require.NoError(t, conn.QueryRow(ctx, q).Scan(&v))
		snap[r[0]] = v
	}
	var stats string
	require.NoError(t, conn.QueryRow(ctx, "WITH "+tablesCTE+`
		SELECT (SELECT count(*) FROM pg_statistic WHERE starelid = ANY(ARRAY(
		          SELECT oid FROM rel UNION ALL SELECT indexrelid FROM pg_index WHERE indrelid = ANY(ARRAY(SELECT oid FROM rel))))) || ' ' ||
		       (SELECT count(*) FROM rel WHERE relkind = 'r' AND reltuples >= 0)`, name).Scan(&stats))
	snap["statistics"] = stats
	return snap
}

// dirtySQL writes what tests write: rows (to append-only tables too, and
// through triggers), sequence values and planner statistics.
const dirtySQL = `
INSERT INTO tenants (id) VALUES ('acme');
INSERT INTO audit_log (tenant_id, action, actor) VALUES ('acme', 'create', 'test'), ('acme', 'update', 'test');
INSERT INTO records (tenant_id, id, type, status, version, sensitivity, confidence, salience, decay_curve,
	decay_half_life_seconds, last_reinforced_at, provenance, payload, created_at, updated_at)
VALUES ('acme', gen_random_uuid(), 'working', 'active', 1, 'low', 0.5, 1, 'linear', 60, now(), '{}',
	'{"kind": "working"}', now(), now());
SELECT nextval(c.oid) FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'S';
ANALYZE tenants, audit_log, records;`

// catalogChanges are changes tests make to a schema's catalog, each of
// which a checkout must notice.
var catalogChanges = []string{
	"CREATE INDEX extra ON tenants (created_at)",
	"ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only",
	"CREATE OR REPLACE FUNCTION engram_audit_log_guard() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$",
	"CREATE TABLE pair (id int PRIMARY KEY)",
	"DROP INDEX audit_log_by_record",
	"ALTER TABLE records ALTER COLUMN scope SET DEFAULT 'x'",
	"ALTER TABLE tenants DROP CONSTRAINT tenants_id_check",
	"ALTER TABLE audit_log ADD COLUMN extra int",
}

func TestResetRestoresAFreshSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, err := theRegistry()
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, URL())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(ctx) })
	fresh := snapshot(t, ctx, conn, r.template())
	want, err := r.refCatalog()
	require.NoError(t, err)

	// dirty writes rows to a checked-out schema, and then makes changes.
	dirty := func(t *testing.T, name string, changes ...string) {
		cfg, err := pgx.ParseConfig(WithSearchPath(URL(), name))
		require.NoError(t, err)
		test, err := pgx.ConnectConfig(ctx, cfg)
		require.NoError(t, err)
		defer test.Close(ctx)
		_, err = test.Exec(ctx, dirtySQL)
		require.NoError(t, err)
		for _, c := range changes {
			_, err = test.Exec(ctx, c)
			require.NoError(t, err)
		}
		require.NotEqual(t, fresh, snapshot(t, ctx, conn, name), "written to")
	}
	checkout := func(t *testing.T) string {
		_, name, err := r.claim(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, r.release(ctx, name)) })
		_, err = r.prepare(ctx, name)
		require.NoError(t, err)
		require.Equal(t, fresh, snapshot(t, ctx, conn, name), "checked out")
		return name
	}

	t.Run("rows", func(t *testing.T) {
		name := checkout(t)
		dirty(t, name)
		note, err := r.prepare(ctx, name)
		require.NoError(t, err)
		require.Empty(t, note, "rows alone are reset without migrating")
		require.Equal(t, fresh, snapshot(t, ctx, conn, name), "reset")
	})
	// Each change, made in a transaction rolled back after, is noticed by
	// the fingerprint and by the comparison with the template.
	t.Run("each change noticed", func(t *testing.T) {
		name := checkout(t)
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		_, err = tx.Exec(ctx, "SET LOCAL search_path = "+ident(name)+", public")
		require.NoError(t, err)
		for _, c := range catalogChanges {
			_, err := tx.Exec(ctx, "SAVEPOINT change")
			require.NoError(t, err)
			_, err = tx.Exec(ctx, c)
			require.NoError(t, err)
			known, err := r.unchanged(ctx, tx.Conn(), name)
			require.NoError(t, err)
			require.False(t, known, "fingerprint after %s", c)
			got, err := readCatalog(ctx, tx.Conn(), name)
			require.NoError(t, err)
			require.NotEmpty(t, catalogDiff(want, got), "catalog after %s", c)
			_, err = tx.Exec(ctx, "ROLLBACK TO SAVEPOINT change")
			require.NoError(t, err)
			known, err = r.unchanged(ctx, tx.Conn(), name)
			require.NoError(t, err)
			require.True(t, known, "fingerprint after %s rolled back", c)
		}
	})
	t.Run("catalog changed", func(t *testing.T) {
		name := checkout(t)
		dirty(t, name, catalogChanges...)
		note, err := r.prepare(ctx, name)
		require.NoError(t, err)
		require.Contains(t, note, "migrated it again")
		require.Equal(t, fresh, snapshot(t, ctx, conn, name), "reset")
	})
}

func TestCheckoutsDoNotShare(t *testing.T) {
	t.Parallel()
	a, b := NewSchema(t), NewSchema(t)
	require.NotEqual(t, a.Name, b.Name)
	r, err := theRegistry()
	require.NoError(t, err)

	// Another session (another test process) cannot claim either.
	conn, err := pgx.Connect(context.Background(), URL())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	other := &registry{hash: r.hash, conn: conn, held: map[string]bool{}}
	for _, s := range []*Schema{a, b} {
		ok, err := other.tryLock(context.Background(), s.Name)
		require.NoError(t, err)
		require.False(t, ok, "%s is claimed", s.Name)
	}
	_, name, err := other.claim(context.Background())
	require.NoError(t, err)
	require.NotContains(t, []string{a.Name, b.Name}, name)
}

func TestSchemasLeavePublicAlone(t *testing.T) {
	t.Parallel()
	db := NewSchema(t)
	var schema string
	require.NoError(t, db.Pool.QueryRow(context.Background(), "SELECT current_schema()").Scan(&schema))
	require.Equal(t, db.Name, schema)
	var tables int
	require.NoError(t, db.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p')").Scan(&tables))
	require.Zero(t, tables, "no tables in public")
}

// TestHoldSchema is the process TestKilledProcessReleasesItsSchema kills:
// it checks a schema out, writes to it and waits.
func TestHoldSchema(t *testing.T) {
	if os.Getenv("PGTEST_HOLD") == "" {
		t.Skip("run by TestKilledProcessReleasesItsSchema")
	}
	db := NewSchema(t)
	_, err := db.Pool.Exec(context.Background(), dirtySQL)
	require.NoError(t, err)
	os.Stdout.WriteString("holding " + db.Name + "\n")
	<-make(chan struct{})
}

func TestKilledProcessReleasesItsSchema(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a test process")
	}
	t.Parallel()
	ctx := context.Background()
	r, err := theRegistry()
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHoldSchema$", "-test.v")
	cmd.Env = append(os.Environ(), "PGTEST_HOLD=1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var name string
	for lines := bufio.NewScanner(out); name == "" && lines.Scan(); {
		if rest, ok := strings.CutPrefix(lines.Text(), "holding "); ok {
			name = rest
		}
	}
	require.NotEmpty(t, name, "the process checked a schema out")

	r.mu.Lock()
	held, err := r.tryLock(ctx, name)
	r.mu.Unlock()
	require.NoError(t, err)
	require.False(t, held, "%s is claimed while its process lives", name)

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	// The server notices the closed connection on its own time.
	deadline := time.Now().Add(time.Minute)
	for !held && time.Now().Before(deadline) {
		r.mu.Lock()
		if held, err = r.tryLock(ctx, name); held {
			r.held[name] = true
		}
		r.mu.Unlock()
		require.NoError(t, err)
	}
	require.True(t, held, "%s is released when its process dies", name)
	t.Cleanup(func() { require.NoError(t, r.release(ctx, name)) })

	_, err = r.prepare(ctx, name)
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, URL())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(ctx) })
	require.Equal(t, snapshot(t, ctx, conn, r.template()), snapshot(t, ctx, conn, name), "reset")
}

// TestResetRestoresSeededRows proves the reset of a migration set whose
// migrations write rows, on a pool of its own whose template is given one.
func TestResetRestoresSeededRows(t *testing.T) {
	if testing.Short() {
		t.Skip("migrates a pool of its own")
	}
	t.Parallel()
	ctx := context.Background()
	require.NoError(t, extensionOnce())
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	r, err := newRegistry(ctx, hex.EncodeToString(b))
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, name := range []string{r.template(), r.slot(0)} {
			_, err := r.conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+ident(name)+" CASCADE")
			require.NoError(t, err)
		}
		require.NoError(t, r.conn.Close(ctx))
	})
	_, err = r.conn.Exec(ctx, "SET session_replication_role = replica; INSERT INTO "+ident(r.template(), "tenants")+" (id) VALUES ('seeded');"+
		"INSERT INTO "+ident(r.template(), "audit_log")+" (tenant_id, action, actor) VALUES ('seeded', 'create', 'migration'); RESET session_replication_role")
	require.NoError(t, err)
	require.NoError(t, r.open(ctx))
	require.ElementsMatch(t, []string{"tenants", "audit_log"}, keys(r.ref.seeded))

	_, name, err := r.claim(ctx)
	require.NoError(t, err)
	_, err = r.prepare(ctx, name)
	require.NoError(t, err)
	fresh := snapshot(t, ctx, r.conn, r.template())
	require.Equal(t, fresh, snapshot(t, ctx, r.conn, name), "checked out")
	_, err = r.conn.Exec(ctx, "SET search_path = "+ident(name)+", public; "+dirtySQL+"; RESET search_path")
	require.NoError(t, err)
	_, err = r.prepare(ctx, name)
	require.NoError(t, err)
	require.Equal(t, fresh, snapshot(t, ctx, r.conn, name), "reset")
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
