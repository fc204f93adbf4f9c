package store_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// The window consolidation regroups comes with the features stored for
// its episodes (migration 031): those of the learner asked for, learned at
// the episode's current version, none else; in closing order. A row goes
// with its episode (the foreign key: erasure and purge delete episodes),
// with its tenant's erasure, and, sealed under a retired data key, with a
// rotation.
func TestEpisodeFeatures(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var eps []memory.Record
	for i := range 4 {
		ep := b.create(t, episode())
		wm := b.create(t, working(fmt.Sprintf("t-%d", i), "done"))
		gen, err := store.InsertThread(b.ctx, b.pool, b.tenant, fmt.Sprintf("t-%d", i), "coder", ep.ID, wm.ID)
		require.NoError(t, err)
		require.NoError(t, store.CloseThread(b.ctx, b.pool, b.tenant, fmt.Sprintf("t-%d", i), gen))
		eps = append(eps, ep)
	}
	put := func(learner string, version int, docs ...string) {
		t.Helper()
		var fs []store.EpisodeFeatures
		for i, d := range docs {
			if d == "" {
				continue
			}
			fs = append(fs, store.EpisodeFeatures{Episode: eps[i].ID, Version: version, Features: []byte(d)})
		}
		require.NoError(t, store.PutEpisodeFeatures(b.ctx, b.pool, b.tenant, learner, fs))
	}
	window := func(learner string) map[int]string {
		t.Helper()
		w, err := store.TenantClosedEpisodes(b.ctx, b.pool, b.tenant, 10, learner)
		require.NoError(t, err)
		out := map[int]string{}
		for i, e := range w {
			if i > 0 {
				prev := w[i-1]
				require.True(t, prev.ClosedAt.Before(e.ClosedAt) || prev.ClosedAt.Equal(e.ClosedAt) && bytes.Compare(prev.ID[:], e.ID[:]) < 0,
					"closing order")
			}
			require.Equal(t, 1, e.Version)
			for k, ep := range eps {
				if ep.ID == e.ID && e.Features != nil {
					out[k] = string(e.Features)
				}
			}
		}
		require.Len(t, w, len(eps))
		return out
	}

	put("v1/a", 1, `{"p":0}`, `{"p":1}`)
	put("v1/a", 2, "", "", `{"p":2}`) // learned at a version the episode is not at
	require.Equal(t, map[int]string{0: `{"p":0}`, 1: `{"p":1}`}, window("v1/a"))
	require.Empty(t, window("v2/a"), "another learner's rows are not read")
	put("v2/a", 1, `{"q":0}`)
	require.Equal(t, map[int]string{0: `{"q":0}`}, window("v2/a"), "replaced")
	require.Equal(t, map[int]string{1: `{"p":1}`}, window("v1/a"))

	// Erasure and purge delete episodes in one statement, in a transaction
	// that says so: the rows go with them.
	require.NoError(t, pg.WithTx(b.ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		_, err := store.EraseRecords(ctx, tx, b.tenant, []uuid.UUID{eps[1].ID}, "test", "erasure")
		return err
	}))
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM episode_features`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM episode_features WHERE episode_id = $1`, eps[1].ID))
	put("v2/a", 1, "", "", "", `{"q":3}`)
	put("v2/a", 1, `{"q":0}`, `{"erased":1}`)
	require.Equal(t, 3, b.count(t, `SELECT count(*) FROM episode_features`), "an episode gone is skipped")

	// A rotation forgets the rows sealed under another key than the new
	// one, and counts them until it has.
	put("v2/a", 1, `{"sealed":{"key":1,"data":"AAAA"}}`, "", `{"sealed":{"key":2,"data":"AAAA"}}`)
	left, err := store.CountToReseal(b.ctx, b.pool, b.tenant, 2)
	require.NoError(t, err)
	require.Equal(t, int64(1), left)
	n, err := store.ForgetSealedFeatures(b.ctx, b.pool, b.tenant, 2)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM episode_features`), "the plain row and the one under key 2 stay")

	n, err = store.ForgetEpisodeFeatures(b.ctx, b.pool, b.tenant)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Zero(t, b.count(t, `SELECT count(*) FROM episode_features`))
}
