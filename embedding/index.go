package embedding

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/engram-dev/engram/store"
)

// indexProgressEvery is how often a long index build logs how far it got.
const indexProgressEvery = 15 * time.Second

// DenseIndexOf returns the HNSW index e's vectors are searched on for large
// tenants, and false when they have none: sparse vectors (selected on
// their features' GIN index, migration 016), or dense ones of more than
// [store.MaxHalfvecIndexDims] dimensions, which pgvector cannot index and
// which are therefore always ranked exactly.
func DenseIndexOf(e Embedder) (store.DenseIndex, bool) {
	if e == nil || e.Sparse() || e.Dims() > store.MaxHalfvecIndexDims {
		return store.DenseIndex{}, false
	}
	ix := store.DenseIndex{Model: e.Model(), Dims: e.Dims()}
	return ix, ix.Validate() == nil
}

// EnsureIndex makes sure that the HNSW index of e's dense vectors
// ([DenseIndexOf]) exists and is valid on every partition of
// record_vectors, building what is missing with CREATE INDEX CONCURRENTLY
// (writes go on meanwhile; a partition without vectors of the model and
// type gets its empty graph at once, store.DenseIndexPart), and drops the dense indexes of other models,
// left by a model change. It logs what it builds, and every 15 s how far
// a build has got. Daemons sharing a database build one at a time (an
// advisory lock); the second finds the index made. For a sparse embedder,
// or one of too many dimensions, it does nothing but say so.
//
// engramd calls it from `engramd migrate` and when it starts; nothing
// calls it implicitly. An HNSW build is much faster when its graph fits in
// maintenance_work_mem (about 1.2 × dims × 4 bytes per vector): set it on
// the database role engramd uses before a large build.
func EnsureIndex(ctx context.Context, pool *pgxpool.Pool, e Embedder, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if e == nil || e.Sparse() {
		return nil
	}
	ix, ok := DenseIndexOf(e)
	if !ok {
		logger.Warn("dense vectors above 4,000 dimensions have no HNSW index: every search ranks them exactly",
			slog.String("model", e.Model()), slog.Int("dims", e.Dims()))
		return nil
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("ensure dense index: %w", err)
	}
	defer conn.Release()
	// One builder at a time per schema: a second CREATE INDEX
	// CONCURRENTLY of the same name would fail or wait on the first.
	const lockKey = `hashtextextended('engram:dense-index:' || current_schema(), 0)`
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(`+lockKey+`)`); err != nil {
		return fmt.Errorf("ensure dense index: lock: %w", err)
	}
	defer func() {
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(`+lockKey+`)`); err != nil {
			// A connection that may still hold the lock is not reused.
			_ = conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}()

	parts, err := store.DenseIndexParts(ctx, conn, ix)
	if err != nil {
		return err
	}
	kind := "vector"
	if ix.Half() {
		kind = "halfvec"
	}
	attrs := []any{slog.String("model", ix.Model), slog.Int("dims", ix.Dims), slog.String("type", kind)}
	var todo []store.DenseIndexPart
	keep := make([]string, 0, len(parts))
	for _, p := range parts {
		keep = append(keep, p.Index)
		if !p.Valid {
			todo = append(todo, p)
		}
	}
	start := time.Now()
	var held map[string]bool
	if len(todo) > 0 {
		if held, err = store.DenseVectorParts(ctx, conn, ix.Model); err != nil {
			return err
		}
	}
	if len(todo) > 0 {
		logger.Info("building the HNSW index of dense vectors (CREATE INDEX CONCURRENTLY; searches rank exactly meanwhile)",
			append(attrs, slog.Int("indexes", len(todo)))...)
	}
	for i, p := range todo {
		t := time.Now()
		if p.Exists {
			// A build cut off: invalid, never used, and kept by IF NOT
			// EXISTS.
			logger.Warn("dropping an invalid dense index left by an interrupted build", slog.String("index", p.Index))
			if err := execDDL(ctx, conn, p.Drop); err != nil {
				return fmt.Errorf("drop invalid dense index %s: %w", p.Index, err)
			}
		}
		create := p.Create
		if !held[p.Table+"/"+p.Type] {
			create = p.CreateEmpty
		}
		stop := watchBuild(ctx, pool, conn.Conn().PgConn().PID(), logger, p.Index, i+1, len(todo))
		err := execDDL(ctx, conn, create)
		stop()
		if err != nil {
			return fmt.Errorf("build dense index %s: %w", p.Index, err)
		}
		if err := execDDL(ctx, conn, p.Comment); err != nil {
			return fmt.Errorf("label dense index %s: %w", p.Index, err)
		}
		if held[p.Table+"/"+p.Type] {
			logger.Info("dense index built", slog.String("index", p.Index), slog.String("progress", fmt.Sprintf("%d/%d", i+1, len(todo))),
				slog.Duration("took", time.Since(t).Round(time.Millisecond)))
		}
	}
	names, drops, err := store.OtherDenseIndexes(ctx, conn, keep)
	if err != nil {
		return err
	}
	for i, drop := range drops {
		logger.Info("dropping the dense index of another model", slog.String("index", names[i]))
		if err := execDDL(ctx, conn, drop); err != nil {
			return fmt.Errorf("drop dense index %s: %w", names[i], err)
		}
	}
	if len(todo) > 0 {
		logger.Info("HNSW index of dense vectors ready", append(attrs, slog.Duration("took", time.Since(start).Round(time.Millisecond)))...)
	} else {
		logger.Debug("HNSW index of dense vectors present", attrs...)
	}
	return nil
}

// execDDL runs one statement written by the server (store.DenseIndexParts)
// on the simple protocol, outside any transaction, as CREATE and DROP INDEX
// CONCURRENTLY need.
func execDDL(ctx context.Context, conn *pgxpool.Conn, sql string) error {
	_, err := conn.Conn().PgConn().Exec(ctx, sql).ReadAll()
	return err
}

// watchBuild logs, every indexProgressEvery until stop is called, how far
// the index build of backend pid has got.
func watchBuild(ctx context.Context, pool *pgxpool.Pool, pid uint32, logger *slog.Logger, index string, n, of int) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(indexProgressEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			b, ok, err := store.IndexBuildProgress(ctx, pool, pid)
			if err != nil || !ok {
				continue
			}
			logger.Info("building dense index", slog.String("index", index), slog.String("progress", fmt.Sprintf("%d/%d", n, of)),
				slog.String("phase", b.Phase), slog.Int64("tuples_done", b.TuplesDone), slog.Int64("tuples_total", b.TuplesTotal),
				slog.Int64("blocks_done", b.BlocksDone), slog.Int64("blocks_total", b.BlocksTotal))
		}
	}()
	return func() { cancel(); <-done }
}
