package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/store"
)

// An idempotency key is claimed once: while its request runs, another
// claim reads it unfinished; once finished, its result; expired, or left
// unfinished past stale (a daemon stopped mid-request), it is claimed
// afresh. A released key is free; a purge deletes only expired keys.
func TestIdempotencyKeyClaims(t *testing.T) {
	t.Parallel()
	db := pgtest.NewSchema(t)
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	k := store.IdempotencyKey{Tenant: "acme", Principal: "agents", Key: "k1"}
	a, b := []byte("request-a"), []byte("request-b")
	claim := func(hash []byte, now time.Time) (store.IdempotentResult, bool) {
		t.Helper()
		held, ok, err := store.ClaimIdempotencyKey(ctx, db.Pool, k, hash, now, now.Add(24*time.Hour), now.Add(-10*time.Minute))
		require.NoError(t, err)
		return held, ok
	}

	_, ok := claim(a, t0)
	require.True(t, ok)
	held, ok := claim(b, t0.Add(time.Second))
	require.False(t, ok, "held by the running request")
	require.Equal(t, a, held.RequestHash)
	require.Zero(t, held.Status, "unfinished")

	require.NoError(t, store.FinishIdempotencyKey(ctx, db.Pool, k, b, 201, []byte("not b's to keep")))
	require.NoError(t, store.FinishIdempotencyKey(ctx, db.Pool, k, a, 201, []byte("result")))
	held, ok = claim(a, t0.Add(time.Hour))
	require.False(t, ok)
	require.Equal(t, 201, held.Status)
	require.Equal(t, []byte("result"), held.Response)

	_, ok = claim(b, t0.Add(25*time.Hour))
	require.True(t, ok, "expired: claimed afresh")
	_, ok = claim(a, t0.Add(25*time.Hour+11*time.Minute))
	require.True(t, ok, "left unfinished past stale: taken over")
	require.NoError(t, store.ReleaseIdempotencyKey(ctx, db.Pool, k, a))
	_, ok = claim(b, t0.Add(25*time.Hour+12*time.Minute))
	require.True(t, ok, "released: free")

	other := store.IdempotencyKey{Tenant: "acme", Principal: "agents", Key: "k2"}
	_, _, err := store.ClaimIdempotencyKey(ctx, db.Pool, other, a, t0, t0.Add(24*time.Hour), t0)
	require.NoError(t, err)
	n, err := store.PurgeIdempotencyKeys(ctx, db.Pool, t0.Add(24*time.Hour), 100)
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "k2 only: k1 was claimed again since")
	_, ok = claim(a, t0.Add(25*time.Hour+13*time.Minute))
	require.False(t, ok, "k1 is still held")
}
