package pg_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/internal/pgtest"
)

// A float that is not a whole number is refused by an integer parameter,
// where pgx truncated it: the first use below is how retrieval's common-term
// share was inferred bigint and arrived as 0. Floats still reach float and
// numeric parameters exactly, and whole ones integer parameters.
func TestFloatsAreNotTruncated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pg.NewPool(ctx, pgtest.URL(), nil)
	require.NoError(t, err)
	defer pool.Close()

	var n int64
	err = pool.QueryRow(ctx, `SELECT $1 * 10::bigint`, 0.05).Scan(&n)
	require.ErrorContains(t, err, "0.05 is not a whole number")
	err = pool.QueryRow(ctx, `SELECT $1::int4`, float32(2.5)).Scan(&n)
	require.ErrorContains(t, err, "2.5 is not a whole number")

	require.NoError(t, pool.QueryRow(ctx, `SELECT $1 * 10::bigint`, 3.0).Scan(&n))
	require.Equal(t, int64(30), n)

	var f float64
	require.NoError(t, pool.QueryRow(ctx, `SELECT $1::float8 * 10`, 0.05).Scan(&f))
	require.InDelta(t, 0.5, f, 1e-12)
	require.NoError(t, pool.QueryRow(ctx, `SELECT $1::float4`, float32(0.25)).Scan(&f))
	require.Equal(t, 0.25, f)
	var s string
	require.NoError(t, pool.QueryRow(ctx, `SELECT $1::numeric::text`, 0.05).Scan(&s))
	require.Equal(t, "0.05", s)
	require.NoError(t, pool.QueryRow(ctx, `SELECT ($1::float8[])::text`, []float64{0.5, 1}).Scan(&s))
	require.Equal(t, "{0.5,1}", s)
}
