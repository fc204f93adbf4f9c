package decay

import (
	"context"
	"time"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// Bounds are the upper bounds of the salience histograms of previews,
// statistics and metrics.
var Bounds = []float64{0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}

// Histogram is a salience distribution over [Bounds]: Counts[i] records
// have a salience above Bounds[i-1] and at most Bounds[i]; the last count
// is of the records above 1.
type Histogram = api.SalienceHistogram

func newHistogram() Histogram { return Histogram{Counts: make([]int, len(Bounds)+1)} }

// histogramAdd counts salience v into h.
func histogramAdd(h *Histogram, v float64) {
	i := 0
	for i < len(Bounds) && v > Bounds[i] {
		i++
	}
	h.Counts[i]++
	h.Mean += v // a sum until histogramMean
}

// histogramMean turns h's sum of n saliences into their mean.
func histogramMean(h *Histogram, n int) {
	if n > 0 {
		h.Mean /= float64(n)
	}
}

// Stats is the salience of a tenant's active set now, by type: the answer
// of GET /v1/stats/salience.
type Stats = api.SalienceStats

// TypeStats is one type's part of [Stats]: how many live records, their
// salience and how many the next sweep would expire.
type TypeStats = api.SalienceTypeStats

// Stats computes the exact salience distribution of a tenant's active set
// now, by type, with the profiles in force. It reads every live record of
// the tenant, a batch at a time, and changes nothing.
func (d *Decayer) Stats(ctx context.Context, tenant string) (Stats, error) {
	cfg := d.settings.Config()
	now := d.clock()
	st := Stats{At: now, PruneThreshold: cfg.PruneThreshold, Bounds: Bounds, Types: map[memory.Type]*TypeStats{}}
	for _, t := range memory.Types {
		st.Types[t] = &TypeStats{Salience: newHistogram()}
	}
	err := d.eachLive(ctx, tenant, cfg.BatchSize, func(row store.DecayRow) {
		rec := effective(row, cfg)
		cur := Current(rec, now)
		ts := st.Types[rec.Type]
		ts.Records++
		histogramAdd(&ts.Salience, cur)
		if expiryOf(rec, cur, cfg.PruneThreshold, now).reason != "" && prunable(rec) {
			ts.Prunable++
		}
	})
	for _, ts := range st.Types {
		histogramMean(&ts.Salience, ts.Records)
	}
	return st, err
}

// Preview is what a proposed decay configuration would do to a tenant's
// active set, beside the configuration in force: the salience distribution
// of each type now and at a horizon, and how many records a sweep would
// expire then, assuming no reinforcement in between. It is
// [api.DecayPreview] with the configurations typed.
type Preview struct {
	Now      time.Time                    `json:"now"`
	At       time.Time                    `json:"at"`
	Bounds   []float64                    `json:"bounds"`
	Current  Config                       `json:"current"`
	Proposed Config                       `json:"proposed"`
	Types    map[memory.Type]*TypePreview `json:"types"`
}

// TypePreview is one type's part of a [Preview].
type TypePreview = api.DecayTypePreview

// Projection is a type's salience under one configuration: its
// distribution now and at the horizon, and how many records a sweep would
// expire at each time.
type Projection = api.SalienceProjection

// Preview computes what proposed would do to a tenant's active set, now and
// at the horizon at, beside the configuration in force (for `engram decay
// preview`). Records that inherit their type's profile are projected with
// each configuration's; records with a profile of their own keep it. It
// reads every live record of the tenant and changes nothing.
func (d *Decayer) Preview(ctx context.Context, tenant string, proposed Config, at time.Time) (Preview, error) {
	if err := proposed.Validate(); err != nil {
		return Preview{}, err
	}
	cur := d.settings.Config()
	now := d.clock()
	if at.Before(now) {
		at = now
	}
	pv := Preview{Now: now, At: at.UTC(), Bounds: Bounds, Current: cur, Proposed: proposed, Types: map[memory.Type]*TypePreview{}}
	for _, t := range memory.Types {
		pv.Types[t] = &TypePreview{Current: newProjection(), Proposed: newProjection()}
	}
	batch := max(cur.BatchSize, proposed.BatchSize)
	err := d.eachLive(ctx, tenant, batch, func(row store.DecayRow) {
		tp := pv.Types[row.Record.Type]
		tp.Records++
		project(&tp.Current, effective(row, cur), cur.PruneThreshold, now, at)
		project(&tp.Proposed, effective(row, proposed), proposed.PruneThreshold, now, at)
	})
	for _, tp := range pv.Types {
		for _, pr := range []*Projection{&tp.Current, &tp.Proposed} {
			histogramMean(&pr.Now, tp.Records)
			histogramMean(&pr.At, tp.Records)
		}
	}
	return pv, err
}

func newProjection() Projection { return Projection{Now: newHistogram(), At: newHistogram()} }

// project counts rec into pr, at now and at the horizon at.
func project(pr *Projection, rec memory.Record, threshold float64, now, at time.Time) {
	for _, x := range []struct {
		t     time.Time
		h     *Histogram
		prune *int
	}{{now, &pr.Now, &pr.PruneNow}, {at, &pr.At, &pr.PruneAt}} {
		s := Current(rec, x.t)
		histogramAdd(x.h, s)
		if expiryOf(rec, s, threshold, x.t).reason != "" && prunable(rec) {
			*x.prune++
		}
	}
}

// effective is the record of row with the decay profile cfg gives it: its
// type's, if it inherits it.
func effective(row store.DecayRow, cfg Config) memory.Record {
	rec := row.Record
	if row.Inherited {
		if p, ok := cfg.Profiles[rec.Type]; ok {
			rec.Lifecycle.Decay = p.Decay()
		}
	}
	return rec
}

// eachLive calls f for every live record of tenant, reading batch records
// at a time, each read bounded by the batch timeout.
func (d *Decayer) eachLive(ctx context.Context, tenant string, batch int, f func(store.DecayRow)) error {
	var after store.Key
	for {
		bctx, cancel := context.WithTimeout(ctx, d.batchTimeout)
		rows, err := store.ScanLive(bctx, d.db, tenant, after, batch)
		cancel()
		if err != nil {
			return err
		}
		for _, r := range rows {
			f(r)
		}
		if len(rows) < batch {
			return nil
		}
		after = rows[len(rows)-1].Key()
	}
}
