package view_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/depstest"
)

// storeReads are package store's statements that read memory — records,
// staged events, threads, reviews with their drafts, artifacts: only the
// read door calls them (and the write path, inside its transactions, and
// store itself), so that every read is opened, filtered by access and
// flagged the one way.
var storeReads = []string{"Get", "GetAsOf", "List", "History", "Audit", "Relations", "AttachFlags",
	"Candidates", "LatestThread", "ListReviews", "GetReviewWithRecord", "GetArtifact"}

// Every read of a record goes through package view: no other package of
// the module, tests aside, calls one of store's record-reading statements.
func TestOneDoorForEveryRead(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	uses, files, err := depstest.Calls(root, "github.com/engram-dev/engram/store", storeReads, "view", "revise", "store")
	require.NoError(t, err)
	require.Greater(t, files, 50, "the walk found the module's files")
	require.Empty(t, uses, "these read records around the read door: go through view")
}

// The check finds a read around the door, however store is imported, and
// lets the doors themselves through.
func TestDoorCheckFindsReadsAround(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "server.go", `package server
import st "github.com/engram-dev/engram/store"
func f() { st.Get(nil, nil, "", id); _ = st.EnsureTenant }`, 0)
	require.NoError(t, err)
	require.Len(t, depstest.CallsIn(fset, f, "github.com/engram-dev/engram/store", storeReads, "view"), 1)
	f.Name.Name = "view"
	require.Empty(t, depstest.CallsIn(fset, f, "github.com/engram-dev/engram/store", storeReads, "view"))
}
