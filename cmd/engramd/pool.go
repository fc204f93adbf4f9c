package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/engram-dev/engram/cmd/engramd/config"
	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/replicas"
	"github.com/engram-dev/engram/server"
)

// newPool connects a pool to url as database.pooler says: behind a
// transaction-mode pooler, with no named prepared statements and no
// startup parameters the pooler would refuse (pg.ForTransactionPooler).
//
// Otherwise every connection carries the session bounds of database.*
// (statement, lock and idle timeouts, keepalives). Behind a transaction
// pooler a server connection serves many clients in turn, so engramd sets
// no session state on it: set those bounds on the database or its role
// instead (docs/operations.md).
//
// Behind a session-mode pooler the bounds hold, but the pooler refuses
// them as startup parameters: each connection sets them as it opens
// (pg.ForSessionPooler).
func newPool(ctx context.Context, cfg config.Config, url string) (*pgxpool.Pool, error) {
	configure := cfg.Database.Session().Configure
	switch cfg.Database.Pooler {
	case config.PoolerTransaction:
		configure = func(c *pgxpool.Config) { pg.ForTransactionPooler(c, url) }
	case config.PoolerSession:
		configure = func(c *pgxpool.Config) { cfg.Database.Session().Configure(c); pg.ForSessionPooler(c) }
	}
	return pg.NewPool(ctx, url, configure)
}

// lockPoolConfig configures a pool on database.lock_url, or on
// database_url when it is empty: through the pooler then, whose mode can
// only be session (a transaction pooler needs lock_url).
func lockPoolConfig(cfg config.Config) func(*pgxpool.Config) {
	if cfg.Database.LockURL == "" && cfg.Database.Pooler == config.PoolerSession {
		return pg.ForSessionPooler
	}
	return nil
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

// readReplicas are the replica pools of database.read_url and the router
// that chooses among them and the primary.
type readReplicas struct {
	router server.ReadRouter
	stop   func()
}

// startReplicas connects to each replica of database.read_url and starts
// sampling their lag; with none, reads stay on the primary.
func startReplicas(ctx context.Context, cfg config.Config, primary *pgxpool.Pool, reg prometheus.Registerer, logger *slog.Logger) (readReplicas, error) {
	if len(cfg.Database.ReadURL) == 0 {
		return readReplicas{stop: func() {}}, nil
	}
	var reps []replicas.Replica
	closeAll := func() {
		for _, r := range reps {
			r.Pool.Close()
		}
	}
	for i, url := range cfg.Database.ReadURL {
		pool, err := newPool(ctx, cfg, url)
		if err != nil {
			closeAll()
			return readReplicas{}, fmt.Errorf("database.read_url[%d]: %w", i, err)
		}
		c := pool.Config().ConnConfig
		reps = append(reps, replicas.Replica{Name: fmt.Sprintf("%s:%d", c.Host, c.Port), Pool: pool})
	}
	router := replicas.New(replicas.Config{Primary: primary, Replicas: reps, Budget: cfg.Database.StalenessBudget,
		Logger: logger, Registry: reg})
	router.Start(ctx)
	logger.Info("retrieval reads from replicas", slog.Int("replicas", len(reps)), slog.Duration("staleness_budget", cfg.Database.StalenessBudget))
	return readReplicas{router: router, stop: func() { router.Stop(); closeAll() }}, nil
}
