package store_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// Flags stay inside one tenant and go with a purged record, as the
// database holds them; a flag is raised once per source.
func TestFlagsInvariants(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, store.EnsureTenant(b.ctx, b.pool, "other"))
	src := b.create(t, fact("user", "prefers", "go", nil))
	flagged := b.create(t, fact("user", "likes", "tea", nil))
	theirs, err := b.w.Create(b.ctx, "other", fact("user", "likes", "tea", nil), b.ch)
	require.NoError(t, err)
	f := memory.Flag{Kind: memory.DerivedFromQuarantined, SourceID: src.ID, Reason: "suspect", At: time.Now()}

	require.NoError(t, store.InsertFlags(b.ctx, b.pool, b.tenant, f, []uuid.UUID{flagged.ID}))
	require.NoError(t, store.InsertFlags(b.ctx, b.pool, b.tenant, f, []uuid.UUID{flagged.ID}), "once per source")
	require.ErrorContains(t, store.InsertFlags(b.ctx, b.pool, "other", f, []uuid.UUID{theirs.ID}), "record_flags_tenant_id_source_id_fkey",
		"a flag cannot name a source in another tenant")
	require.ErrorContains(t, store.InsertFlags(b.ctx, b.pool, b.tenant, f, []uuid.UUID{src.ID}), "record_flags_check",
		"a record does not flag itself")

	recs := []memory.Record{flagged}
	require.NoError(t, store.AttachFlags(b.ctx, b.pool, b.tenant, recs))
	require.Len(t, recs[0].Flags, 1)
	recs = []memory.Record{theirs}
	require.NoError(t, store.AttachFlags(b.ctx, b.pool, "other", recs))
	require.Empty(t, recs[0].Flags)

	_, err = b.w.Delete(b.ctx, b.tenant, src.ID, b.ch)
	require.NoError(t, err)
	require.NoError(t, b.w.Purge(b.ctx, b.tenant, src.ID, b.ch))
	recs = []memory.Record{flagged}
	require.NoError(t, store.AttachFlags(b.ctx, b.pool, b.tenant, recs))
	require.Empty(t, recs[0].Flags, "a purge takes the flags its record raised")
}
