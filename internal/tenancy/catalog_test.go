package tenancy

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/internal/pgtest"
)

// globalTables are the tables that do not carry the tenant, and why. Under
// Citus each is a reference table (copied to every node) or stays on the
// coordinator; none may be referenced by a tenant table's foreign key
// except tenants, the distribution key's own table.
var globalTables = map[string]string{
	"tenants":            "the tenants themselves: a reference table, which every tenant table's foreign key may point at",
	"api_keys":           "keys are looked up by hash before the tenant is known, and operator keys have none: a reference table",
	"job_runs":           "the periodic jobs run across every tenant on the leader: operator state, on the coordinator",
	"job_cursors":        "a job's resume point across every tenant: operator state, on the coordinator",
	"compliance_reports": "the retention job's report across every tenant: operator state, on the coordinator",
	"goose_db_version":   "the schema's migration version: one per database",
}

// TestCatalogCarriesTheTenant reads the catalog of a freshly migrated
// schema and holds every table to the rules a tenant-keyed distribution
// needs (Citus distributes a table by one column, and requires it in every
// primary key and unique index, and co-locates two tables' rows only when
// a foreign key between them includes it on both sides):
//   - every table is a tenant table (a NOT NULL tenant_id) or in
//     globalTables;
//   - a tenant table's primary key, unique constraints and unique indexes
//     include tenant_id; its exclusion constraints compare it with =;
//   - a foreign key from a tenant table to another tenant table pairs
//     tenant_id with tenant_id; from a tenant table to a global table, it
//     points at tenants; a global table points at no tenant table.
func TestCatalogCarriesTheTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pgtest.NewSchema(t)
	bad, all := catalogViolations(t, ctx, s.Pool, s.Name)
	require.Empty(t, bad, "the schema must stay distributable by tenant_id (docs/operations/scaling.md)")
	for name := range globalTables {
		require.Contains(t, all, name, "globalTables names a table the schema does not have")
	}
}

// TestCatalogRulesCatchViolations adds, in a transaction rolled back, one
// table breaking each rule, and holds the check to finding each.
func TestCatalogRulesCatchViolations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pgtest.NewSchema(t)
	tx, err := s.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `
CREATE TABLE untenanted (id bigint PRIMARY KEY);
CREATE TABLE bad_pk (tenant_id text NOT NULL, id bigint PRIMARY KEY);
CREATE TABLE bad_unique (tenant_id text NOT NULL, id bigint, name text UNIQUE, PRIMARY KEY (tenant_id, id));
CREATE TABLE bad_fk (tenant_id text NOT NULL, id bigint, record_tenant text, record_id uuid,
  PRIMARY KEY (tenant_id, id), FOREIGN KEY (record_tenant, record_id) REFERENCES records (tenant_id, id));
CREATE TABLE bad_global_fk (id bigint PRIMARY KEY, tenant_id text NOT NULL, rid uuid);
ALTER TABLE bad_global_fk DROP COLUMN tenant_id;
ALTER TABLE bad_global_fk ADD COLUMN t text, ADD FOREIGN KEY (t, rid) REFERENCES records (tenant_id, id);`)
	require.NoError(t, err)
	bad, _ := catalogViolations(t, ctx, tx, s.Name)
	joined := strings.Join(bad, "\n")
	for _, want := range []string{
		"untenanted: no tenant_id", "bad_pk: unique index bad_pk_pkey", "bad_unique: unique index bad_unique_name_key",
		"bad_fk: foreign key bad_fk_record_tenant_record_id_fkey to records does not pair",
		"bad_global_fk: global table's foreign key",
	} {
		require.Contains(t, joined, want)
	}
}

// catalogViolations reads the catalog of schema and holds every table to
// the rules a tenant-keyed distribution needs (Citus distributes a table by
// one column, and requires it in every primary key and unique index, and
// co-locates two tables' rows only when a foreign key between them includes
// it on both sides):
//   - every table is a tenant table (a NOT NULL tenant_id) or in
//     globalTables;
//   - a tenant table's primary key, unique constraints and unique indexes
//     include tenant_id; its exclusion constraints compare it with =;
//   - a foreign key from a tenant table to another tenant table pairs
//     tenant_id with tenant_id; from a tenant table to a global table, it
//     points at tenants; a global table points at no tenant table.
//
// It returns what breaks a rule, and every table but partitions.
func catalogViolations(t *testing.T, ctx context.Context, db pg.DBTX, schema string) (bad, all []string) {
	t.Helper()
	tenantTables, all := tables(t, ctx, db, schema)
	for _, name := range all {
		if _, ok := tenantTables[name]; !ok && globalTables[name] == "" {
			bad = append(bad, name+": no tenant_id NOT NULL column, and not a listed global table")
		}
	}

	// Unique constraints and indexes (a primary key is one).
	rows, err := db.Query(ctx, `
SELECT c.relname, i.relname, ix.indisprimary,
       array(SELECT a.attname FROM unnest(ix.indkey) k JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k)
FROM pg_index ix
JOIN pg_class c ON c.oid = ix.indrelid
JOIN pg_class i ON i.oid = ix.indexrelid
WHERE c.relnamespace = $1::regnamespace AND ix.indisunique AND c.relkind IN ('r', 'p') AND NOT c.relispartition`, schema)
	require.NoError(t, err)
	for rows.Next() {
		var table, index string
		var primary bool
		var cols []string
		require.NoError(t, rows.Scan(&table, &index, &primary, &cols))
		if _, ok := tenantTables[table]; ok && !contains(cols, "tenant_id") {
			bad = append(bad, table+": unique index "+index+" ("+strings.Join(cols, ", ")+") lacks tenant_id")
		}
	}
	require.NoError(t, rows.Err())

	// Foreign keys and exclusion constraints.
	rows, err = db.Query(ctx, `
SELECT c.conname, c.contype, src.relname, coalesce(dst.relname, ''),
       array(SELECT a.attname FROM unnest(c.conkey) WITH ORDINALITY k(n, o) JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.o),
       array(SELECT a.attname FROM unnest(c.confkey) WITH ORDINALITY k(n, o) JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.o),
       coalesce(array(SELECT o::regoper::text FROM unnest(c.conexclop) o), '{}')
FROM pg_constraint c
JOIN pg_class src ON src.oid = c.conrelid
LEFT JOIN pg_class dst ON dst.oid = c.confrelid
WHERE src.relnamespace = $1::regnamespace AND c.contype IN ('f', 'x') AND NOT src.relispartition AND c.conparentid = 0`, schema)
	require.NoError(t, err)
	for rows.Next() {
		var name, kind, src, dst string
		var cols, refCols, ops []string
		require.NoError(t, rows.Scan(&name, &kind, &src, &dst, &cols, &refCols, &ops))
		_, srcTenant := tenantTables[src]
		_, dstTenant := tenantTables[dst]
		switch {
		case kind == "x":
			i := index(cols, "tenant_id")
			if srcTenant && (i < 0 || !strings.HasSuffix(ops[i], "=")) {
				bad = append(bad, src+": exclusion constraint "+name+" does not compare tenant_id with =")
			}
		case srcTenant && dstTenant:
			i := index(cols, "tenant_id")
			if i < 0 || refCols[i] != "tenant_id" {
				bad = append(bad, src+": foreign key "+name+" to "+dst+" does not pair tenant_id with tenant_id")
			}
		case srcTenant && dst != "tenants":
			bad = append(bad, src+": foreign key "+name+" points at global table "+dst+" (only tenants may be pointed at)")
		case !srcTenant && dstTenant:
			bad = append(bad, src+": global table's foreign key "+name+" points at tenant table "+dst)
		}
	}
	require.NoError(t, rows.Err())
	return bad, all
}

// tables returns the schema's tenant tables (a NOT NULL tenant_id), each
// with its partitions, and the names of all its tables but partitions.
func tables(t *testing.T, ctx context.Context, db pg.DBTX, schema string) (tenant map[string][]string, all []string) {
	t.Helper()
	rows, err := db.Query(ctx, `
SELECT c.relname, c.relispartition, coalesce(p.relname, ''),
       EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND a.attnotnull AND NOT a.attisdropped)
FROM pg_class c
LEFT JOIN pg_inherits i ON i.inhrelid = c.oid
LEFT JOIN pg_class p ON p.oid = i.inhparent
WHERE c.relnamespace = $1::regnamespace AND c.relkind IN ('r', 'p')
ORDER BY c.relispartition, c.relname`, schema)
	require.NoError(t, err)
	type row struct {
		name, parent     string
		partition, keyed bool
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.name, &x.partition, &x.parent, &x.keyed)
		return x, err
	})
	require.NoError(t, err)
	tenant = map[string][]string{}
	for _, r := range list {
		switch {
		case r.partition:
			if _, ok := tenant[r.parent]; ok {
				tenant[r.parent] = append(tenant[r.parent], r.name)
			}
		default:
			all = append(all, r.name)
			if r.keyed {
				tenant[r.name] = nil
			}
		}
	}
	return tenant, all
}

func contains(s []string, v string) bool { return index(s, v) >= 0 }

func index(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
