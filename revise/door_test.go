package revise_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// storeWrites are package store's statements that change memory — records,
// their versions, relations, audit entries, episode entries, feedback,
// artifacts and flags — or lock records to change them. Only the write
// path calls them (write-path RFC §12.1.1: one door).
var storeWrites = []string{
	"InsertRecord", "InsertNew", "UpdateRecord", "Lock", "LockMany", "LockByID",
	"AddRelation", "AddRelations", "InsertAudit", "AuditEach",
	"InsertEntries", "ReviseEpisodes", "CompressEpisode",
	"RecordFeedback", "Reinforce", "ReviseFeedback",
	"Expire", "PurgeExpired", "PurgeRecord", "StampProfiles",
	"ExpirePastRetention", "PurgePastRetention",
	"PutArtifact", "InsertProvenance", "MarkTampered",
	"InsertFlags", "ClearFlags",
	"InsertReview", "LockReview", "DecideReview", "EscalateReviews",
	"AddReputation",
	// Leases (write-path RFC §12.8.3): granted, renewed and released only
	// through the write path, which fences writes with them.
	"LockLeaseResource", "LockLease", "LockLeaseByID", "NextFencingToken",
	"InsertLease", "ReplaceLease", "ExtendLease", "ReleaseLease",
	"InsertErasure", "UpdateErasure", "EraseRecords", "DeleteCandidates", "DeleteAuditEntries",
	"DeleteArtifacts", "ScrubRetrievals", "DeleteReputation", "ReplaceProvenance", "InsertTenantAudit",
	"ArtifactsToReseal", "ResealArtifacts",
}

// doorViolations lists the calls to store's writing statements in a Go
// file of package pkg, other than the write path's and store's own.
func doorViolations(fset *token.FileSet, file *ast.File, pkg string) []string {
	if pkg == "revise" || pkg == "store" {
		return nil
	}
	local := ""
	for _, imp := range file.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if path != "github.com/engram-dev/engram/store" {
			continue
		}
		local = "store"
		if imp.Name != nil {
			local = imp.Name.Name
		}
	}
	if local == "" {
		return nil
	}
	var out []string
	ast.Inspect(file, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && id.Name == local && slices.Contains(storeWrites, sel.Sel.Name) {
			out = append(out, fset.Position(sel.Pos()).String()+": store."+sel.Sel.Name)
		}
		return true
	})
	return out
}

// Every write to memory goes through package revise: no other package of
// the module, tests aside, calls one of store's writing statements.
func TestOneDoorForEveryWrite(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var violations []string
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		violations = append(violations, doorViolations(fset, f, f.Name.Name)...)
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, files, 50, "the walk found the module's files")
	require.Empty(t, violations, "these write around the write path: go through revise")
}

// The check finds a write around the door, however store is imported.
func TestDoorCheckFindsWritesAround(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	for pkg, src := range map[string]string{
		"server": `package server
import "github.com/engram-dev/engram/store"
func f() { _ = store.InsertRecord; _ = store.Get }`,
		"decay": `package decay
import st "github.com/engram-dev/engram/store"
func f() { st.Reinforce(nil, nil, "", t, nil, nil) }`,
	} {
		f, err := parser.ParseFile(fset, pkg+".go", src, 0)
		require.NoError(t, err)
		v := doorViolations(fset, f, pkg)
		require.Len(t, v, 1, pkg)
		require.Len(t, doorViolations(fset, f, "revise"), 0)
	}
}
