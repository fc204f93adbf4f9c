package pg

import (
	"testing"

	"github.com/jackc/pgx/v5"
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
