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
