// Package pg is engram's shared PostgreSQL plumbing: pool construction with
// pgvector types registered, the [DBTX] interface that lets the same code run
// on a pool or inside a transaction, and [WithTx].
package pg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	pgxvec "github.com/pgvector/pgvector-go/pgx"
)

// DBTX is what the store needs of a database handle: a *pgxpool.Pool, a
// pgx.Tx, or a *pgx.Conn. Begin on a pgx.Tx opens a savepoint.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
	CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// NewPool connects to the database at url and registers the pgvector types
// on every connection, so the vector extension must exist: run the
// migrations first. Its connections refuse to truncate a float sent as an
// integer (refuseLossyFloats). configure, when non-nil, may adjust the
// parsed config.
func NewPool(ctx context.Context, url string, configure func(*pgxpool.Config)) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	// pgvector's HNSW scans go on past their first candidates until enough
	// rows pass the query's filters (tenant, type, sensitivity), so a small
	// tenant in a large database still gets its full top-k. Retrieval
	// orders the candidates again itself, so relaxed order is enough.
	if _, ok := cfg.ConnConfig.RuntimeParams[IterativeScanParam]; !ok {
		cfg.ConnConfig.RuntimeParams[IterativeScanParam] = "relaxed_order"
	}
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		refuseLossyFloats(conn.TypeMap())
		if err := pgxvec.RegisterTypes(ctx, conn); err != nil {
			return fmt.Errorf("register pgvector types (has the database been migrated?): %w", err)
		}
		return nil
	}
	if configure != nil {
		configure(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("create pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return pool, nil
}

// IterativeScanParam is the startup parameter NewPool sets for pgvector's
// iterative HNSW scans.
const IterativeScanParam = "hnsw.iterative_scan"

// ForTransactionPooler adjusts cfg, parsed from url, for a pooler in
// transaction mode (PgBouncer's pool_mode = transaction), which hands each
// transaction whichever server connection is free: nothing may outlive a
// transaction on a pooled connection. pgx's default mode prepares every
// statement under a name on the connection, which the next transaction may
// not have; cache_describe sends each statement unnamed, in one round trip
// once its description is cached, unless url chose a
// default_query_exec_mode itself. A pooler refuses startup parameters it
// does not know, so NewPool's hnsw.iterative_scan goes: set it on the
// database instead (ALTER DATABASE … SET hnsw.iterative_scan =
// relaxed_order; docs/operations.md).
func ForTransactionPooler(cfg *pgxpool.Config, url string) {
	if !strings.Contains(url, "default_query_exec_mode") {
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	}
	delete(cfg.ConnConfig.RuntimeParams, IterativeScanParam)
}

// poolerStartupParams are the startup parameters PgBouncer passes to the
// server; it refuses a connection that sends any other.
var poolerStartupParams = map[string]bool{"application_name": true, "client_encoding": true, "datestyle": true,
	"timezone": true, "standard_conforming_strings": true}

// ForSessionPooler adjusts cfg for a pooler in session mode (PgBouncer's
// pool_mode = session), which gives each client connection a server
// connection of its own for as long as it lasts, resetting it (DISCARD
// ALL) for the next: session state holds, but the pooler refuses startup
// parameters it does not know. Every runtime parameter but those it passes
// (the session's bounds, hnsw.iterative_scan) is set instead by one
// statement as the connection opens.
func ForSessionPooler(cfg *pgxpool.Config) {
	var names, values []string
	for name, v := range cfg.ConnConfig.RuntimeParams {
		if !poolerStartupParams[strings.ToLower(name)] {
			names, values = append(names, name), append(values, v)
			delete(cfg.ConnConfig.RuntimeParams, name)
		}
	}
	if len(names) == 0 {
		return
	}
	after := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		if _, err := conn.Exec(ctx, setConfigSQL, names, values); err != nil {
			return fmt.Errorf("set session parameters: %w", err)
		}
		if after != nil {
			return after(ctx, conn)
		}
		return nil
	}
}

// setConfigSQL sets each named parameter for the session.
const setConfigSQL = `SELECT set_config(n, v, false) FROM unnest($1::text[], $2::text[]) AS p (n, v)`

// WithTx runs fn in a transaction on db, committing when fn returns nil and
// rolling back otherwise. The rollback runs on a context that outlives ctx's
// cancellation, so a cancelled request never leaves a transaction open.
func WithTx(ctx context.Context, db DBTX, fn func(ctx context.Context, tx pgx.Tx) error) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := fn(ctx, tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Code returns the SQLSTATE of err and the constraint it names, if err is a
// PostgreSQL error.
func Code(err error) (code, constraint string) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code, pgErr.ConstraintName
	}
	return "", ""
}

// Unavailable reports whether err says that no primary could take the
// statement: the server could not be reached or went away (a failover, a
// restart), is starting or stopping, or is a standby now (a demoted
// primary answers read_only_sql_transaction). The request may pass once a
// primary is back: engramd answers 503 with Retry-After, never 500.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	switch code, _ := Code(err); {
	case strings.HasPrefix(code, "08"), // connection exception
		code == "57P01", code == "57P02", code == "57P03", // admin or crash shutdown, cannot connect now
		code == "25006", // read-only SQL transaction: a standby
		code == "53300": // too many connections
		return true
	case code != "":
		return false
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connErr) || errors.As(err, &netErr) || pgconn.SafeToRetry(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		strings.Contains(err.Error(), "conn closed") || strings.Contains(err.Error(), "closed pool")
}

// SQLSTATE codes the store turns into typed errors.
const (
	UniqueViolation      = "23505"
	ForeignKeyViolation  = "23503"
	CheckViolation       = "23514"
	RestrictViolation    = "23001"
	SerializationFailure = "40001"
	DeadlockDetected     = "40P01"
	ProgramLimitExceeded = "54000"
	// LockNotAvailable is a lock wait past lock_timeout; QueryCanceled a
	// statement past statement_timeout (or cancelled by its client).
	LockNotAvailable = "55P03"
	QueryCanceled    = "57014"
)
