package consolidate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/extract"
	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/policy"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
	"github.com/engram-dev/engram/view"
)

// Job is the name of the consolidation job; DefaultSchedule its default
// schedule, short enough that learning follows experience within a minute.
const (
	Job             = "consolidate"
	DefaultSchedule = "@every 30s"
)

// Defaults of [Config].
const (
	DefaultSupport     = 2
	DefaultBatch       = 500
	DefaultMaxEpisodes = 10000
	// MaxConfidence caps the confidence evidence alone gives a procedure.
	MaxConfidence = memory.MaxLearnedConfidence
	// LearnedTag marks the records consolidation wrote; a record's
	// procedure tag ("procedure:<key>") names the procedure it stands for.
	LearnedTag   = "learned"
	procedureTag = "procedure:"
	actor        = "consolidate"
)

// Config configures a [Consolidator]. The zero value of each field is its
// documented default.
type Config struct {
	// DB is the pool episodes are read from.
	DB pg.DBTX
	// Writer is the write path every record goes through.
	Writer *revise.Writer
	// Support is how many successful episodes must share a procedure
	// before it is written; [DefaultSupport] when zero.
	Support int
	// Probes are the read-only tools left out of a procedure unless a later
	// step uses their output; [DefaultProbes] when nil.
	Probes []string
	// Batch is how many closed episodes a pass reads at a time;
	// [DefaultBatch] when zero.
	Batch int
	// MaxEpisodes bounds how many of a tenant's latest closed episodes a
	// pass regroups; [DefaultMaxEpisodes] when zero.
	MaxEpisodes int
	// Lifecycle is when a procedure is on probation and when it is
	// retracted; see [Lifecycle].
	Lifecycle Lifecycle
	// Decay, when set, reinforces a procedure's salience with the uses a
	// pass observes, as feedback does; nil leaves salience to feedback.
	Decay *decay.Decayer
	// Duplicates is duplicate resolution over stored records; see
	// [Duplicates].
	Duplicates Duplicates
	// Compress is when episodes are compressed; see [Compression].
	Compress Compression
	// Summarise, when set, writes the summary of an episode compression
	// keeps (a language model, say); nil, or a failure, means the
	// deterministic [Summary].
	Summarise Summariser
	// Now is the clock compression measures an episode's age by; nil
	// means time.Now.
	Now func() time.Time
	// Extractor, when set, reads the free text of fresh episodes for facts
	// (extract.go); nil, the default, calls no model.
	Extractor extract.Extractor
	// Redactor is the redactor in force, applied to what a model says
	// before it is written; the built-in one when nil.
	Redactor func() *policy.Redactor
	Logger   *slog.Logger
	// Registry receives the metrics; nil registers none.
	Registry prometheus.Registerer
}

// passMark is a pass's watermark: the last closed episode learned from
// (its fields are those of the watermark before the other stages had one,
// so an older cursor reads as it was, as one that has seen nothing else);
// the revisions of durable records and the vectors written for them that
// duplicate resolution has seen; and the last episode compression looked
// at.
type passMark struct {
	store.EpisodeMark
	Records  store.RecordMark  `json:"records"`
	Vectors  store.RecordMark  `json:"vectors"`
	Compress store.EpisodeMark `json:"compress"`
}

// Consolidator runs competence extraction.
type Consolidator struct {
	cfg Config
	// learner names what learns an episode's features (features.go).
	learner    string
	metrics    *metrics
	dups       *prometheus.CounterVec
	compressed compressMetrics
	analyzed   *prometheus.CounterVec
}

// New returns a consolidator.
func New(cfg Config) *Consolidator {
	cfg.Support = cmp.Or(cfg.Support, DefaultSupport)
	cfg.Batch = cmp.Or(cfg.Batch, DefaultBatch)
	cfg.MaxEpisodes = cmp.Or(cfg.MaxEpisodes, DefaultMaxEpisodes)
	if cfg.Probes == nil {
		cfg.Probes = DefaultProbes
	}
	cfg.Lifecycle = cfg.Lifecycle.withDefaults()
	cfg.Duplicates = cfg.Duplicates.withDefaults()
	cfg.Compress.After = cmp.Or(cfg.Compress.After, DefaultCompressAfter)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Consolidator{cfg: cfg, learner: learnerOf(featuresVersion, cfg.Probes), metrics: newMetrics(cfg.Registry), dups: newDuplicateMetric(cfg.Registry),
		compressed: newCompressMetrics(cfg.Registry), analyzed: newAnalyzeMetric(cfg.Registry)}
}

// Run is what a pass needs of its job run: its saved watermark and
// counters. A [*jobs.Run] is one.
type Run interface {
	Cursor(ctx context.Context, v any) (bool, error)
	SaveCursor(ctx context.Context, v any) error
	Add(name string, n int64)
}

// Consolidate is one pass: it first analyses the tables the planner has
// no statistics or stale ones for (statistics.go), then reads the episodes
// closed since the watermark, regroups the episodes of each tenant that has new ones, writes
// the procedures that have enough support, resolves the duplicates among
// the durable records revised since its watermark, and saves the
// watermark; then it compresses the episodes old enough (compress.go).
// Groups without a new episode are left alone; a pass over nothing new
// reads one page of each and writes nothing.
func (c *Consolidator) Consolidate(ctx context.Context, run Run) error {
	var mark passMark
	if _, err := run.Cursor(ctx, &mark); err != nil {
		return err
	}
	// Statistics the planner lacks are the pass's first concern: without
	// them its statements read a whole tenant for each episode. A failure
	// to read or refresh them never stops the pass.
	var failed []error
	if err := c.timed("statistics", func() error { return c.statistics(ctx, run) }); err != nil {
		if ctx.Err() != nil {
			return err
		}
		failed = append(failed, err)
	}
	fresh := map[string][]uuid.UUID{} // tenant → new episodes
	for {
		page, err := store.ClosedEpisodesAfter(ctx, c.cfg.DB, mark.EpisodeMark, c.cfg.Batch)
		if err != nil {
			return err
		}
		for _, e := range page {
			fresh[e.Tenant] = append(fresh[e.Tenant], e.ID)
		}
		if len(page) > 0 {
			last := page[len(page)-1]
			mark.EpisodeMark = store.EpisodeMark{ClosedAt: last.ClosedAt, Tenant: last.Tenant, ID: last.ID}
		}
		if len(page) < c.cfg.Batch {
			break
		}
	}
	run.Add("episodes", int64(sum(fresh)))
	// One tenant's failure never stops another's pass, nor the stages
	// after: it is counted, logged and returned at the end, and the
	// tenant's new episodes are learned from again by the next pass that
	// sees one of its episodes (its groups are regrouped whole).
	for _, tenant := range slices.Sorted(maps.Keys(fresh)) {
		if err := c.tenant(ctx, run, tenant, fresh[tenant]); err != nil {
			if ctx.Err() != nil {
				return err
			}
			run.Add("tenants_failed", 1)
			c.cfg.Logger.Error("consolidate tenant", slog.String("tenant", tenant), slog.Any("error", err))
			failed = append(failed, fmt.Errorf("consolidate tenant %s: %w", tenant, err))
		}
	}
	if err := c.timed("duplicates", func() error { return c.duplicates(ctx, run, &mark) }); err != nil {
		failed = append(failed, err)
	}
	if err := run.SaveCursor(ctx, mark); err != nil {
		return errors.Join(append(failed, err)...)
	}
	if err := c.noteLag(ctx, mark.EpisodeMark); err != nil {
		failed = append(failed, err)
	}
	if err := c.timed("compress", func() error { return c.compress(ctx, run, &mark) }); err != nil {
		failed = append(failed, err)
	}
	return errors.Join(failed...)
}

// noteLag sets the lag gauge: how far the watermark is behind the newest
// closed episode, once the pass has saved it.
func (c *Consolidator) noteLag(ctx context.Context, mark store.EpisodeMark) error {
	newest, found, err := store.NewestClosedEpisode(ctx, c.cfg.DB)
	if err != nil || !found {
		return err
	}
	c.metrics.lag.Set(max(0, newest.Sub(mark.ClosedAt).Seconds()))
	if !mark.ClosedAt.IsZero() {
		c.metrics.watermark.Set(float64(mark.ClosedAt.UnixNano()) / 1e9)
	}
	return nil
}

func sum(m map[string][]uuid.UUID) int {
	n := 0
	for _, v := range m {
		n += len(v)
	}
	return n
}

// history is what a pass read of one tenant: its latest closed episodes,
// their features, and which of them are new since the watermark. Every
// stage of the pass learns from this one read. events are the staged
// events the pass read: of the episodes whose features it learned, and of
// the fresh ones when a model reads them.
type history struct {
	closed   []store.ClosedEpisode
	features map[uuid.UUID]*features
	events   map[uuid.UUID][]store.EpisodeEvent
	fresh    map[uuid.UUID]bool
}

// tenant reads a tenant's history once and runs each stage of the pass
// over it: procedures, plans, then the facts a model finds (when one is
// configured).
func (c *Consolidator) tenant(ctx context.Context, run Run, tenant string, fresh []uuid.UUID) error {
	var h history
	if err := c.timed("history", func() (err error) { h, err = c.history(ctx, run, tenant, fresh); return err }); err != nil {
		return err
	}
	if err := c.timed("procedures", func() error { return c.procedures(ctx, run, tenant, h) }); err != nil {
		return err
	}
	if err := c.timed("plans", func() error { return c.plans(ctx, run, tenant, h) }); err != nil {
		return err
	}
	return c.timed("extract", func() error { return c.extractFacts(ctx, run, tenant, h) })
}

// timed runs one stage of a pass and records how long it took.
func (c *Consolidator) timed(stage string, fn func() error) error {
	start := time.Now()
	err := fn()
	c.metrics.stage.WithLabelValues(stage).Observe(time.Since(start).Seconds())
	return err
}

// history reads a tenant's latest closed episodes with their features:
// those stored, and those it learns from their events and stores.
func (c *Consolidator) history(ctx context.Context, run Run, tenant string, fresh []uuid.UUID) (history, error) {
	h := history{features: map[uuid.UUID]*features{}, events: map[uuid.UUID][]store.EpisodeEvent{},
		fresh: make(map[uuid.UUID]bool, len(fresh))}
	for _, id := range fresh {
		h.fresh[id] = true
	}
	window, err := store.TenantClosedEpisodes(ctx, c.cfg.DB, tenant, c.cfg.MaxEpisodes, c.learner)
	if err != nil {
		return h, err
	}
	h.closed = make([]store.ClosedEpisode, len(window))
	var read []uuid.UUID // the episodes whose events are read
	for i, w := range window {
		h.closed[i] = w.ClosedEpisode
		if w.Features != nil {
			f, err := c.openFeatures(ctx, tenant, w.Features)
			if err == nil {
				h.features[w.ID] = &f
				continue
			}
			if ctx.Err() != nil {
				return h, err
			}
			// A row that does not read is learned again.
			c.cfg.Logger.Warn("episode features", slog.String("tenant", tenant), slog.String("episode", w.ID.String()), slog.Any("error", err))
		}
		read = append(read, w.ID)
	}
	learn := len(read)
	if c.cfg.Extractor != nil {
		for _, w := range window {
			if h.fresh[w.ID] && h.features[w.ID] != nil {
				read = append(read, w.ID)
			}
		}
	}
	if len(read) > 0 {
		evs, err := c.episodeEvents(ctx, tenant, read)
		if err != nil {
			return h, err
		}
		for _, ev := range evs {
			h.events[ev.Episode] = append(h.events[ev.Episode], ev)
		}
	}
	run.Add("features_read", int64(len(window)-learn))
	run.Add("features_learned", int64(learn))
	if learn == 0 {
		return h, nil
	}
	var rows []store.EpisodeFeatures
	for _, w := range window {
		if h.features[w.ID] != nil {
			continue
		}
		f := learnFeatures(w.Outcome, h.events[w.ID], c.cfg.Probes)
		h.features[w.ID] = &f
		doc, err := c.sealFeatures(ctx, tenant, w.ClosedEpisode, f, h.events[w.ID])
		if err != nil {
			return h, err
		}
		rows = append(rows, store.EpisodeFeatures{Episode: w.ID, Version: w.Version, Features: doc})
	}
	return h, c.keepFeatures(ctx, tenant, rows)
}

// write writes a procedure through the write path: a new record, or,
// when the procedure's record exists, nothing if it says the same, else its
// next version (a supersede, audited with what the pass saw).
func (c *Consolidator) write(ctx context.Context, tx *revise.Tx, tenant string, p Procedure) (written, error) {
	payload, err := json.Marshal(p.Payload)
	if err != nil {
		return written{}, fmt.Errorf("encode procedure: %w", err)
	}
	sources := make([]memory.Source, len(p.Support))
	rels := make([]memory.Relation, len(p.Support))
	for i, ep := range p.Support {
		sources[i] = memory.Source{Kind: "record", Ref: "record://" + ep.ID.String()}
		rels[i] = memory.Relation{Predicate: memory.DerivedFrom, TargetID: ep.ID}
	}
	rec := memory.Record{
		Type: memory.Competence, Sensitivity: p.Sensitivity, Confidence: p.Confidence, Salience: memory.DefaultSalience,
		Scope: p.Scope, Tags: []string{LearnedTag, procedureTag + p.Key}, Payload: payload,
		Visibility: memory.VisibilityTenant,
		Provenance: memory.Provenance{Sources: sources, CreatedBy: actor},
		Relations:  rels,
	}
	ch := revise.Change{Actor: actor, Rationale: c.rationale(p.Sensitivity, p.Rationale, len(p.Support), len(p.Failed)), Evidence: sources}
	w, err := c.apply(ctx, tx, tenant, p, rec, ch)
	name := p.Payload.SkillName
	if c.cfg.Writer.Sealer().Applies(p.Sensitivity) {
		name = p.Key // a sealed procedure's name is its payload's
	}
	if err != nil {
		return written{}, fmt.Errorf("write procedure %q: %w", name, err)
	}
	c.cfg.Logger.Debug("procedure", slog.String("tenant", tenant), slog.String("skill", name), slog.String("outcome", w.outcome))
	return w, nil
}

// apply writes a procedure's record rec: a new record, or, when the
// procedure's record exists, nothing if it says the same; the record
// amended when only what is known of it grew (statistics, evidence); a new
// version that supersedes it when its recipe or trigger changed; and a
// retraction when its uses say it keeps failing.
func (c *Consolidator) apply(ctx context.Context, tx *revise.Tx, tenant string, p Procedure, rec memory.Record, ch revise.Change) (written, error) {
	old, found, err := c.existing(ctx, tx, tenant, p.Key)
	if err != nil {
		return written{}, err
	}
	if !found {
		c.learned(p, &rec)
		a, err := tx.Admit(ctx, tenant, rec, ch)
		return written{outcome: string(a.Outcome)}, err
	}
	if old.Status == memory.Draft || old.Status == memory.Retracted {
		// A draft waits for its reviewer; the next pass sees the decision.
		// A retracted procedure is not learned again.
		return written{outcome: "unchanged"}, nil
	}
	v, err := c.follow(old, p, &rec)
	if err != nil {
		return written{}, err
	}
	if same(old, rec) {
		return written{outcome: "unchanged"}, nil
	}
	w := written{outcome: "revised", uses: usesAdded(old, rec)}
	var next memory.Record
	sameRecipe, err := revise.SameStructure(old, rec)
	switch {
	case err != nil:
		return written{}, err
	case sameRecipe:
		next, err = tx.Amend(ctx, tenant, old.ID, old.Version, rec, ch)
	default:
		_, next, err = tx.Supersede(ctx, tenant, old.ID, old.Version, rec, ch)
	}
	if err == nil && c.cfg.Decay != nil && v.retract == "" {
		// Its salience follows the uses the pass saw, as feedback's do.
		err = c.cfg.Decay.Observed(ctx, tx, tenant, next, w.uses[0], w.uses[1], ch)
	}
	if err != nil || v.retract == "" {
		return w, err
	}
	w.outcome = "retracted"
	_, err = tx.Retract(ctx, tenant, next.ID, next.Version, revise.Change{Actor: actor, Rationale: v.retract, Evidence: v.evidence})
	return w, err
}

// reader reads memory in tx, through the read door.
func (c *Consolidator) reader(tx *revise.Tx) *view.Reader {
	return view.New(tx.Exec(), c.cfg.Writer.Sealer())
}

// existing is the live record of a procedure, found by its tag.
func (c *Consolidator) existing(ctx context.Context, tx *revise.Tx, tenant, key string) (memory.Record, bool, error) {
	page, err := c.reader(tx).Records(ctx, view.System(tenant), store.Filter{
		Types: []memory.Type{memory.Competence}, Tags: []string{LearnedTag, procedureTag + key},
		Statuses: []memory.Status{memory.Active, memory.Contested, memory.Draft, memory.Retracted}, Limit: 10})
	if err != nil || len(page.Records) == 0 {
		return memory.Record{}, false, err
	}
	// A live record (one restored after its retraction) wins.
	for _, r := range page.Records {
		if r.Status != memory.Retracted {
			return r, true, nil
		}
	}
	return page.Records[0], true, nil
}

// usesAdded is how many successes and failures a procedure's next version
// counts beyond its stored one.
func usesAdded(old, next memory.Record) [2]int {
	var a, b memory.CompetencePayload
	if json.Unmarshal(old.Payload, &a) != nil || json.Unmarshal(next.Payload, &b) != nil || a.Performance == nil || b.Performance == nil {
		return [2]int{}
	}
	return [2]int{max(0, b.Performance.Successes-a.Performance.Successes), max(0, b.Performance.Failures-a.Performance.Failures)}
}

// same reports whether a stored record already says what rec says.
func same(old, rec memory.Record) bool {
	var a, b any
	if json.Unmarshal(old.Payload, &a) != nil || json.Unmarshal(rec.Payload, &b) != nil {
		return false
	}
	return reflect.DeepEqual(a, b) && old.Confidence == rec.Confidence && old.Sensitivity == rec.Sensitivity &&
		reflect.DeepEqual(refs(old.Provenance.Sources), refs(rec.Provenance.Sources))
}

func refs(srcs []memory.Source) []string {
	out := make([]string, len(srcs))
	for i, s := range srcs {
		out[i] = s.Ref
	}
	slices.Sort(out)
	return out
}

// Settings are what an operator sets of consolidation: the support a
// procedure needs, the read-only tools, the procedure lifecycle, episodic
// compression (engramd's consolidate section). Zero fields are defaults.
type Settings struct {
	Support    int         `yaml:"support"`
	Probes     []string    `yaml:"probes"`
	Lifecycle  Lifecycle   `yaml:"lifecycle"`
	Duplicates Duplicates  `yaml:"duplicates"`
	Compress   Compression `yaml:"compress"`
	// Model is the optional language model that finds facts in free text
	// (consolidate.model); off unless it names a model.
	Model extract.Config `yaml:"model"`
}

// Validate names the first bad field of s.
func (s Settings) Validate() error {
	l := s.Lifecycle
	switch {
	case s.Support < 0:
		return errors.New("consolidate.support: must be at least 1 (0 for the default)")
	case l.ProbationUses < 0:
		return errors.New("consolidate.lifecycle.probation_uses: must not be negative")
	case l.RetractAfter < 0:
		return errors.New("consolidate.lifecycle.retract_after: must not be negative")
	case l.RetractRate < 0 || l.RetractRate >= 1:
		return errors.New("consolidate.lifecycle.retract_rate: must be in [0, 1)")
	case l.RateWindow < 0:
		return errors.New("consolidate.lifecycle.rate_window: must not be negative")
	case s.Compress.After < 0:
		return errors.New("consolidate.compress.after: must not be negative (0 for the default)")
	}
	for i, p := range s.Probes {
		if strings.TrimSpace(p) == "" {
			return fmt.Errorf("consolidate.probes[%d]: must not be empty", i)
		}
	}
	if err := s.Duplicates.validate(); err != nil {
		return err
	}
	return s.Model.Validate()
}

// episodeEvents reads the staged events of a tenant's episodes, opened:
// consolidation's one read of raw events (substrate RFC §15.9: sealed at
// rest, learned from in memory).
func (c *Consolidator) episodeEvents(ctx context.Context, tenant string, ids []uuid.UUID) ([]store.EpisodeEvent, error) {
	evs, err := store.EpisodeEvents(ctx, c.cfg.DB, tenant, ids)
	if err != nil {
		return nil, err
	}
	s := c.cfg.Writer.Sealer()
	for i := range evs {
		if evs[i].Event, err = s.Open(ctx, tenant, evs[i].Event); err != nil {
			return nil, fmt.Errorf("episode %s: %w", evs[i].Episode, err)
		}
	}
	return evs, nil
}
