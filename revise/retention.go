package revise

import (
	"context"
	"time"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// The writes of retention (write-path RFC §12.10.4): what is past its
// class's maximum retention is the retention package's to decide; the write
// path expires or purges it, audited, in one statement a batch. Retention
// overrides relevance: pins, salience and the deletion policy do not keep
// a record past its retention.

// ExpirePastRetention soft-deletes up to limit records of class created
// before cutoff and not expired yet: each becomes expired at at, a
// revision with an audit entry by actor giving rationale, and decay's
// purge deletes it after the grace period. It returns how many it expired.
func (w *Writer) ExpirePastRetention(ctx context.Context, class memory.RetentionClass, cutoff, at time.Time, limit int, actor, rationale string) (int, error) {
	return store.ExpirePastRetention(ctx, w.db, class, cutoff, at, limit, actor, rationale)
}

// PurgePastRetention hard-deletes up to limit records of class created
// before cutoff, whatever their status, with their versions, relations,
// entries and vectors, and the artifacts only they referenced. Each leaves
// an audit entry by actor giving rationale, naming its id only.
func (w *Writer) PurgePastRetention(ctx context.Context, class memory.RetentionClass, cutoff time.Time, limit int, actor, rationale string) (store.PurgeResult, error) {
	return store.PurgePastRetention(ctx, w.db, class, cutoff, limit, actor, rationale)
}
