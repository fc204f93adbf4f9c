package store_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

func newKey(name, tenant, role, agent string) store.NewKey {
	h := sha256.Sum256([]byte("secret-" + name))
	return store.NewKey{APIKey: store.APIKey{Name: name, Tenant: tenant, Role: role, AgentID: agent, Clearance: memory.Hyper}, Hash: h[:]}
}

// The keys table holds its invariants: an operator key has no tenant and
// every other key one; an executor names its agent; names and hashes are
// unique; a revoked key is not found by its hash.
func TestKeysInvariants(t *testing.T) {
	t.Parallel()
	db := pgtest.NewSchema(t)
	ctx := context.Background()
	require.NoError(t, store.EnsureTenant(ctx, db.Pool, "acme"))

	k, err := store.InsertKey(ctx, db.Pool, newKey("exec", "acme", "executor", "a-1"))
	require.NoError(t, err)
	require.Equal(t, []string{}, k.Domains)
	_, err = store.InsertKey(ctx, db.Pool, newKey("ops", "", "operator", ""))
	require.NoError(t, err)

	_, err = store.InsertKey(ctx, db.Pool, newKey("exec", "acme", "curator", ""))
	require.ErrorIs(t, err, store.ErrKeyExists)
	_, err = store.InsertKey(ctx, db.Pool, newKey("ops-acme", "acme", "operator", ""))
	require.ErrorContains(t, err, "api_keys_tenant")
	_, err = store.InsertKey(ctx, db.Pool, newKey("curator-none", "", "curator", ""))
	require.ErrorContains(t, err, "api_keys_tenant")
	_, err = store.InsertKey(ctx, db.Pool, newKey("exec-none", "acme", "executor", ""))
	require.ErrorContains(t, err, "api_keys_executor_agent")

	h := sha256.Sum256([]byte("secret-exec"))
	got, err := store.KeyByHash(ctx, db.Pool, h[:])
	require.NoError(t, err)
	require.Equal(t, "a-1", got.AgentID)
	at := time.Now().UTC().Truncate(time.Microsecond)
	rev, err := store.RevokeKey(ctx, db.Pool, "exec", at)
	require.NoError(t, err)
	require.True(t, rev.RevokedAt.Equal(at))
	again, err := store.RevokeKey(ctx, db.Pool, "exec", at.Add(time.Hour))
	require.NoError(t, err)
	require.True(t, again.RevokedAt.Equal(at), "the first revocation stands")
	_, err = store.KeyByHash(ctx, db.Pool, h[:])
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = store.RevokeKey(ctx, db.Pool, "nope", at)
	require.ErrorIs(t, err, store.ErrNotFound)

	keys, err := store.ListKeys(ctx, db.Pool, "acme")
	require.NoError(t, err)
	require.Len(t, keys, 1)
	keys, err = store.ListKeys(ctx, db.Pool, "")
	require.NoError(t, err)
	require.Len(t, keys, 2)
}

// A write budget's window: writes add up within it, start again after it,
// and a refund never takes the count below zero.
func TestChargeBudget(t *testing.T) {
	t.Parallel()
	db := pgtest.NewSchema(t)
	ctx := context.Background()
	require.NoError(t, store.EnsureTenant(ctx, db.Pool, "acme"))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n, start, err := store.ChargeBudget(ctx, db.Pool, "acme", "a", "s", 2, t0, time.Hour)
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	require.True(t, start.Equal(t0))
	n, _, err = store.ChargeBudget(ctx, db.Pool, "acme", "a", "s", 3, t0.Add(59*time.Minute), time.Hour)
	require.NoError(t, err)
	require.EqualValues(t, 5, n)
	n, _, err = store.ChargeBudget(ctx, db.Pool, "acme", "a", "other", 1, t0.Add(59*time.Minute), time.Hour)
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "a session of its own")
	n, start, err = store.ChargeBudget(ctx, db.Pool, "acme", "a", "s", 1, t0.Add(61*time.Minute), time.Hour)
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "a new window")
	require.True(t, start.Equal(t0.Add(61*time.Minute)))
	n, _, err = store.ChargeBudget(ctx, db.Pool, "acme", "a", "s", -5, t0.Add(62*time.Minute), time.Hour)
	require.NoError(t, err)
	require.Zero(t, n)
}

// BenchmarkKeyLookup measures what authenticating a key kept in the
// database costs per request: one lookup by hash among many keys.
func BenchmarkKeyLookup(b *testing.B) {
	db := pgtest.NewSchema(b)
	ctx := context.Background()
	require.NoError(b, store.EnsureTenant(ctx, db.Pool, "acme"))
	const n = 10_000
	for i := range n {
		_, err := store.InsertKey(ctx, db.Pool, newKey(fmt.Sprintf("key-%d", i), "acme", "curator", ""))
		require.NoError(b, err)
	}
	_, err := db.Pool.Exec(ctx, "ANALYZE api_keys")
	require.NoError(b, err)
	hashes := make([][]byte, n)
	for i := range n {
		h := sha256.Sum256([]byte(fmt.Sprintf("secret-key-%d", i)))
		hashes[i] = h[:]
	}
	b.Run("by_hash", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := store.KeyByHash(ctx, db.Pool, hashes[i%n]); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The floor: one round trip that reads nothing.
	b.Run("round_trip", func(b *testing.B) {
		for b.Loop() {
			var one int
			if err := db.Pool.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
				b.Fatal(err)
			}
		}
	})
}
