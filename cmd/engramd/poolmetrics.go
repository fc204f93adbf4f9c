package main

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// registerPoolMetrics exposes how the database pool is used: a request or
// batch that waited for a free connection waited on the pool, not on
// PostgreSQL.
func registerPoolMetrics(reg prometheus.Registerer, pool *pgxpool.Pool) {
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "engram_db_pool_acquire_wait_seconds_total",
			Help: "Time spent waiting for a free database connection, the pool being empty."},
			func() float64 { return pool.Stat().EmptyAcquireWaitTime().Seconds() }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "engram_db_pool_empty_acquires_total",
			Help: "Connections acquired after waiting, the pool being empty."},
			func() float64 { return float64(pool.Stat().EmptyAcquireCount()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "engram_db_pool_connections_in_use",
			Help: "Database connections in use."},
			func() float64 { return float64(pool.Stat().AcquiredConns()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "engram_db_pool_connections_max",
			Help: "The most database connections the pool opens."},
			func() float64 { return float64(pool.Stat().MaxConns()) }),
	)
}
