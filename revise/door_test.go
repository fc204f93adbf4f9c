package revise_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"

	"github.com/engram-dev/engram/internal/depstest"
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
	// Consolidation keeps its episode features itself (a derived cache, not
	// memory); only erasure and data key rotation forget them.
	"ForgetEpisodeFeatures", "ForgetSealedFeatures",
}

// doorViolations lists the calls to store's writing statements in a Go
// file, other than the write path's and store's own.
func doorViolations(fset *token.FileSet, file *ast.File) []string {
	return depstest.CallsIn(fset, file, "github.com/engram-dev/engram/store", storeWrites, "revise", "store")
}

// Every write to memory goes through package revise: no other package of
// the module, tests aside, calls one of store's writing statements.
func TestOneDoorForEveryWrite(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	violations, files, err := depstest.Calls(root, "github.com/engram-dev/engram/store", storeWrites, "revise", "store")
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
		require.Len(t, doorViolations(fset, f), 1, pkg)
		f.Name.Name = "revise"
		require.Empty(t, doorViolations(fset, f))
	}
}
