package store

import (
	"context"

	"github.com/engram-dev/engram/internal/pg"
)

// StageVia is [Stage] sending batches of copyMin or more new events with
// COPY, for tests and benchmarks to hold both ways to the same answers.
func StageVia(ctx context.Context, db pg.DBTX, tenant string, cands []Candidate, copyMin int) ([]Staged, error) {
	return stage(ctx, db, tenant, cands, copyMin)
}

// ReferenceSearch is [Search] as it was before a retrieval's layers were
// one statement (search_reference_test.go), for the test that compares
// the two.
var ReferenceSearch = refSearch

// ParallelSearchPassages is the size of tenant whose layers are searched
// at once.
const ParallelSearchPassages = parallelSearchPassages
