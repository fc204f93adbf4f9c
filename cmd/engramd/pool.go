package main

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/engram-dev/engram/internal/config"
	"github.com/engram-dev/engram/internal/pg"
)

// newPool connects a pool to url as database.pooler says: behind a
// transaction-mode pooler, with no named prepared statements and no
// startup parameters the pooler would refuse (pg.ForTransactionPooler).
func newPool(ctx context.Context, cfg config.Config, url string) (*pgxpool.Pool, error) {
	var configure func(*pgxpool.Config)
	if cfg.Database.Pooler == config.PoolerTransaction {
		configure = func(c *pgxpool.Config) { pg.ForTransactionPooler(c, url) }
	}
	return pg.NewPool(ctx, url, configure)
}

// checkIterativeScan warns when, behind a transaction pooler, the database
// does not set pgvector's iterative scans itself (NewPool's startup
// parameter cannot pass a pooler): a small tenant's vector search in a
// large database would then return fewer than its top k.
func checkIterativeScan(ctx context.Context, cfg config.Config, pool *pgxpool.Pool, logger *slog.Logger) {
	if cfg.Database.Pooler != config.PoolerTransaction {
		return
	}
	var v string
	if err := pool.QueryRow(ctx, "SELECT coalesce(current_setting('hnsw.iterative_scan', true), '')").Scan(&v); err != nil || v != "relaxed_order" {
		logger.Warn("behind a transaction pooler, set pgvector's iterative scans on the database: ALTER DATABASE <name> SET hnsw.iterative_scan = relaxed_order",
			slog.String("hnsw.iterative_scan", v))
	}
}
