package decay_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

// A record whose salience fades below the threshold is expired by the
// sweep, audited, out of the active set, and restored by restore; restored,
// it is not expired again by the next sweep.
func TestPruneThenRestore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.create(t, fact("user"))
	keep := b.create(t, fact("team"))

	// Semantic facts halve every 90 days: after 5 half-lives 1/32 < 0.05.
	b.clock.Advance(4 * 90 * day)
	_, err := b.decayer.Feedback(b.ctx, b.tenant, decay.FeedbackRequest{RecordIDs: []uuid.UUID{keep.ID}, Outcome: decay.UsedSuccess}, b.ch)
	require.NoError(t, err)
	b.clock.Advance(90 * day)
	counts := b.sweep(t)
	require.Equal(t, int64(2), counts["scanned"])
	require.Equal(t, int64(1), counts["expired_salience"])

	got := b.get(t, f.ID)
	require.Equal(t, memory.Expired, got.Status)
	require.Equal(t, 2, got.Version)
	require.Equal(t, memory.Active, b.get(t, keep.ID).Status)
	page, err := store.List(b.ctx, b.db.Pool, b.tenant, store.Filter{})
	require.NoError(t, err)
	require.Len(t, page.Records, 1, "an expired record leaves the active set")
	audit, err := store.Audit(b.ctx, b.db.Pool, b.tenant, f.ID)
	require.NoError(t, err)
	last := audit[len(audit)-1]
	require.Equal(t, revise.ActionExpire, last.Action)
	require.Equal(t, decay.Actor, last.Actor)
	require.Equal(t, "salience 0.0312 fell below the prune threshold 0.05", last.Rationale)
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM record_salience"), "only the live record is materialised")
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM records WHERE status = 'expired' AND expired_at = $1", b.clock.Now()))

	restored, err := b.decayer.Restore(b.ctx, b.tenant, f.ID, revise.Change{Actor: "operator", Rationale: "still true"})
	require.NoError(t, err)
	require.Equal(t, memory.Active, restored.Status)
	require.Equal(t, 3, restored.Version)
	require.Equal(t, 1.0, restored.Salience, "decay restarts from the salience of the last reinforcement")
	require.Equal(t, b.clock.Now(), restored.Lifecycle.LastReinforcedAt)
	require.Equal(t, 0, b.count(t, "SELECT count(*) FROM records WHERE expired_at IS NOT NULL"))
	audit, err = store.Audit(b.ctx, b.db.Pool, b.tenant, f.ID)
	require.NoError(t, err)
	require.Equal(t, revise.ActionRestore, audit[len(audit)-1].Action)
	require.Equal(t, "operator", audit[len(audit)-1].Actor)

	counts = b.sweep(t)
	require.Zero(t, counts["expired_salience"])
	require.Equal(t, memory.Active, b.get(t, f.ID).Status)

	// Only expired records are restored.
	_, err = b.decayer.Restore(b.ctx, b.tenant, f.ID, b.ch)
	var ce *revise.ConflictError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, revise.CodeNotAllowed, ce.Code)
}

// A contested record comes back contested; a fact whose place another
// active fact took meanwhile is not restored, and the conflict names it.
func TestRestoreReturnsToThePreviousStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, c := b.create(t, fact("x")), b.create(t, fact("y"))
	_, err := b.w.Contest(b.ctx, b.tenant, []uuid.UUID{a.ID, c.ID}, nil, b.ch)
	require.NoError(t, err)
	g := b.create(t, fact("z"))
	b.clock.Advance(500 * day)
	require.Equal(t, int64(3), b.sweep(t)["expired_salience"])

	rec, err := b.decayer.Restore(b.ctx, b.tenant, a.ID, b.ch)
	require.NoError(t, err)
	require.Equal(t, memory.Contested, rec.Status)

	newer := b.create(t, fact("z"))
	_, err = b.decayer.Restore(b.ctx, b.tenant, g.ID, b.ch)
	var ce *revise.ConflictError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, revise.CodeActiveFactExists, ce.Code)
	require.Equal(t, []uuid.UUID{newer.ID}, ce.RecordIDs)
	require.Equal(t, memory.Expired, b.get(t, g.ID).Status, "nothing changed")
}

// An expired record is purged only after the grace period, with its
// versions, leaving an audit entry that names no content; the artifacts
// only it referenced go with it, those another record references stay.
func TestPruneThenPurgeAfterGrace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	only, shared := b.artifact(t, "log only the old episode has"), b.artifact(t, "log both episodes have")
	old := b.create(t, episode(only, shared))
	_, err := b.w.AppendEpisode(b.ctx, b.tenant, old.ID, revise.EpisodeAppend{Timeline: []memory.TimelineEntry{
		{T: b.clock.Now(), EventKind: "tool_output", Ref: "evt://1"}}}, b.ch)
	require.NoError(t, err)
	pinned := episode(shared)
	pinned.Lifecycle.Pinned = true
	survivor := b.create(t, pinned)

	b.clock.Advance(60 * day) // episodes halve weekly
	require.Equal(t, int64(1), b.sweep(t)["expired_salience"])
	require.Equal(t, memory.Expired, b.get(t, old.ID).Status)

	b.clock.Advance(7*day - time.Second)
	require.Equal(t, int64(0), b.purge(t)["purged"], "still within the grace period: restorable")
	require.Equal(t, memory.Expired, b.get(t, old.ID).Status)

	b.clock.Advance(2 * time.Second)
	counts := b.purge(t)
	require.Equal(t, int64(1), counts["purged"])
	require.Equal(t, int64(1), counts["artifacts_purged"])

	_, err = store.Get(b.ctx, b.db.Pool, b.tenant, old.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Equal(t, 0, b.count(t, "SELECT count(*) FROM record_versions WHERE record_id = $1", old.ID))
	require.Equal(t, 0, b.count(t, "SELECT count(*) FROM episode_entries WHERE record_id = $1", old.ID))
	audit, err := store.Audit(b.ctx, b.db.Pool, b.tenant, old.ID)
	require.NoError(t, err)
	last := audit[len(audit)-1]
	require.Equal(t, revise.ActionPurge, last.Action)
	require.NotContains(t, last.Rationale, "log")
	require.Empty(t, last.Evidence)

	_, _, err = store.GetArtifact(b.ctx, b.db.Pool, b.tenant, only)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, _, err = store.GetArtifact(b.ctx, b.db.Pool, b.tenant, shared)
	require.NoError(t, err, "another episode still references it")
	require.Equal(t, memory.Active, b.get(t, survivor.ID).Status)

	_, err = b.decayer.Restore(b.ctx, b.tenant, old.ID, b.ch)
	require.ErrorIs(t, err, store.ErrNotFound, "purged is gone for good")
}

func (b *bundle) artifact(t *testing.T, content string) string {
	t.Helper()
	a, err := b.w.PutArtifact(b.ctx, b.tenant, "text/plain", []byte(content))
	require.NoError(t, err)
	sum := sha256.Sum256([]byte(content))
	require.Equal(t, hex.EncodeToString(sum[:]), a.SHA256)
	return a.SHA256
}

// Pinned and never records survive any decay; manual_only records survive
// the sweep and leave only by an operator's delete.
func TestPinnedNeverAndManualOnlySurvive(t *testing.T) {
	t.Parallel()
	b := setup(t)
	expires := b.clock.Now().Add(time.Hour)
	mk := func(mod func(*memory.Record)) memory.Record {
		r := fact(time.Now().String())
		r.Lifecycle.ExpiresAt = &expires
		mod(&r)
		return b.create(t, r)
	}
	pinned := mk(func(r *memory.Record) { r.Lifecycle.Pinned = true })
	never := mk(func(r *memory.Record) { r.Lifecycle.DeletionPolicy = memory.Never })
	manual := mk(func(r *memory.Record) { r.Lifecycle.DeletionPolicy = memory.ManualOnly })
	auto := mk(func(r *memory.Record) {})

	b.clock.Advance(3000 * day) // past expires_at, and faded to nothing
	counts := b.sweep(t)
	require.Equal(t, int64(1), counts["expired_expires_at"])
	require.Equal(t, memory.Expired, b.get(t, auto.ID).Status)
	for _, r := range []memory.Record{pinned, never, manual} {
		got := b.get(t, r.ID)
		require.Equal(t, memory.Active, got.Status, "%+v", got.Lifecycle)
		require.Equal(t, 1, got.Version)
	}
	require.Equal(t, 3, b.count(t, "SELECT count(*) FROM record_salience"), "survivors are still materialised")

	_, err := b.w.Delete(b.ctx, b.tenant, manual.ID, revise.Change{Actor: "operator"})
	require.NoError(t, err, "an operator may delete a manual_only record")
	_, err = b.w.Delete(b.ctx, b.tenant, never.ID, revise.Change{Actor: "operator"})
	var ce *revise.ConflictError
	require.ErrorAs(t, err, &ce, "never means never")
}

// max_age counts from the last reinforcement; expires_at is the client's
// and is never extended by a restore.
func TestMaxAgeAndExpiresAt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	short := b.create(t, withDecay(fact("short"), memory.Decay{Curve: memory.Exponential, HalfLifeSeconds: 1000 * 86400, MaxAgeSeconds: 86400}))
	ttl := fact("ttl")
	at := b.clock.Now().Add(2 * time.Hour)
	ttl.Lifecycle.ExpiresAt = &at
	ttl = b.create(t, ttl)

	b.clock.Advance(23 * time.Hour)
	_, err := b.decayer.Feedback(b.ctx, b.tenant, decay.FeedbackRequest{RecordIDs: []uuid.UUID{short.ID}, Outcome: decay.Unused}, b.ch)
	require.NoError(t, err)
	b.clock.Advance(23 * time.Hour)
	counts := b.sweep(t)
	require.Equal(t, int64(1), counts["expired_expires_at"])
	require.Zero(t, counts["expired_max_age"], "feedback 23h ago restarted its max_age")
	b.clock.Advance(time.Hour)
	counts = b.sweep(t)
	require.Equal(t, int64(1), counts["expired_max_age"])
	require.Equal(t, memory.Expired, b.get(t, short.ID).Status)

	_, err = b.decayer.Restore(b.ctx, b.tenant, ttl.ID, b.ch)
	var ce *revise.ConflictError
	require.ErrorAs(t, err, &ce)
	require.Contains(t, ce.Detail, "never extended")
	_, err = b.decayer.Restore(b.ctx, b.tenant, short.ID, b.ch)
	require.NoError(t, err)
}

// Records that inherit their type's profile take a changed one at the next
// sweep; a record with a profile of its own keeps it.
func TestSweepStampsChangedProfiles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inherits := b.create(t, fact("inherits"))
	own := b.create(t, withDecay(fact("own"), memory.Decay{Curve: memory.Linear, HalfLifeSeconds: 3600}))
	require.Equal(t, memory.DefaultDecay(memory.Semantic), inherits.Lifecycle.Decay)

	cfg := decay.DefaultConfig()
	p := cfg.Profiles[memory.Semantic]
	p.Curve, p.HalfLife, p.Floor = memory.Custom, decay.Duration(day), 0.1
	p.Points = []decay.Point{{Age: decay.Duration(10 * day), Salience: 0.5}}
	cfg.Profiles[memory.Semantic] = p
	require.NoError(t, b.settings.Set(cfg))

	require.Equal(t, int64(1), b.sweep(t)["stamped"])
	got := b.get(t, inherits.ID)
	require.Equal(t, p.Decay(), got.Lifecycle.Decay)
	require.Equal(t, 1, got.Version, "a profile is not content: no new version")
	require.Equal(t, own.Lifecycle.Decay, b.get(t, own.ID).Lifecycle.Decay)
	require.Zero(t, b.sweep(t)["stamped"])

	// New records of the type get the new profile.
	require.Equal(t, p.Decay(), b.create(t, fact("later")).Lifecycle.Decay)
}

// A sweep cut off part-way saves its cursor after each batch; the next one
// resumes there, and the whole walk reads each record once.
func TestSweepResumesFromItsCursor(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *decay.Config) { c.BatchSize = 3 })
	for i := range 10 {
		b.create(t, fact(string(rune('a'+i))))
	}
	b.clock.Advance(2 * time.Minute) // past the allowance for clock skew
	ctx, cancel := context.WithCancel(b.ctx)
	p := &progress{onSave: func(saves int) {
		if saves == 2 {
			cancel() // shutdown after the second batch
		}
	}}
	err := b.decayer.Sweep(ctx, p)
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
	require.NotNil(t, p.cursor)
	require.Equal(t, int64(6), p.counts["scanned"])
	require.Equal(t, 6, b.count(t, "SELECT count(*) FROM record_salience"))

	p.counts = nil
	require.NoError(t, b.decayer.Sweep(b.ctx, p))
	require.Equal(t, int64(4), p.counts["scanned"], "resumed after the sixth record")
	require.Equal(t, int64(4), p.counts["materialised"])
	require.Equal(t, 10, b.count(t, "SELECT count(*) FROM record_salience"))

	// The next pass starts from the start, and rewrites only what moved.
	b.clock.Advance(2 * time.Minute)
	p.counts = nil
	require.NoError(t, b.decayer.Sweep(b.ctx, p))
	require.Equal(t, int64(10), p.counts["scanned"])
	require.Zero(t, p.counts["materialised"])
}

// The sweep materialises each live record's current salience, writes a
// row again only when it moved a step or the record changed, and a record
// that leaves the active set leaves record_salience.
func TestSweepMaterialisesSalience(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.create(t, fact("f"))
	e := b.create(t, episode())
	b.clock.Advance(7*day + 30*time.Minute) // the episode at 0.499
	require.Equal(t, int64(2), b.sweep(t)["materialised"])
	var fs, es float64
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, "SELECT salience FROM record_salience WHERE record_id = $1", f.ID).Scan(&fs))
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, "SELECT salience FROM record_salience WHERE record_id = $1", e.ID).Scan(&es))
	require.InDelta(t, decay.Current(b.get(t, f.ID), b.clock.Now()), fs, 1e-12)
	require.InDelta(t, 0.4990, es, 1e-4)
	require.Equal(t, 1.0, b.get(t, e.ID).Salience, "the sweep never writes the stored salience")

	b.clock.Advance(time.Hour)
	require.Zero(t, b.sweep(t)["materialised"], "an hour moves neither a step")
	b.clock.Advance(6 * time.Hour)
	require.Equal(t, int64(1), b.sweep(t)["materialised"], "the episode moved a step in 7 hours, the fact did not")
	_, err := b.decayer.Feedback(b.ctx, b.tenant, decay.FeedbackRequest{RecordIDs: []uuid.UUID{f.ID}, Outcome: decay.Unused}, b.ch)
	require.NoError(t, err)
	require.Equal(t, int64(1), b.sweep(t)["materialised"], "feedback changed the fact")
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, "SELECT salience FROM record_salience WHERE record_id = $1", f.ID).Scan(&fs))
	require.InDelta(t, decay.Current(b.get(t, f.ID), b.clock.Now()), fs, 1e-12)

	_, err = b.w.Retract(b.ctx, b.tenant, f.ID, 0, b.ch)
	require.NoError(t, err)
	require.Equal(t, 0, b.count(t, "SELECT count(*) FROM record_salience WHERE record_id = $1", f.ID), "by trigger, at once")

	// A crash empties the unlogged table: the next sweep writes every row.
	_, err = b.db.Pool.Exec(b.ctx, "TRUNCATE record_salience")
	require.NoError(t, err)
	require.Equal(t, int64(1), b.sweep(t)["materialised"])
}

// A record reinforced after the sweep read it is not expired by that
// sweep's stale decision.
func TestExpireSkipsRecordsChangedSinceRead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.create(t, fact("f"))
	b.clock.Advance(500 * day)
	rows, err := store.ScanLive(b.ctx, b.db.Pool, "", store.Key{}, 10)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	_, err = b.decayer.Feedback(b.ctx, b.tenant, decay.FeedbackRequest{RecordIDs: []uuid.UUID{f.ID}, Outcome: decay.UsedSuccess}, b.ch)
	require.NoError(t, err)
	r := rows[0].Record
	expired, err := b.w.Expire(b.ctx, []store.Expiry{{Key: rows[0].Key(), Version: r.Version, Salience: r.Salience,
		LastReinforcedAt: r.Lifecycle.LastReinforcedAt, Rationale: "stale"}}, decay.Actor, b.clock.Now())
	require.NoError(t, err)
	require.Empty(t, expired)
	require.Equal(t, memory.Active, b.get(t, f.ID).Status)
}

// An episode with appended entries expires and comes back whole.
func TestRestoreEpisodeKeepsItsTimeline(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.create(t, episode())
	_, err := b.w.AppendEpisode(b.ctx, b.tenant, e.ID, revise.EpisodeAppend{Timeline: []memory.TimelineEntry{
		{T: b.clock.Now(), EventKind: "tool_call", Ref: "evt://1"}, {T: b.clock.Now(), EventKind: "tool_output", Ref: "evt://2"}}}, b.ch)
	require.NoError(t, err)
	b.clock.Advance(60 * day)
	require.Equal(t, int64(1), b.sweep(t)["expired_salience"])
	rec, err := b.decayer.Restore(b.ctx, b.tenant, e.ID, b.ch)
	require.NoError(t, err)
	require.Equal(t, memory.Active, rec.Status)
	var p memory.EpisodicPayload
	require.NoError(t, json.Unmarshal(b.get(t, e.ID).Payload, &p))
	require.Len(t, p.Timeline, 2)
}
