package decay

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

// Reasons a sweep expires a record, as counted in metrics and job runs.
const (
	ReasonSalience  = "salience"
	ReasonMaxAge    = "max_age"
	ReasonExpiresAt = "expires_at"
)

// MaterialiseResolution is the step of materialised salience: a sweep
// writes a record's row again when its salience crosses a multiple of it,
// finer than any histogram bucket, so most rows stay as they are from one
// sweep to the next.
const MaterialiseResolution = 0.01

// clockSkew is how far the clocks of daemons sharing a database may
// disagree: records changed that close to the previous pass are written
// again whatever their salience did.
const clockSkew = time.Minute

// purgeBatch is how many records one purge transaction deletes: each drags
// its versions, relations and feedback along.
const purgeBatch = 1000

// sweepCursor is where a sweep stands: the last key done in the pass
// started at Pass, and when the last complete pass started (Since), which
// tells what the materialised salience already holds.
type sweepCursor struct {
	After store.Key `json:"after,omitzero"`
	Pass  time.Time `json:"pass,omitzero"`
	Since time.Time `json:"since,omitzero"`
}

// Sweep walks the active set of every tenant, a batch at a time in (tenant,
// id) order, resuming from p's cursor. For each record it stamps its type's
// configured profile if it inherits one that changed, computes its current
// salience, and either materialises it or, when it has faded below the
// prune threshold, outlived its max_age or passed its expires_at, expires
// it (substrate RFC §11, §15B; governance chapter §12.7.4). Pinned records
// and records whose deletion policy is manual_only or never are never
// expired here.
//
// A record's materialised row is written when the record is new or changed
// since the previous complete pass began, its profile was stamped, or its
// salience crossed a step of [MaterialiseResolution] since then; decay
// being monotonic, the row otherwise still holds its salience to within a
// step. When record_salience is empty (no pass yet, or a crash emptied it)
// every row is written.
func (d *Decayer) Sweep(ctx context.Context, p Progress) error {
	var c sweepCursor
	if _, err := p.Cursor(ctx, &c); err != nil {
		return err
	}
	if c.Pass.IsZero() {
		c.Pass = d.clock()
		filled, err := store.AnyMaterialised(ctx, d.db)
		if err != nil {
			return err
		}
		if !filled {
			c.Since = time.Time{}
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		cfg := d.settings.Config()
		last, n, err := d.sweepBatch(ctx, cfg, c, p)
		if err != nil {
			return err
		}
		if n < cfg.BatchSize {
			return p.SaveCursor(ctx, sweepCursor{Since: c.Pass})
		}
		c.After = last
		if err := p.SaveCursor(ctx, c); err != nil {
			return err
		}
	}
}

// sweepBatch sweeps the records after the cursor's key and returns the last
// key and how many records it read.
func (d *Decayer) sweepBatch(ctx context.Context, cfg Config, c sweepCursor, p Progress) (store.Key, int, error) {
	ctx, cancel := context.WithTimeout(ctx, d.batchTimeout)
	defer cancel()
	rows, err := store.ScanLive(ctx, d.db, "", c.After, cfg.BatchSize)
	if err != nil {
		return c.After, 0, err
	}
	now := d.clock()
	changedSince := c.Since.Add(-clockSkew)
	var (
		values  []store.Salience
		expiry  []store.Expiry
		reasons = map[store.Key]expiryReason{}
		stamps  []store.Stamp
	)
	for _, row := range rows {
		rec := row.Record
		stamped := false
		if row.Inherited {
			want := cfg.Profiles[rec.Type].Decay()
			if !sameDecay(rec.Lifecycle.Decay, want) {
				stamps = append(stamps, store.Stamp{Key: row.Key(), Decay: want})
				rec.Lifecycle.Decay = want
				stamped = true
			}
		}
		cur := Current(rec, now)
		if why := expiryOf(rec, cur, cfg.PruneThreshold, now); why.reason != "" && prunable(rec) {
			expiry = append(expiry, store.Expiry{
				Key: row.Key(), Version: rec.Version, Salience: rec.Salience,
				LastReinforcedAt: rec.Lifecycle.LastReinforcedAt, Rationale: why.rationale,
			})
			reasons[row.Key()] = why
			continue
		}
		if c.Since.IsZero() || stamped || rec.UpdatedAt.After(changedSince) || rec.Lifecycle.LastReinforcedAt.After(changedSince) ||
			step(Current(rec, c.Since)) != step(cur) {
			values = append(values, store.Salience{Key: row.Key(), Type: rec.Type, Value: cur})
		}
	}
	if err := d.writer.StampProfiles(ctx, stamps); err != nil {
		return c.After, 0, err
	}
	expired, err := d.writer.Expire(ctx, expiry, Actor, now)
	if err != nil {
		return c.After, 0, err
	}
	if err := store.MaterialiseSalience(ctx, d.db, values, now); err != nil {
		return c.After, 0, err
	}
	last := c.After
	if len(rows) > 0 {
		last = rows[len(rows)-1].Key()
	}

	p.Add("scanned", int64(len(rows)))
	p.Add("materialised", int64(len(values)))
	p.Add("stamped", int64(len(stamps)))
	types := make(map[store.Key]memory.Type, len(rows))
	for _, row := range rows {
		types[row.Key()] = row.Record.Type
	}
	for _, k := range expired {
		why := reasons[k]
		p.Add("expired_"+why.reason, 1)
		d.metrics.pruned.WithLabelValues(string(types[k]), why.reason).Inc()
	}
	if len(expired) > 0 {
		d.logger.LogAttrs(ctx, slog.LevelInfo, "decay sweep expired records", slog.Int("expired", len(expired)), slog.Int("scanned", len(rows)))
	}
	return last, len(rows), nil
}

// step is the materialisation step salience s falls in.
func step(s float64) float64 { return math.Floor(s / MaterialiseResolution) }

// expiryReason is why a record is past its time, or nothing.
type expiryReason struct {
	reason    string
	rationale string
}

// expiryOf says whether rec, whose salience is cur at now, is past its
// time: its expires_at passed (OpenWOP memory §E), it was not reinforced
// within its max_age, or its salience fell below the prune threshold. It
// does not look at pinned or the deletion policy.
func expiryOf(rec memory.Record, cur, threshold float64, now time.Time) expiryReason {
	lc := rec.Lifecycle
	switch {
	case lc.ExpiresAt != nil && !now.Before(*lc.ExpiresAt):
		return expiryReason{ReasonExpiresAt, "its expires_at " + lc.ExpiresAt.UTC().Format(time.RFC3339) + " passed"}
	case lc.Decay.MaxAgeSeconds > 0 && now.Sub(lc.LastReinforcedAt) >= time.Duration(lc.Decay.MaxAgeSeconds)*time.Second:
		return expiryReason{ReasonMaxAge, "not reinforced within its max_age of " + Duration(time.Duration(lc.Decay.MaxAgeSeconds)*time.Second).String()}
	case cur < threshold:
		return expiryReason{ReasonSalience, fmt.Sprintf("salience %s fell below the prune threshold %s",
			strconv.FormatFloat(cur, 'f', 4, 64), strconv.FormatFloat(threshold, 'f', -1, 64))}
	}
	return expiryReason{}
}

// prunable reports whether decay may expire rec on its own: not pinned,
// and its deletion policy auto_prune (substrate RFC §15A.3). manual_only
// records leave only by an operator's delete; never records not at all.
func prunable(rec memory.Record) bool {
	return !rec.Lifecycle.Pinned && rec.Lifecycle.DeletionPolicy == memory.AutoPrune
}

// sameDecay compares the profile fields a type's profile stamps.
func sameDecay(a, b memory.Decay) bool {
	return a.Curve == b.Curve && a.HalfLifeSeconds == b.HalfLifeSeconds && a.MinSalience == b.MinSalience &&
		a.MaxAgeSeconds == b.MaxAgeSeconds && slices.Equal(a.Points, b.Points)
}

// Purge hard-deletes the records that expired longer ago than the purge
// grace period, with the artifacts only they referenced, a batch at a time
// (the second phase of two-phase collection, governance chapter §12.7.5).
// Each leaves an audit entry that names no content.
func (d *Decayer) Purge(ctx context.Context, p Progress) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		cfg := d.settings.Config()
		cutoff := d.clock().Add(-time.Duration(cfg.PurgeGrace))
		bctx, cancel := context.WithTimeout(ctx, d.batchTimeout)
		res, err := d.writer.PurgeExpired(bctx, cutoff, purgeBatch, Actor)
		cancel()
		if err != nil {
			return err
		}
		p.Add("purged", int64(res.Records))
		p.Add("artifacts_purged", int64(res.Artifacts))
		d.metrics.purged.Add(float64(res.Records))
		d.metrics.artifactsPurged.Add(float64(res.Artifacts))
		if res.Records > 0 {
			d.logger.LogAttrs(ctx, slog.LevelInfo, "purged expired records",
				slog.Int("records", res.Records), slog.Int("artifacts", res.Artifacts))
		}
		if res.Records < purgeBatch {
			return nil
		}
	}
}

// Restore brings an expired record back (substrate RFC §15B), as an audited
// revision. It comes back as if just reinforced: its decay restarts now
// from the salience it had at its last reinforcement, and at least one
// reinforcement gain above the prune threshold, so that the next sweep
// does not expire it again. A record whose expires_at has passed is not
// restored: that time is the client's and is never extended (OpenWOP
// memory §E).
func (d *Decayer) Restore(ctx context.Context, tenant string, id uuid.UUID, ch revise.Change) (memory.Record, error) {
	cfg := d.settings.Config()
	now := d.clock()
	var rec memory.Record
	err := d.writer.InTx(ctx, func(ctx context.Context, tx *revise.Tx) error {
		r, err := tx.LockExpired(ctx, tenant, id)
		if err != nil {
			return err
		}
		if exp := r.Lifecycle.ExpiresAt; exp != nil && !now.Before(*exp) {
			return &revise.ConflictError{Code: revise.CodeNotAllowed, RecordIDs: []uuid.UUID{r.ID},
				Detail: fmt.Sprintf("record %s expired at its expires_at %s, which is never extended", r.ID, exp.UTC().Format(time.RFC3339))}
		}
		gain := gainOf(r, cfg.Profiles[r.Type])
		r.Salience = max(r.Salience, min(MaxSalience, cfg.PruneThreshold+gain))
		r.Lifecycle.LastReinforcedAt = now
		rec, err = tx.Restore(ctx, tenant, r, ch)
		return err
	})
	if err != nil {
		return rec, err
	}
	d.metrics.restored.Inc()
	return rec, nil
}
