package retrieve

import (
	"context"
	"log/slog"

	"github.com/engram-dev/engram/store"
)

// The periodic job that keeps BM25's statistics.
const (
	StatsJob             = "retrieval_stats"
	DefaultStatsSchedule = "@every 5m"
)

// Progress is where a periodic job reports what it did and keeps its place
// (jobs.Run implements it).
type Progress interface {
	Cursor(ctx context.Context, v any) (bool, error)
	SaveCursor(ctx context.Context, v any) error
	Add(name string, n int64)
}

// RefreshStats recomputes the BM25 statistics (document frequencies,
// corpus size, mean length) of every tenant whose records changed since
// they were last computed, one tenant per transaction. Until a tenant has
// them, its terms are weighted alike.
func (r *Retriever) RefreshStats(ctx context.Context, p Progress) error {
	tenants, err := store.StaleLexicalTenants(ctx, r.db)
	if err != nil {
		return err
	}
	for _, t := range tenants {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Taken before reading: a record changed while the refresh reads
		// makes the statistics stale again.
		at := r.now()
		st, err := store.RefreshLexicalStats(ctx, r.db, t, at)
		if err != nil {
			return err
		}
		r.sizes.forget(t)
		p.Add("tenants", 1)
		p.Add("lexemes", st.Lexemes)
		r.logger.Debug("lexical statistics refreshed", slog.String("tenant", t), slog.Int64("docs", st.Docs), slog.Int64("passages", st.Passages))
	}
	return nil
}
