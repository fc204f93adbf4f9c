package store_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/store"
)

// expired_at follows the status whatever path changes it, and the database
// refuses one that does not.
func TestExpiredAtFollowsStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.create(t, fact("user", "likes", "tea", nil))
	_, err := b.pool.Exec(b.ctx, `UPDATE records SET status = 'expired', version = version + 1, updated_at = '2026-05-01T00:00:00Z' WHERE id = $1`, f.ID)
	require.NoError(t, err)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM records WHERE id = $1 AND expired_at = '2026-05-01T00:00:00Z'`, f.ID))

	_, err = b.pool.Exec(b.ctx, `UPDATE records SET expired_at = NULL WHERE id = $1`, f.ID)
	code, constraint := pg.Code(err)
	require.Equal(t, pg.CheckViolation, code)
	require.Equal(t, "records_expired_at", constraint)

	_, err = b.w.Delete(b.ctx, b.tenant, f.ID, b.ch)
	require.NoError(t, err, "an operator may delete an expired record")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM records WHERE id = $1 AND expired_at IS NULL AND status = 'deleted'`, f.ID))
}

// A record that names no decay profile follows its type's; one that names
// its own keeps it.
func TestRecordsInheritTheirTypeProfile(t *testing.T) {
	t.Parallel()
	d := memory.Decay{Curve: memory.Linear, HalfLifeSeconds: 3600, MinSalience: 0.1}
	b := setup(t, revise.Config{Defaults: func(memory.Type) (memory.Decay, memory.DeletionPolicy) { return d, memory.ManualOnly }})
	inherits := b.create(t, fact("a", "b", "c", nil))
	require.Equal(t, d, inherits.Lifecycle.Decay)
	require.Equal(t, memory.ManualOnly, inherits.Lifecycle.DeletionPolicy)
	r := fact("d", "e", "f", nil)
	r.Lifecycle.Decay = memory.Decay{Curve: memory.Exponential, HalfLifeSeconds: 60}
	r.Lifecycle.DeletionPolicy = memory.Never
	own := b.create(t, r)
	require.Equal(t, memory.Never, own.Lifecycle.DeletionPolicy)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM records WHERE id = $1 AND decay_inherited`, inherits.ID))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM records WHERE id = $1 AND NOT decay_inherited`, own.ID))
}

// A custom curve's points must be in order of age and never rise.
func TestCustomPointsAreMonotonic(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := fact("a", "b", "c", nil)
	r.Lifecycle.Decay = memory.Decay{Curve: memory.Custom, HalfLifeSeconds: 1, Points: []memory.DecayPoint{
		{AgeSeconds: 0, Salience: 0.9}, {AgeSeconds: 100, Salience: 0.5}, {AgeSeconds: 50, Salience: 0.4}, {AgeSeconds: 200, Salience: 0.6},
	}}
	_, err := b.w.Create(b.ctx, b.tenant, r, b.ch)
	var ve *schemas.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, []schemas.Violation{
		{Pointer: "/lifecycle/decay/points/0/salience", Message: "must be 1 at age 0: a curve starts from the whole salience"},
		{Pointer: "/lifecycle/decay/points/2/age_seconds", Message: "must be greater than the previous point's: points are in order of age"},
		{Pointer: "/lifecycle/decay/points/3/salience", Message: "must not be above the previous point's: decay never raises salience"},
	}, ve.Violations)
	require.Equal(t, 0, b.count(t, "SELECT count(*) FROM records"))
}

// The materialised salience distribution counts a record at most each
// bound at or above it, exactly on a bound included.
func TestMaterialisedSalienceBuckets(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var values []store.Salience
	for _, v := range []float64{0.05, 0.3, 1, 1, 1.5} {
		r := b.create(t, fact(uuid.NewString(), "p", 1, nil))
		values = append(values, store.Salience{Key: store.Key{Tenant: b.tenant, ID: r.ID}, Type: r.Type, Value: v})
	}
	require.NoError(t, store.MaterialiseSalience(b.ctx, b.pool, values, time.Now()))
	got, err := store.MaterialisedSalience(b.ctx, b.pool, []float64{0.05, 0.5, 1})
	require.NoError(t, err)
	sem := got[memory.Semantic]
	require.Equal(t, []uint64{1, 2, 4}, sem.Counts)
	require.Equal(t, uint64(5), sem.Count)
	require.InDelta(t, 3.85, sem.Sum, 1e-9)

	counts, err := store.CountRecords(b.ctx, b.pool)
	require.NoError(t, err)
	require.Equal(t, []store.RecordCount{{Type: memory.Semantic, Status: memory.Active, N: 5}}, counts)

	// A record that leaves the active set leaves record_salience; one that
	// is not live is not written.
	_, err = b.w.Retract(b.ctx, b.tenant, values[0].Key.ID, 0, b.ch)
	require.NoError(t, err)
	require.Equal(t, 4, b.count(t, "SELECT count(*) FROM record_salience"))
	require.NoError(t, store.MaterialiseSalience(b.ctx, b.pool, values, time.Now()))
	require.Equal(t, 4, b.count(t, "SELECT count(*) FROM record_salience"))
}

// A revision that changes only what the search text never reads (a
// procedure's statistics, a fact's revision object) keeps the record's
// tsv; any other change of payload or tags computes it again. Either way
// the tsv is the one its search text gives (migration 027).
func TestTSVFollowsTheSearchText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.create(t, fact("deploys", "use", "blue green", nil))
	fresh := `SELECT count(*) FROM records WHERE id = $1 AND tsv = to_tsvector('english', engram_search_text(type, payload, tags))`
	revise := func(set string) {
		t.Helper()
		_, err := b.pool.Exec(b.ctx, `UPDATE records SET `+set+`, version = version + 1, updated_at = now() WHERE id = $1`, f.ID)
		require.NoError(t, err)
		require.Equal(t, 1, b.count(t, fresh, f.ID), set)
	}
	revise(`payload = jsonb_set(payload, '{performance}', '{"successes": 3}')`)
	revise(`payload = payload - 'revision'`)
	revise(`payload = jsonb_set(payload, '{object}', '"canary"')`)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM records WHERE id = $1 AND tsv @@ to_tsquery('english', 'canary')`, f.ID))
	revise(`tags = '{rollout}'`)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM records WHERE id = $1 AND tsv @@ to_tsquery('english', 'rollout')`, f.ID))
}
