package embedding

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/store"
)

// The periodic jobs of the vector index.
const (
	BackfillJob             = "embedding_backfill"
	ReindexJob              = "embedding_reindex"
	DefaultBackfillSchedule = "@every 1m"
	// DefaultBackfillBatch is how many records a backfill batch reads.
	DefaultBackfillBatch = 500
	// DefaultMaxYield is how long a backfill batch waits at most for busy
	// classification to pause ([Backfiller.YieldTo]).
	DefaultMaxYield = 10 * time.Second
)

// yieldPoll is how often a yielding backfill looks whether classification
// is still busy.
const yieldPoll = 50 * time.Millisecond

// Progress is where a periodic job reports what it did and keeps its place
// (jobs.Run implements it).
type Progress interface {
	Cursor(ctx context.Context, v any) (bool, error)
	SaveCursor(ctx context.Context, v any) error
	Add(name string, n int64)
}

// Backfiller writes the vectors of live records for an embedder,
// asynchronously (substrate RFC §15.3: the index follows the store, never
// the other way round).
type Backfiller struct {
	db       pg.DBTX
	embedder Embedder
	batch    int
	logger   *slog.Logger
	busy     func() bool
	maxYield time.Duration
}

// YieldTo makes the backfill give way to work that matters more: before
// each batch, while busy reports true, it waits, up to maxYield (≤ 0 means
// [DefaultMaxYield]) — so it keeps progressing under sustained load, a
// batch at a time. engramd passes the policy plane's Busy (classifying):
// the vector index is advisory (substrate RFC §15.3) and retrieval finds
// the records not yet embedded lexically, while an acknowledged event
// waiting for classification is not yet in memory at all. Call it before
// the first Backfill.
func (b *Backfiller) YieldTo(busy func() bool, maxYield time.Duration) {
	b.busy, b.maxYield = busy, cmp.Or(max(maxYield, 0), DefaultMaxYield)
}

// yield waits while the work the backfill yields to is busy, up to its
// bound.
func (b *Backfiller) yield(ctx context.Context) error {
	if b.busy == nil {
		return nil
	}
	deadline := time.Now().Add(b.maxYield)
	for b.busy() && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(yieldPoll):
		}
	}
	return nil
}

// NewBackfiller returns a backfiller of e's vectors; batch ≤ 0 means
// [DefaultBackfillBatch].
func NewBackfiller(db pg.DBTX, e Embedder, batch int, logger *slog.Logger) *Backfiller {
	if batch <= 0 {
		batch = DefaultBackfillBatch
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Backfiller{db: db, embedder: e, batch: batch, logger: logger}
}

type backfillCursor struct {
	After store.Key `json:"after"`
}

// Backfill walks every tenant's active set in (tenant, id) order, a batch
// at a time, and embeds the records whose vector for the model is missing
// or older than the record. Vectors of other models (the configured model
// changed) are dropped first: that is the reindex a model change needs. A
// run stopped part-way resumes from its cursor; one that completes clears
// it, so the next starts over and finds what changed.
func (b *Backfiller) Backfill(ctx context.Context, p Progress) error {
	model := b.embedder.Model()
	other, err := store.OtherModels(ctx, b.db, model)
	if err != nil {
		return err
	}
	if other {
		n, err := store.DropVectors(ctx, b.db, model, true)
		if err != nil {
			return err
		}
		p.Add("dropped", n)
		b.logger.Info("embedding model changed: dropped the other models' vectors", slog.String("model", model), slog.Int64("vectors", n))
	}
	var c backfillCursor
	if _, err := p.Cursor(ctx, &c); err != nil {
		return err
	}
	for {
		if err := b.yield(ctx); err != nil {
			return err
		}
		recs, err := store.ScanToEmbed(ctx, b.db, model, c.After, b.batch)
		if err != nil {
			return err
		}
		p.Add("scanned", int64(len(recs)))
		if err := b.embed(ctx, model, recs, p); err != nil {
			return err
		}
		if len(recs) < b.batch {
			return p.SaveCursor(ctx, nil)
		}
		c.After = recs[len(recs)-1].Key
		if err := p.SaveCursor(ctx, c); err != nil {
			return err
		}
	}
}

// Reindex drops every vector of the model with its feature frequencies and
// embeds the active set again: after a change of the lexical embedder's
// corpus large enough that its IDF weights drifted, or on demand.
func (b *Backfiller) Reindex(ctx context.Context, p Progress) error {
	n, err := store.DropVectors(ctx, b.db, b.embedder.Model(), false)
	if err != nil {
		return err
	}
	p.Add("dropped", n)
	if err := p.SaveCursor(ctx, nil); err != nil {
		return err
	}
	return b.Backfill(ctx, p)
}

// embed writes the vectors of the records of a batch that need one.
func (b *Backfiller) embed(ctx context.Context, model string, recs []store.ToEmbed, p Progress) error {
	var todo []store.ToEmbed
	for _, r := range recs {
		if r.Stale {
			todo = append(todo, r)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	var vecs []Vector
	var err error
	if lex, ok := b.embedder.(*Lexical); ok {
		vecs, err = b.lexical(ctx, lex, model, todo)
	} else {
		texts := make([]string, len(todo))
		for i, r := range todo {
			texts[i] = r.Text
		}
		vecs, err = b.embedder.Embed(ctx, texts)
	}
	if err != nil {
		return fmt.Errorf("embed %d records: %w", len(todo), err)
	}
	rows := make([]store.VectorRow, len(todo))
	for i, r := range todo {
		rows[i] = store.VectorRow{Key: r.Key, Version: r.Version, Sparse: vecs[i].Sparse, Dense: vecs[i].Dense}
	}
	if err := store.PutVectors(ctx, b.db, model, rows); err != nil {
		return err
	}
	p.Add("embedded", int64(len(rows)))
	return nil
}

// lexical embeds with the built-in embedder, weighting each feature by its
// inverse document frequency in the record's tenant: the tenant's feature
// frequencies count each newly embedded record once.
func (b *Backfiller) lexical(ctx context.Context, lex *Lexical, model string, todo []store.ToEmbed) ([]Vector, error) {
	feats := make([]map[int32]float64, len(todo))
	byTenant := map[string][]int{}
	for i, r := range todo {
		feats[i] = lex.Features(r.Text)
		byTenant[r.Tenant] = append(byTenant[r.Tenant], i)
	}
	out := make([]Vector, len(todo))
	for _, tenant := range slices.Sorted(maps.Keys(byTenant)) {
		idx := byTenant[tenant]
		var fresh, all []int32
		for _, i := range idx {
			for f := range feats[i] {
				all = append(all, f)
				if !todo[i].HadVector {
					fresh = append(fresh, f)
				}
			}
		}
		if len(fresh) > 0 {
			if err := store.AddFeatureDF(ctx, b.db, tenant, model, fresh); err != nil {
				return nil, err
			}
		}
		slices.Sort(all)
		all = slices.Compact(all)
		df, docs, err := store.FeatureDF(ctx, b.db, tenant, model, all)
		if err != nil {
			return nil, err
		}
		// The records of this batch count as documents already.
		for _, i := range idx {
			if !todo[i].HadVector {
				docs++
			}
		}
		idf := func(f int32) float64 { return IDF(docs, df[f]) }
		for _, i := range idx {
			v := lex.Vector(feats[i], idf)
			out[i] = Vector{Sparse: &v}
		}
	}
	return out, nil
}
