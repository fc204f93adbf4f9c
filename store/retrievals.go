package store

import (
	"context"
	"fmt"
	"time"

	"github.com/engram-dev/engram/internal/pg"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Retrieval is one logged answer of the retrieval API (substrate RFC §14,
// §15.6): which records it returned, so that feedback on it reinforces
// exactly those. It holds ids and counts, never the task's text.
type Retrieval struct {
	ID          uuid.UUID
	At          time.Time
	AgentID     string
	ThreadID    string
	RecordIDs   []uuid.UUID
	Withheld    int
	LexicalOnly bool
}

const insertRetrievalSQL = `
INSERT INTO retrievals (tenant_id, id, at, agent_id, thread_id, record_ids, withheld, lexical_only)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`

// LogRetrieval logs a retrieval. Its commit does not wait for the disk
// (synchronous_commit off, for this transaction only): the log serves
// feedback and metrics, and a crash can lose at most the last moments of
// it, never a record.
func LogRetrieval(ctx context.Context, db pg.DBTX, tenant string, r Retrieval) error {
	args := []any{tenant, r.ID, r.At.UTC(), r.AgentID, r.ThreadID, uuids(nonNil(r.RecordIDs)), r.Withheld, r.LexicalOnly}
	if _, inTx := db.(pgx.Tx); inTx {
		// Inside a caller's transaction: its commit decides.
		if _, err := db.Exec(ctx, insertRetrievalSQL, args...); err != nil {
			return fmt.Errorf("log retrieval: %w", err)
		}
		return nil
	}
	// One round trip: the transaction, its setting and the insert.
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SET LOCAL synchronous_commit = off")
	b.Queue(insertRetrievalSQL, args...)
	b.Queue("COMMIT")
	if err := db.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("log retrieval: %w", err)
	}
	return nil
}

const retrievalSQL = `
SELECT id, at, agent_id, thread_id, record_ids, withheld, lexical_only
FROM retrievals WHERE tenant_id = $1 AND id = $2`

// GetRetrieval returns a logged retrieval, or ErrNotFound.
func GetRetrieval(ctx context.Context, db pg.DBTX, tenant string, id uuid.UUID) (Retrieval, error) {
	var r Retrieval
	err := db.QueryRow(ctx, retrievalSQL, tenant, id).Scan(&r.ID, &r.At, &r.AgentID, &r.ThreadID, &r.RecordIDs, &r.Withheld, &r.LexicalOnly)
	if err == pgx.ErrNoRows {
		return r, ErrNotFound
	}
	if err != nil {
		return r, fmt.Errorf("read retrieval: %w", err)
	}
	r.At = r.At.UTC()
	return r, nil
}
