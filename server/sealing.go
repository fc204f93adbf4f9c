package server

import (
	"context"

	"github.com/engram-dev/engram/memory"
)

// open opens a record's sealed payload for an answer (substrate RFC §15.9):
// the server's reads of records from store call it once on what they read.
// The write path's answers are opened already.
func (s *Server) open(ctx context.Context, tenant string, rec *memory.Record) error {
	return s.writer.Sealer().OpenRecord(ctx, tenant, rec)
}
