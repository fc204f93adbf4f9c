package migrations_test

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pgtest"
)

// schemaFile is the schema the migrations build, as pg_dump prints it,
// checked in so that a reader sees the tables, indexes, functions and
// triggers as they are today without replaying thirty migrations.
const schemaFile = "schema.sql"

// TestSchemaIsCurrent: schema.sql is what the migrations build. After a
// new migration, `make schema` writes it again.
func TestSchemaIsCurrent(t *testing.T) {
	t.Parallel()
	dump := schemaDump(t, pgtest.Template(t))
	if os.Getenv("ENGRAM_WRITE_SCHEMA") != "" {
		require.NoError(t, os.WriteFile(schemaFile, dump, 0o644))
		t.Logf("wrote %s", schemaFile)
		return
	}
	want, err := os.ReadFile(schemaFile)
	require.NoError(t, err)
	if !bytes.Equal(want, dump) {
		t.Fatalf("migrations/%s is not what the migrations build: run `make schema` and commit it\n%s", schemaFile, firstDifference(string(want), string(dump)))
	}
}

// schemaDump is pg_dump's schema-only output for one schema, its name
// written as "engram", without the session settings, comments and blank
// runs that vary from one run or server to the next.
func schemaDump(t *testing.T, schema string) []byte {
	t.Helper()
	pgDump, err := exec.LookPath("pg_dump")
	if err != nil {
		t.Skip("pg_dump is not installed")
	}
	out, err := exec.Command(pgDump, "--schema-only", "--no-owner", "--no-privileges", "--no-comments",
		"--schema="+schema, "--dbname="+pgtest.URL()).Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("pg_dump: %v: %s", err, ee.Stderr)
	}
	require.NoError(t, err)
	var b strings.Builder
	b.WriteString("-- The schema the migrations build, as `pg_dump --schema-only` prints it.\n")
	b.WriteString("-- Written by `make schema`; `make test` checks it is current. Read it;\n")
	b.WriteString("-- change the schema with a new migration, never here.\n")
	blank := true
	for line := range strings.Lines(string(out)) {
		line = strings.TrimRight(line, "\n")
		if strings.HasPrefix(line, "--") || strings.HasPrefix(line, "SET ") || strings.HasPrefix(line, `\restrict`) ||
			strings.HasPrefix(line, `\unrestrict`) || strings.HasPrefix(line, "SELECT pg_catalog.set_config") {
			continue
		}
		line = strings.ReplaceAll(line, schema+".", "")
		line = strings.ReplaceAll(line, schema, "engram")
		if line == "" {
			if blank {
				continue
			}
			blank = true
		} else {
			blank = false
		}
		b.WriteString(line + "\n")
	}
	return []byte(strings.TrimRight(b.String(), "\n") + "\n")
}

// firstDifference shows where two texts first differ, with a little
// context on each side.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + strconv.Itoa(i+1) + ":\n  schema.sql:  " + wl + "\n  migrations:  " + gl
		}
	}
	return ""
}
