package decay_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/memory"
)

// checksum digests every table decay could touch.
func (b *bundle) checksum(t *testing.T) string {
	t.Helper()
	var sum string
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, `
SELECT md5(
	(SELECT coalesce(string_agg(r::text, '|' ORDER BY tenant_id, id), '') FROM records r) ||
	(SELECT coalesce(string_agg(v::text, '|' ORDER BY tenant_id, record_id, version), '') FROM record_versions v) ||
	(SELECT coalesce(string_agg(a::text, '|' ORDER BY id), '') FROM audit_log a) ||
	(SELECT coalesce(string_agg(s::text, '|' ORDER BY tenant_id, record_id), '') FROM record_salience s) ||
	(SELECT coalesce(string_agg(f::text, '|' ORDER BY tenant_id, scope, record_id), '') FROM feedback f))`).Scan(&sum))
	return sum
}

// A preview shows the effect of a proposed configuration, now and at a
// horizon, beside the one in force, and changes nothing.
func TestPreviewChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, s := range []string{"a", "b", "c", "d"} {
		b.create(t, fact(s))
	}
	own := b.create(t, withDecay(fact("own"), memory.Decay{Curve: memory.Exponential, HalfLifeSeconds: 1000 * 86400}))
	pinned := fact("pinned")
	pinned.Lifecycle.Pinned = true
	b.create(t, pinned)
	for range 3 {
		b.create(t, episode())
	}
	b.sweep(t)
	b.clock.Advance(10 * day)
	before := b.checksum(t)

	proposed, err := decay.ParseConfig([]byte(`profiles: {semantic: {half_life: 1d}, episodic: {curve: linear}}`))
	require.NoError(t, err)
	pv, err := b.decayer.Preview(b.ctx, b.tenant, proposed, b.clock.Now().Add(30*day))
	require.NoError(t, err)
	require.Equal(t, before, b.checksum(t), "a preview writes nothing")

	sem := pv.Types[memory.Semantic]
	require.Equal(t, 6, sem.Records)
	require.Equal(t, 0, sem.Current.PruneNow)
	require.Equal(t, 0, sem.Current.PruneAt, "90-day half-life: 40 days leave 0.73")
	require.Equal(t, 4, sem.Proposed.PruneNow, "1-day half-life: 10 days leave 0.001; not the pinned one, nor the one with its own profile")
	require.Equal(t, 4, sem.Proposed.PruneAt)
	require.Equal(t, 5, sem.Proposed.At.Counts[0], "faded below 0.05, the pinned one too")
	require.Equal(t, 1, sem.Proposed.At.Counts[len(decay.Bounds)-1], "the record with its own profile keeps it: in (0.9, 1]")
	require.Equal(t, own.Lifecycle.Decay, b.get(t, own.ID).Lifecycle.Decay)

	ep := pv.Types[memory.Episodic]
	require.Equal(t, 3, ep.Records)
	require.Equal(t, 3, ep.Current.PruneAt, "40 days of a weekly half-life leave 0.019")
	require.Equal(t, 3, ep.Proposed.PruneAt, "linear: gone after two weeks")
	require.Equal(t, 0, ep.Proposed.PruneNow, "linear at 10 days of 7: 0.29 left")
	require.InDelta(t, 1-10.0/14, ep.Proposed.Now.Mean, 1e-9)
	require.InDelta(t, 0.3715, ep.Current.Now.Mean, 1e-4)

	st, err := b.decayer.Stats(b.ctx, b.tenant)
	require.NoError(t, err)
	require.Equal(t, before, b.checksum(t), "statistics write nothing")
	require.Equal(t, 6, st.Types[memory.Semantic].Records)
	require.Equal(t, ep.Current.Now, st.Types[memory.Episodic].Salience, "statistics are the preview's now, under the profiles in force")
	require.Len(t, st.Types[memory.Episodic].Salience.Counts, len(decay.Bounds)+1)
}

// A preview refuses an invalid configuration and a horizon in the past is
// now.
func TestPreviewRefusesInvalidConfig(t *testing.T) {
	t.Parallel()
	b := setup(t)
	bad := decay.DefaultConfig()
	p := bad.Profiles[memory.Working]
	p.HalfLife = 0
	bad.Profiles[memory.Working] = p
	_, err := b.decayer.Preview(b.ctx, b.tenant, bad, b.clock.Now())
	require.EqualError(t, err, "decay.profiles.working.half_life: must be positive")

	pv, err := b.decayer.Preview(b.ctx, b.tenant, decay.DefaultConfig(), b.clock.Now().Add(-time.Hour))
	require.NoError(t, err)
	require.Equal(t, pv.Now, pv.At)
}
