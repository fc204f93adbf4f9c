package main

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/engram-dev/engram/cmd/engramd/config"
	"github.com/engram-dev/engram/embedding"
	"github.com/engram-dev/engram/internal/pg"
)

// migrateDenseIndex is `engramd migrate`'s last step: with an
// OpenAI-compatible embedder configured, the HNSW index of its dense
// vectors, built before the command returns (embedding.EnsureIndex logs
// its progress).
func migrateDenseIndex(ctx context.Context, cfg config.Config, logger *slog.Logger) error {
	if cfg.Embedding.Provider != config.EmbeddingOpenAI {
		return nil
	}
	emb, err := embedding.NewOpenAI(cfg.Embedding.OpenAI)
	if err != nil {
		return err
	}
	// On the direct connection: the build holds a session lock.
	pool, err := pg.NewPool(ctx, cfg.Database.LockDSN(cfg.DatabaseURL), lockPoolConfig(cfg))
	if err != nil {
		return err
	}
	defer pool.Close()
	return embedding.EnsureIndex(ctx, pool, emb, logger)
}

// startDenseIndex makes sure, in the background, that the HNSW index of the
// embedder's dense vectors exists, so that a daemon whose model changed
// serves at once (searches rank exactly until the index is built). A build
// stopped by shutdown leaves an invalid index, which the next start drops
// and builds again. wait returns once it has finished.
func startDenseIndex(ctx context.Context, pool *pgxpool.Pool, emb embedding.Embedder, logger *slog.Logger) (wait func()) {
	if emb == nil || emb.Sparse() {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := embedding.EnsureIndex(ctx, pool, emb, logger); err != nil && ctx.Err() == nil {
			logger.Error("dense vector index not built; searches rank exactly (engramd migrate builds it)", slog.String("error", err.Error()))
		}
	}()
	return func() { <-done }
}
