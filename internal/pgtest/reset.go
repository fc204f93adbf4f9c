package pgtest

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// state is what a reset compares and restores: a schema's goose rows,
// which of its tables hold rows, and where its sequences stand.
type state struct {
	versions  string
	seeded    map[string][]string // table → its insertable columns
	sequences map[string]sequence
}

// sequence is where a sequence stands: its last value, nil before its
// first, and where it starts.
type sequence struct {
	last  *int64
	start int64
}

func (s sequence) is(o sequence) bool {
	return s.start == o.start && (s.last == nil) == (o.last == nil) && (s.last == nil || *s.last == *o.last)
}

// prepare makes the claimed schema name what a fresh migration makes: the
// template's catalog, rows and sequences.
//
// Comparing catalogs costs a second or more on a database whose catalog
// tables are bloated by thousands of dropped schemas (autovacuum is off on
// the CI machine), so a reset leaves a fingerprint of the schema's catalog
// rows (their xmin changes with every DDL) in the schema's comment, and a
// checkout that finds the catalog unchanged since skips the comparison,
// and goose. Otherwise the schema is migrated up and compared with the
// template; a schema whose catalog a test changed (an index built, a
// function replaced) is dropped and migrated again, and prepare says so.
func (r *registry) prepare(ctx context.Context, name string) (string, error) {
	conn, err := pgx.Connect(ctx, URL())
	if err != nil {
		return "", fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// A daemon a killed test process started may still be writing here.
	if err := endSessions(ctx, conn, name); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+ident(name)); err != nil {
		return "", fmt.Errorf("create schema: %w", err)
	}
	known, err := r.unchanged(ctx, conn, name)
	if err != nil {
		return "", err
	}
	var note string
	if !known {
		if note, err = r.verify(ctx, conn, name); err != nil {
			return "", err
		}
	}
	truncated, err := r.reset(ctx, conn, name)
	if err != nil {
		return "", err
	}
	if !known || truncated {
		return note, mark(ctx, conn, name)
	}
	return note, nil
}

// mark leaves the fingerprint of name's catalog in its comment.
func mark(ctx context.Context, conn *pgx.Conn, name string) error {
	const sql = `
WITH RECURSIVE ` + objectsCTE + `
SELECT format('COMMENT ON SCHEMA %I IS %L', $1::text, (` + fingerprintSQL + `))`
	var comment string
	if err := conn.QueryRow(ctx, sql, name).Scan(&comment); err != nil {
		return fmt.Errorf("fingerprint schema %s: %w", name, err)
	}
	if _, err := conn.Exec(ctx, comment); err != nil {
		return fmt.Errorf("mark schema %s: %w", name, err)
	}
	return nil
}

// unchanged reports whether name's catalog is as its last reset left it,
// and its migrations the template's.
func (r *registry) unchanged(ctx context.Context, conn *pgx.Conn, name string) (bool, error) {
	const sql = `
WITH RECURSIVE ` + objectsCTE + `
SELECT coalesce(obj_description((SELECT oid FROM pg_namespace WHERE nspname = $1), 'pg_namespace') = (` + fingerprintSQL + `), false)`
	var same bool
	if err := conn.QueryRow(ctx, sql, name).Scan(&same); err != nil {
		return false, fmt.Errorf("fingerprint schema %s: %w", name, err)
	}
	if !same {
		return false, nil
	}
	versions, err := readVersions(ctx, conn, name)
	if err != nil {
		return false, err
	}
	return versions == r.ref.versions, nil
}

// verify migrates name up and compares its catalog with the template's,
// dropping and migrating it again when they differ, which it says.
func (r *registry) verify(ctx context.Context, conn *pgx.Conn, name string) (string, error) {
	want, err := r.refCatalog()
	if err != nil {
		return "", fmt.Errorf("read template: %w", err)
	}
	var note string
	for {
		if err := migrate(ctx, name); err != nil {
			return "", err
		}
		got, err := readCatalog(ctx, conn, name)
		if err != nil {
			return "", err
		}
		versions, err := readVersions(ctx, conn, name)
		if err != nil {
			return "", err
		}
		diff := catalogDiff(want, got)
		if versions != r.ref.versions {
			diff = "migrations applied: " + versions + ", want " + r.ref.versions
		}
		switch {
		case diff == "":
			return note, nil
		case note != "":
			return "", fmt.Errorf("schema %s, freshly migrated, differs from template %s: %s", name, r.template(), diff)
		}
		note = "schema " + name + " differed from a fresh one (" + diff + "); migrated it again"
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+ident(name)+" CASCADE; CREATE SCHEMA "+ident(name)); err != nil {
			return "", fmt.Errorf("recreate schema: %w", err)
		}
	}
}

// reset empties the tables a test wrote (and those the template has rows
// in, copying its rows back), rewinds the sequences to the template's, and
// forgets the planner statistics of the test's rows; it reports whether it
// truncated, which changes the catalog. Replica mode skips the triggers
// that keep audit tables append-only and check foreign keys: a reset is no
// application's write.
//
// TRUNCATE leaves a table as a migration made it, but it costs a new file
// for the table and each of its indexes, and takes along every table whose
// foreign keys point at it: seconds for the whole schema. A small table a
// test wrote a few rows to is emptied by DELETE instead: the planner cannot tell its few dead pages from the
// empty table it assumes for one never vacuumed. A large one, or one
// vacuumed or analysed, is truncated.
func (r *registry) reset(ctx context.Context, conn *pgx.Conn, name string) (bool, error) {
	const writtenSQL = `
WITH ` + tablesCTE + `
SELECT relname, pg_relation_size(oid) > $4 * current_setting('block_size')::int OR reltuples >= 0
FROM rel
WHERE relkind = 'r' AND relname <> $2 AND (pg_relation_size(oid) > 0 OR reltuples >= 0 OR relname = ANY($3))
ORDER BY 1`
	// The planner takes a table never vacuumed for one of 10 pages when
	// it has fewer (PostgreSQL's estimate_rel_size).
	const smallPages = 9
	seeded := make([]string, 0, len(r.ref.seeded))
	for t := range r.ref.seeded {
		seeded = append(seeded, t)
	}
	rows, err := conn.Query(ctx, writtenSQL, name, versionTable, seeded, smallPages)
	if err != nil {
		return false, fmt.Errorf("find written tables: %w", err)
	}
	var truncate, del []string
	var table string
	var large bool
	_, err = pgx.ForEachRow(rows, []any{&table, &large}, func() error {
		if large {
			truncate = append(truncate, table)
		} else {
			del = append(del, table)
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("find written tables: %w", err)
	}
	sequences, err := readSequences(ctx, conn, name)
	if err != nil {
		return false, err
	}
	// Statistics are only of tables analysed, which are truncated.
	const forgetStatsSQL = `
WITH ` + tablesCTE + `, t AS (SELECT oid FROM rel WHERE relname = ANY($2))
DELETE FROM pg_statistic WHERE starelid = ANY(ARRAY(
  SELECT oid FROM t UNION ALL SELECT indexrelid FROM pg_index WHERE indrelid = ANY(ARRAY(SELECT oid FROM t))))`
	const resetCountersSQL = `
WITH ` + tablesCTE + `, t AS (SELECT oid FROM rel WHERE relname = ANY($2))
SELECT count(pg_stat_reset_single_table_counters(oid)) FROM (
  SELECT oid FROM t UNION ALL SELECT indexrelid FROM pg_index WHERE indrelid = ANY(ARRAY(SELECT oid FROM t))) s`
	batch := &pgx.Batch{}
	batch.Queue("BEGIN")
	batch.Queue("SET LOCAL session_replication_role = replica")
	if len(truncate) > 0 {
		tables := make([]string, len(truncate))
		for i, t := range truncate {
			tables[i] = ident(name, t)
		}
		batch.Queue("TRUNCATE " + strings.Join(tables, ", ") + " CASCADE")
		batch.Queue(forgetStatsSQL, name, truncate)
	}
	for _, t := range del {
		batch.Queue("DELETE FROM " + ident(name, t))
	}
	for t, cols := range r.ref.seeded {
		list := make([]string, len(cols))
		for i, c := range cols {
			list[i] = ident(c)
		}
		l := strings.Join(list, ", ")
		batch.Queue("INSERT INTO " + ident(name, t) + " (" + l + ") OVERRIDING SYSTEM VALUE SELECT " + l + " FROM " + ident(r.template(), t))
	}
	for seq, s := range sequences {
		switch want := r.ref.sequences[seq]; {
		case want.is(s):
		case want.last == nil:
			batch.Queue("SELECT setval($1::text::regclass, $2, false)", ident(name, seq), want.start)
		default:
			batch.Queue("SELECT setval($1::text::regclass, $2, true)", ident(name, seq), *want.last)
		}
	}
	if written := append(truncate, del...); len(written) > 0 {
		batch.Queue(resetCountersSQL, name, written)
	}
	batch.Queue("COMMIT")
	if err := conn.SendBatch(ctx, batch).Close(); err != nil {
		return false, fmt.Errorf("reset schema %s: %w", name, err)
	}
	return len(truncate) > 0, nil
}

// readState reads the template's state.
func readState(ctx context.Context, conn *pgx.Conn, name string) (*state, error) {
	st := &state{seeded: map[string][]string{}}
	var err error
	if st.versions, err = readVersions(ctx, conn, name); err != nil {
		return nil, err
	}
	if st.sequences, err = readSequences(ctx, conn, name); err != nil {
		return nil, err
	}
	const tablesSQL = `
WITH ` + tablesCTE + `
SELECT rel.relname, array_agg(a.attname ORDER BY a.attnum) FILTER (WHERE a.attgenerated = '')
FROM rel JOIN pg_attribute a ON a.attrelid = rel.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE rel.relkind = 'r' AND rel.relname <> $2
GROUP BY rel.relname`
	rows, err := conn.Query(ctx, tablesSQL, name, versionTable)
	if err != nil {
		return nil, fmt.Errorf("read tables of %s: %w", name, err)
	}
	tables := map[string][]string{}
	var table string
	var cols []string
	_, err = pgx.ForEachRow(rows, []any{&table, &cols}, func() error {
		tables[table] = cols
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read tables of %s: %w", name, err)
	}
	for t, cols := range tables {
		var has bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM "+ident(name, t)+")").Scan(&has); err != nil {
			return nil, fmt.Errorf("read %s.%s: %w", name, t, err)
		}
		if has {
			st.seeded[t] = cols
		}
	}
	return st, nil
}

func readVersions(ctx context.Context, conn *pgx.Conn, name string) (string, error) {
	var versions string
	err := conn.QueryRow(ctx, "SELECT coalesce(string_agg(version_id || ':' || is_applied, ',' ORDER BY id), '') FROM "+ident(name, versionTable)).Scan(&versions)
	if err != nil {
		return "", fmt.Errorf("read versions of %s: %w", name, err)
	}
	return versions, nil
}

// readSequences reads where name's sequences stand.
func readSequences(ctx context.Context, conn *pgx.Conn, name string) (map[string]sequence, error) {
	const sql = `
WITH ` + tablesCTE + `
SELECT rel.relname, pg_sequence_last_value(rel.oid), s.seqstart
FROM rel JOIN pg_sequence s ON s.seqrelid = rel.oid`
	rows, err := conn.Query(ctx, sql, name)
	if err != nil {
		return nil, fmt.Errorf("read sequences of %s: %w", name, err)
	}
	seqs := map[string]sequence{}
	var seq string
	var last pgtype.Int8
	var start int64
	_, err = pgx.ForEachRow(rows, []any{&seq, &last, &start}, func() error {
		s := sequence{start: start}
		if last.Valid {
			v := last.Int64
			s.last = &v
		}
		seqs[seq] = s
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read sequences of %s: %w", name, err)
	}
	return seqs, nil
}

func readCatalog(ctx context.Context, conn *pgx.Conn, name string) ([]string, error) {
	rows, err := conn.Query(ctx, catalogSQL, name)
	if err != nil {
		return nil, fmt.Errorf("read catalog of %s: %w", name, err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read catalog of %s: %w", name, err)
	}
	return lines, nil
}

// catalogDiff names what differs between the sorted catalogs want and got,
// or returns "" when they are the same.
func catalogDiff(want, got []string) string {
	if slices.Equal(want, got) {
		return ""
	}
	var extra, missing []string
	for _, l := range got {
		if _, found := slices.BinarySearch(want, l); !found {
			extra = append(extra, l)
		}
	}
	for _, l := range want {
		if _, found := slices.BinarySearch(got, l); !found {
			missing = append(missing, l)
		}
	}
	return fmt.Sprintf("extra %q, missing %q", first(extra), first(missing))
}

// first keeps an error message short.
func first(lines []string) []string {
	if len(lines) > 5 {
		return append(lines[:5:5], fmt.Sprintf("and %d more", len(lines)-5))
	}
	return lines
}

// The queries below find a schema's objects through pg_depend's index
// rather than by scanning pg_class, pg_attribute and the rest for the
// namespace: on a database where thousands of schemas were dropped with
// autovacuum off, those scans take seconds.

// objectsCTE is obj(classid, objid): every object in schema $1 and every
// object depending on one (an index, a trigger, a constraint, a column
// default), named as pg_depend names them.
const objectsCTE = `obj(classid, objid) AS (
  SELECT classid, objid FROM pg_depend
  WHERE refclassid = 'pg_namespace'::regclass AND refobjid = (SELECT oid FROM pg_namespace WHERE nspname = $1)
  UNION
  SELECT d.classid, d.objid FROM pg_depend d JOIN obj o ON d.refclassid = o.classid AND d.refobjid = o.objid
)`

// tablesCTE is rel: the pg_class rows of schema $1's tables, sequences and
// views (not its indexes).
const tablesCTE = `rel AS (
  SELECT * FROM pg_class WHERE oid = ANY(ARRAY(
    SELECT objid FROM pg_depend
    WHERE refclassid = 'pg_namespace'::regclass AND classid = 'pg_class'::regclass
      AND refobjid = (SELECT oid FROM pg_namespace WHERE nspname = $1))))`

// fingerprintSQL hashes the identity and row version (xmin) of the catalog
// rows of the objects in obj: any DDL on them changes it.
const fingerprintSQL = `SELECT md5(string_agg(x, ',' ORDER BY x)) FROM (
  SELECT 'o ' || classid || ' ' || objid FROM obj
  UNION ALL SELECT 'c ' || oid || ' ' || xmin FROM pg_class WHERE oid = ANY(ARRAY(SELECT objid FROM obj WHERE classid = 'pg_class'::regclass))
  UNION ALL SELECT 'a ' || attrelid || ' ' || attnum || ' ' || xmin FROM pg_attribute WHERE attrelid = ANY(ARRAY(SELECT objid FROM obj WHERE classid = 'pg_class'::regclass))
  UNION ALL SELECT 'i ' || indexrelid || ' ' || xmin FROM pg_index WHERE indexrelid = ANY(ARRAY(SELECT objid FROM obj WHERE classid = 'pg_class'::regclass))
  UNION ALL SELECT 's ' || seqrelid || ' ' || xmin FROM pg_sequence WHERE seqrelid = ANY(ARRAY(SELECT objid FROM obj WHERE classid = 'pg_class'::regclass))
  UNION ALL SELECT 'p ' || oid || ' ' || xmin FROM pg_proc WHERE oid = ANY(ARRAY(SELECT objid FROM obj WHERE classid = 'pg_proc'::regclass))
  UNION ALL SELECT 'y ' || oid || ' ' || xmin FROM pg_type WHERE oid = ANY(ARRAY(SELECT objid FROM obj WHERE classid = 'pg_type'::regclass))
  UNION ALL SELECT 'k ' || oid || ' ' || xmin FROM pg_constraint WHERE oid = ANY(ARRAY(SELECT objid FROM obj WHERE classid = 'pg_constraint'::regclass))
  UNION ALL SELECT 't ' || oid || ' ' || xmin FROM pg_trigger WHERE oid = ANY(ARRAY(SELECT objid FROM obj WHERE classid = 'pg_trigger'::regclass))
  UNION ALL SELECT 'd ' || oid || ' ' || xmin FROM pg_attrdef WHERE oid = ANY(ARRAY(SELECT objid FROM obj WHERE classid = 'pg_attrdef'::regclass))
  UNION ALL SELECT 'r ' || oid || ' ' || xmin FROM pg_rewrite WHERE oid = ANY(ARRAY(SELECT objid FROM obj WHERE classid = 'pg_rewrite'::regclass))
  UNION ALL SELECT 'l ' || oid || ' ' || xmin FROM pg_policy WHERE oid = ANY(ARRAY(SELECT objid FROM obj WHERE classid = 'pg_policy'::regclass))
) s(x)`

// catalogSQL lists what a schema's migrations made, one line an object,
// with the schema's name taken out (definitions name it), in byte order:
// relations, columns, indexes, constraints, triggers (and whether each is
// enabled), functions, types, sequences, rules and policies. Long
// definitions are hashed.
const catalogSQL = `
WITH RECURSIVE ` + objectsCTE + `,
rel AS (
  SELECT * FROM pg_class WHERE oid = ANY(ARRAY(SELECT objid FROM obj WHERE classid = 'pg_class'::regclass))
    AND relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = $1) -- not TOAST's
),
lines(line) AS (
  SELECT concat_ws(' ', 'relation', relname, relkind, relpersistence, relrowsecurity, array_to_string(reloptions, ','))
  FROM rel
  UNION ALL
  SELECT concat_ws(' ', 'column', c.relname, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod),
         a.attnotnull, a.attidentity, a.attgenerated, pg_get_expr(d.adbin, d.adrelid))
  FROM pg_attribute a JOIN rel c ON c.oid = a.attrelid
  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
  WHERE a.attrelid = ANY(ARRAY(SELECT oid FROM rel)) AND a.attnum > 0 AND NOT a.attisdropped
  UNION ALL
  SELECT concat_ws(' ', 'index', relname, i.indisvalid, md5(replace(pg_get_indexdef(i.indexrelid), $1, '~')))
  FROM pg_index i JOIN rel c ON c.oid = i.indexrelid
  WHERE i.indexrelid = ANY(ARRAY(SELECT oid FROM rel))
  UNION ALL
  SELECT concat_ws(' ', 'constraint', conname, conrelid::regclass, convalidated, md5(replace(pg_get_constraintdef(oid), $1, '~')))
  FROM pg_constraint WHERE oid = ANY(ARRAY(SELECT objid FROM obj WHERE classid = 'pg_constraint'::regclass))
  UNION ALL
  SELECT concat_ws(' ', 'trigger', tgname, tgrelid::regclass, tgenabled, md5(replace(pg_get_triggerdef(oid), $1, '~')))
  FROM pg_trigger WHERE oid = ANY(ARRAY(SELECT objid FROM obj WHERE classid = 'pg_trigger'::regclass)) AND NOT tgisinternal
  UNION ALL
  SELECT concat_ws(' ', 'function', oid::regprocedure, prokind,
         CASE WHEN prokind IN ('f', 'p') THEN md5(replace(pg_get_functiondef(oid), $1, '~')) END)
  FROM pg_proc WHERE oid = ANY(ARRAY(SELECT objid FROM obj WHERE classid = 'pg_proc'::regclass))
  UNION ALL
  SELECT concat_ws(' ', 'type', t.typname, t.typtype,
         (SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid))
  FROM pg_type t WHERE t.oid = ANY(ARRAY(SELECT objid FROM obj WHERE classid = 'pg_type'::regclass))
  UNION ALL
  SELECT concat_ws(' ', 'sequence', c.relname, s.seqtypid::regtype, s.seqstart, s.seqincrement, s.seqmin, s.seqmax, s.seqcycle)
  FROM pg_sequence s JOIN rel c ON c.oid = s.seqrelid
  WHERE s.seqrelid = ANY(ARRAY(SELECT oid FROM rel))
  UNION ALL
  SELECT concat_ws(' ', 'rule', ev_class::regclass, rulename, md5(replace(pg_get_ruledef(oid), $1, '~')))
  FROM pg_rewrite WHERE oid = ANY(ARRAY(SELECT objid FROM obj WHERE classid = 'pg_rewrite'::regclass))
  UNION ALL
  SELECT concat_ws(' ', 'policy', polrelid::regclass, polname,
         md5(replace(concat(pg_get_expr(polqual, polrelid), ' ', pg_get_expr(polwithcheck, polrelid)), $1, '~')))
  FROM pg_policy WHERE oid = ANY(ARRAY(SELECT objid FROM obj WHERE classid = 'pg_policy'::regclass))
)
SELECT l FROM (SELECT replace(line, $1, '~') AS l FROM lines) s ORDER BY l COLLATE "C"`
