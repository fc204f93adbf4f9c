package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/logtest"
	"github.com/engram-dev/engram/internal/openaitest"
	"github.com/engram-dev/engram/internal/pgtest"
)

// denseConfig configures an OpenAI-compatible embedder of 48 dimensions at
// url.
func denseConfig(url string) string {
	return "embedding:\n  provider: openai\n  openai:\n    base_url: " + url + "\n    model: nomic-embed-text\n    dims: 48\n"
}

// denseIndexes counts the valid engram dense indexes of db's record_vectors.
func denseIndexes(t *testing.T, db *pgtest.Schema) int {
	t.Helper()
	n, err := countDenseIndexes(db)
	require.NoError(t, err)
	return n
}

// countDenseIndexes is denseIndexes for a poll, which must not fail the
// test from its goroutine.
func countDenseIndexes(db *pgtest.Schema) (int, error) {
	var n int
	err := db.Pool.QueryRow(context.Background(), `
		SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE c.relnamespace = current_schema()::regnamespace AND i.indisvalid
			AND obj_description(c.oid, 'pg_class') LIKE 'engram dense vector index: openai:nomic-embed-text:48, vector(48), cosine, %'`).Scan(&n)
	return n, err
}

// `engramd migrate` with an OpenAI-compatible embedder builds the HNSW
// index of its vectors, one per searched type on each of record_vectors' 16
// partitions, and says so; a second run finds it made.
func TestMigrateBuildsTheDenseIndex(t *testing.T) {
	t.Parallel()
	bin := buildEngramd(t)
	db := pgtest.NewSchema(t)
	conf := filepath.Join(t.TempDir(), "engram.yaml")
	require.NoError(t, os.WriteFile(conf, []byte(denseConfig("http://127.0.0.1:9/v1")), 0o600))
	migrate := func() string {
		cmd := exec.Command(bin, "migrate")
		cmd.Env = append(os.Environ(), "DATABASE_URL="+db.URL, "ENGRAM_CONFIG="+conf, "ENGRAM_LOG_LEVEL=info")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		return string(out)
	}
	out := migrate()
	require.Contains(t, out, "building the HNSW index of dense vectors")
	require.Contains(t, out, "HNSW index of dense vectors ready")
	require.Equal(t, 64, denseIndexes(t, db))
	out = migrate()
	require.NotContains(t, out, "building the HNSW index")
	require.Equal(t, 64, denseIndexes(t, db))
}

// `engramd run` builds a missing index in the background: it serves at once,
// and the index appears.
func TestRunBuildsTheDenseIndexInTheBackground(t *testing.T) {
	t.Parallel()
	bin := buildEngramd(t)
	db := pgtest.NewSchema(t)
	srv := openaitest.NewEmbeddingServer(t, openaitest.BagOfWords(48))
	var log logtest.Buffer
	startWithYAML(t, bin, db, denseConfig(srv.URL), &log)
	require.Eventually(t, func() bool { n, err := countDenseIndexes(db); return err == nil && n == 64 }, 60*time.Second, 100*time.Millisecond,
		"the index is built; log:\n%s", log.String())
	require.Eventually(t, func() bool { return strings.Contains(log.String(), "HNSW index of dense vectors ready") },
		10*time.Second, 50*time.Millisecond)
}
