package consolidate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/signature"
	"github.com/engram-dev/engram/store"
)

// DefaultSimilarity is the cosine similarity at or above which two
// records' vectors make them near-duplicates (write-path RFC §12.3.2:
// ε_dedup = 0.05).
const DefaultSimilarity = 0.95

// maxCandidates bounds the records of each tier a record is compared with.
const maxCandidates = 20

// Tiers of duplicate resolution, the label of its metric.
const (
	tierHash        = "hash"
	tierFingerprint = "fingerprint"
	tierVector      = "vector"
)

// Duplicates configures duplicate resolution over stored records
// (engramd's consolidate.duplicates). Zero fields are defaults.
type Duplicates struct {
	// Off turns it off.
	Off bool `yaml:"off"`
	// Similarity is the cosine similarity at or above which two records'
	// vectors make them near-duplicates; [DefaultSimilarity] when zero.
	Similarity float64 `yaml:"similarity"`
}

func (d Duplicates) withDefaults() Duplicates {
	if d.Similarity == 0 {
		d.Similarity = DefaultSimilarity
	}
	return d
}

func (d Duplicates) validate() error {
	if d.Similarity < 0 || d.Similarity > 1 {
		return errors.New("consolidate.duplicates.similarity: must be in (0, 1] (0 for the default)")
	}
	return nil
}

func newDuplicateMetric(reg prometheus.Registerer) *prometheus.CounterVec {
	m := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "engram_consolidation_duplicates_total",
		Help: "Stored duplicates duplicate resolution settled, by the tier that found them (hash, fingerprint, vector) and outcome (merged, contested).",
	}, []string{"tier", "outcome"})
	if reg != nil {
		reg.MustRegister(m)
	}
	return m
}

// duplicates is duplicate resolution (substrate RFC §15.7, write-path RFC
// §12.3) over the records already stored: each live semantic, competence
// and plan record created or revised since the watermark — whatever wrote
// it, with the dedup gate on or off — is compared with the tenant's live
// records of its type and scope, by content hash, structural fingerprint,
// then vector similarity. Vectors are written after their records, by the
// embedding backfill, so the records whose vector was written since the
// watermark are compared again: vector near-duplicates are found once both
// have one. Pure duplicates merge into the older record; conflicting ones
// are contested. The watermark is saved after each batch, so a pass
// stopped part-way resumes there.
func (c *Consolidator) duplicates(ctx context.Context, run Run, mark *passMark) error {
	if c.cfg.Duplicates.Off {
		return nil
	}
	// The records the pass itself revises come after the watermark too:
	// they are read again (and left as they are) before the pass ends, so
	// that the next pass finds nothing new.
	for {
		if _, err := c.resolveAfter(ctx, run, mark, &mark.Records, store.ChangedRecords); err != nil {
			return err
		}
		n, err := c.resolveAfter(ctx, run, mark, &mark.Vectors, store.EmbeddedRecords)
		if err != nil || n == 0 {
			return err
		}
	}
}

// resolveAfter resolves the duplicates of the records read batch after
// batch from at, moving at along, until it reads nothing new; it returns
// how many it read.
func (c *Consolidator) resolveAfter(ctx context.Context, run Run, mark *passMark, at *store.RecordMark,
	read func(context.Context, pg.DBTX, store.RecordMark, int) ([]store.ChangedRecord, error)) (int, error) {
	n := 0
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		page, err := read(ctx, c.cfg.DB, *at, c.cfg.Batch)
		if err != nil || len(page) == 0 {
			return n, err
		}
		n += len(page)
		for _, ch := range page {
			if err := c.resolve(ctx, run, ch.Tenant, ch.Record); err != nil {
				return n, fmt.Errorf("resolve duplicates of %s: %w", ch.Record.ID, err)
			}
		}
		*at = page[len(page)-1].Mark
		if err := run.SaveCursor(ctx, *mark); err != nil {
			return n, err
		}
	}
}

// match is a record that may duplicate another, and the tier that
// found it.
type match struct {
	id         uuid.UUID
	tier       string
	similarity float64
}

// resolve compares one record with its candidates, tier by tier, and
// settles each pair, until the record itself is merged away.
func (c *Consolidator) resolve(ctx context.Context, run Run, tenant string, rec memory.Record) error {
	run.Add("duplicates_compared", 1)
	cands, err := c.candidates(ctx, run, tenant, rec)
	if err != nil {
		return err
	}
	for _, cand := range cands {
		gone, err := c.settle(ctx, run, tenant, rec.ID, cand)
		if err != nil || gone {
			return err
		}
	}
	return nil
}

// candidates are the records a record may duplicate: those with its
// content hash or fingerprint (tiers 1 and 2), for a fact those with its
// subject, predicate and scope (its structure: a conflict shares it), then
// its nearest neighbours by vector (tier 3).
func (c *Consolidator) candidates(ctx context.Context, run Run, tenant string, rec memory.Record) ([]match, error) {
	hash, fp, err := revise.DedupKeys(rec)
	if err != nil {
		return nil, err
	}
	seen := map[uuid.UUID]bool{rec.ID: true}
	var out []match
	add := func(id uuid.UUID, tier string, sim float64) {
		if !seen[id] {
			seen[id] = true
			out = append(out, match{id: id, tier: tier, similarity: sim})
		}
	}
	same, err := store.SameContentAll(ctx, c.cfg.DB, tenant, rec.Type, rec.Scope, rec.ID, hash, fp, maxCandidates)
	if err != nil {
		return nil, err
	}
	for _, r := range same {
		h, _, err := revise.DedupKeys(r)
		if err != nil {
			return nil, err
		}
		tier := tierFingerprint
		if bytes.Equal(h, hash) {
			tier = tierHash
		}
		add(r.ID, tier, 0)
	}
	if rec.Type == memory.Semantic {
		var p memory.SemanticPayload
		if err := json.Unmarshal(rec.Payload, &p); err != nil {
			return nil, fmt.Errorf("decode fact: %w", err)
		}
		facts, err := store.LiveFacts(ctx, c.cfg.DB, tenant, rec.Scope, p.Subject, p.Predicate)
		if err != nil {
			return nil, err
		}
		for _, f := range facts {
			add(f.ID, tierFingerprint, 0)
		}
	}
	near, embedded, err := store.NearDuplicates(ctx, c.cfg.DB, tenant, rec.ID, rec.Type, rec.Scope, c.cfg.Duplicates.Similarity, maxCandidates)
	if err != nil {
		return nil, err
	}
	if !embedded {
		// No vector yet (the backfill has not reached it, or no embedder
		// is configured): tier 3 has nothing to compare.
		run.Add("duplicates_unembedded", 1)
	}
	for _, n := range near {
		add(n.ID, tierVector, n.Similarity)
	}
	return out, nil
}

// settle resolves one pair in one transaction, as both records stand
// now: a pure duplicate merges into the older record; a conflict — or
// records a vector finds alike whose structures disagree — is contested;
// anything else is left alone. gone reports that id was merged away. A
// pair the write path refuses (a provenance cycle, a fact that would
// collide) is counted and left as it is.
func (c *Consolidator) settle(ctx context.Context, run Run, tenant string, id uuid.UUID, cand match) (gone bool, err error) {
	outcome := ""
	err = c.cfg.Writer.InTx(ctx, func(ctx context.Context, tx *revise.Tx) error {
		gone, outcome = false, "" // afresh, should the transaction run again
		a, err := tx.Get(ctx, tenant, id)
		if err != nil {
			return err
		}
		b, err := tx.Get(ctx, tenant, cand.id)
		if err != nil {
			return err
		}
		if !a.Live() || !b.Live() {
			gone = !a.Live()
			return nil
		}
		if related(a, b, memory.MergedInto) {
			// Live, once merged: that merge was rolled back, which says
			// they are not duplicates. Left apart.
			return nil
		}
		cmp, err := revise.Compare(a, b)
		if err != nil {
			return err
		}
		older, newer := a, b
		if b.CreatedAt.Before(a.CreatedAt) || (b.CreatedAt.Equal(a.CreatedAt) && bytes.Compare(b.ID[:], a.ID[:]) < 0) {
			older, newer = b, a
		}
		what := cmp.Reason
		if cand.tier == tierVector {
			what = fmt.Sprintf("vector similarity %.2f; %s", cand.similarity, cmp.Reason)
		}
		switch {
		case cmp.Likeness == revise.Duplicate:
			outcome, gone = "merged", newer.ID == id
			_, err := tx.MergeInto(ctx, tenant, older.ID, []uuid.UUID{newer.ID}, revise.Change{Actor: actor,
				Rationale: fmt.Sprintf("duplicate resolution: %s; %s merged into the older record %s", what, newer.ID, older.ID)})
			return err
		case cmp.Likeness == revise.Conflict || (cmp.Likeness == revise.Different && cand.tier == tierVector):
			// Never merged: a vector match alone does not make records
			// whose structure disagrees one.
			if related(a, b, memory.Contradicts) {
				return nil // contested together already
			}
			if cmp.Likeness == revise.Different && alternatives(a, b) {
				return nil
			}
			outcome = "contested"
			_, err := tx.Contest(ctx, tenant, []uuid.UUID{older.ID, newer.ID}, nil, revise.Change{Actor: actor,
				Rationale: fmt.Sprintf("duplicate resolution: %s; contested until resolved, not merged", what),
				Evidence:  []memory.Source{{Kind: revise.SourceRecord, Ref: "record://" + older.ID.String()}, {Kind: revise.SourceRecord, Ref: "record://" + newer.ID.String()}}})
			return err
		}
		return nil
	})
	var re *revise.RejectedError
	var ce *revise.ConflictError
	if errors.As(err, &re) || errors.As(err, &ce) {
		c.cfg.Logger.Warn("duplicate left unresolved", slog.String("tenant", tenant), slog.String("record", id.String()),
			slog.String("other", cand.id.String()), slog.String("error", err.Error()))
		run.Add("duplicates_refused", 1)
		return false, nil
	}
	if err != nil || outcome == "" {
		return false, err
	}
	c.dups.WithLabelValues(cand.tier, outcome).Inc()
	run.Add("duplicates_"+outcome+"_"+cand.tier, 1)
	return gone, nil
}

// related reports whether a or b has a relation of predicate to the other.
func related(a, b memory.Record, predicate memory.Predicate) bool {
	to := func(from, to memory.Record) bool {
		return slices.ContainsFunc(from.Relations, func(r memory.Relation) bool { return r.Predicate == predicate && r.TargetID == to.ID })
	}
	return to(a, b) || to(b, a)
}

// alternatives reports whether two procedures answer one problem: a
// trigger of each whose signal has the same signature, the paths and
// numbers of two occurrences of one error aside. Such procedures are kept
// side by side and their statistics decide (substrate RFC §8); learned
// ones even cite each other as fallbacks, which makes their texts alike.
func alternatives(a, b memory.Record) bool {
	if a.Type != memory.Competence {
		return false
	}
	var pa, pb memory.CompetencePayload
	if json.Unmarshal(a.Payload, &pa) != nil || json.Unmarshal(b.Payload, &pb) != nil {
		return false
	}
	for _, ta := range pa.Triggers {
		for _, tb := range pb.Triggers {
			if sig := signature.Of(ta.Signal); sig != "" && sig == signature.Of(tb.Signal) {
				return true
			}
		}
	}
	return false
}
