package pg

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

func TestForTransactionPooler(t *testing.T) {
	t.Parallel()
	url := "postgres://u@127.0.0.1:6432/engram"
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	require.Equal(t, pgx.QueryExecModeCacheStatement, cfg.ConnConfig.DefaultQueryExecMode, "pgx's default names its statements")
	cfg.ConnConfig.RuntimeParams[IterativeScanParam] = "relaxed_order"
	ForTransactionPooler(cfg, url)
	require.Equal(t, pgx.QueryExecModeCacheDescribe, cfg.ConnConfig.DefaultQueryExecMode)
	require.NotContains(t, cfg.ConnConfig.RuntimeParams, IterativeScanParam)

	url += "?default_query_exec_mode=simple_protocol"
	cfg, err = pgxpool.ParseConfig(url)
	require.NoError(t, err)
	ForTransactionPooler(cfg, url)
	require.Equal(t, pgx.QueryExecModeSimpleProtocol, cfg.ConnConfig.DefaultQueryExecMode, "the URL's choice stands")
}

func TestUnavailable(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		&pgconn.PgError{Code: "25006"}, &pgconn.PgError{Code: "57P01"}, &pgconn.PgError{Code: "08006"},
		fmt.Errorf("insert record: %w", &pgconn.PgError{Code: "57P03"}), io.ErrUnexpectedEOF,
		&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, errors.New("conn closed"),
	} {
		require.True(t, Unavailable(err), "%v", err)
	}
	for _, err := range []error{nil, &pgconn.PgError{Code: "23505"}, &pgconn.PgError{Code: "40001"}, errors.New("no rows")} {
		require.False(t, Unavailable(err), "%v", err)
	}
}
