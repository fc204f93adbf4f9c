package consolidate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/engram-dev/engram/extract"
	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/policy"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/signature"
	"github.com/engram-dev/engram/store"
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
	MaxConfidence = 0.95
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
	cfg        Config
	metrics    *metrics
	dups       *prometheus.CounterVec
	compressed compressMetrics
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
	return &Consolidator{cfg: cfg, metrics: newMetrics(cfg.Registry), dups: newDuplicateMetric(cfg.Registry),
		compressed: newCompressMetrics(cfg.Registry)}
}

// Run is what a pass needs of its job run: its saved watermark and
// counters. A [*jobs.Run] is one.
type Run interface {
	Cursor(ctx context.Context, v any) (bool, error)
	SaveCursor(ctx context.Context, v any) error
	Add(name string, n int64)
}

// Consolidate is one pass: it reads the episodes closed since the
// watermark, regroups the episodes of each tenant that has new ones, writes
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
	for _, tenant := range slices.Sorted(maps.Keys(fresh)) {
		if err := c.tenant(ctx, run, tenant, fresh[tenant]); err != nil {
			return fmt.Errorf("consolidate tenant %s: %w", tenant, err)
		}
	}
	if err := c.timed("duplicates", func() error { return c.duplicates(ctx, run, &mark) }); err != nil {
		return err
	}
	if err := run.SaveCursor(ctx, mark); err != nil {
		return err
	}
	if err := c.noteLag(ctx, mark.EpisodeMark); err != nil {
		return err
	}
	return c.timed("compress", func() error { return c.compress(ctx, run, &mark) })
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
// their staged events, and which of them are new since the watermark. Every
// stage of the pass learns from this one read.
type history struct {
	closed []store.ClosedEpisode
	events map[uuid.UUID][]store.EpisodeEvent
	fresh  map[uuid.UUID]bool
}

// tenant reads a tenant's history once and runs each stage of the pass
// over it: procedures, plans, then the facts a model finds (when one is
// configured).
func (c *Consolidator) tenant(ctx context.Context, run Run, tenant string, fresh []uuid.UUID) error {
	var h history
	if err := c.timed("history", func() (err error) { h, err = c.history(ctx, tenant, fresh); return err }); err != nil {
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

// history reads a tenant's latest closed episodes with their events.
func (c *Consolidator) history(ctx context.Context, tenant string, fresh []uuid.UUID) (history, error) {
	h := history{events: map[uuid.UUID][]store.EpisodeEvent{}, fresh: make(map[uuid.UUID]bool, len(fresh))}
	for _, id := range fresh {
		h.fresh[id] = true
	}
	var err error
	if h.closed, err = store.TenantClosedEpisodes(ctx, c.cfg.DB, tenant, c.cfg.MaxEpisodes); err != nil {
		return h, err
	}
	ids := make([]uuid.UUID, len(h.closed))
	for i, e := range h.closed {
		ids[i] = e.ID
	}
	evs, err := c.episodeEvents(ctx, tenant, ids)
	if err != nil {
		return h, err
	}
	for _, ev := range evs {
		h.events[ev.Episode] = append(h.events[ev.Episode], ev)
	}
	return h, nil
}

// touchedGroups reads each episode of h and groups it by scope and the key
// read gives it (none: left out), and returns, in key order, the groups
// that hold a fresh episode: the ones a pass learns from again.
func touchedGroups[T any](h history, read func(store.ClosedEpisode) (T, string)) [][]T {
	groups := map[string][]T{}
	touched := map[string]bool{}
	for _, ce := range h.closed {
		v, key := read(ce)
		if key == "" {
			continue
		}
		key = ce.Scope + "\x00" + key
		groups[key] = append(groups[key], v)
		if h.fresh[ce.ID] {
			touched[key] = true
		}
	}
	out := make([][]T, 0, len(touched))
	for _, key := range slices.Sorted(maps.Keys(touched)) {
		out = append(out, groups[key])
	}
	return out
}

// procedures groups the episodes by trigger signature and learns from each
// group that has a fresh one.
func (c *Consolidator) procedures(ctx context.Context, run Run, tenant string, h history) error {
	var learned []Procedure
	for _, group := range touchedGroups(h, func(ce store.ClosedEpisode) (Episode, string) {
		ep := readEpisode(ce, h.events[ce.ID])
		return ep, ep.Signature
	}) {
		learned = append(learned, c.Learn(group)...)
	}
	return inBatches(ctx, c.cfg.Writer, learned, func(ctx context.Context, tx *revise.Tx, p Procedure) (written, error) {
		return c.write(ctx, tx, tenant, p)
	}, func(w written) {
		c.metrics.records.WithLabelValues(string(memory.Competence), w.outcome).Inc()
		c.metrics.uses.WithLabelValues("success").Add(float64(w.uses[0]))
		c.metrics.uses.WithLabelValues("failure").Add(float64(w.uses[1]))
		run.Add("competence_"+w.outcome, 1)
	})
}

// Procedure is a procedure learned from a group of episodes, ready to be
// written as a competence record.
type Procedure struct {
	Key       string
	Scope     string
	Signature string
	Payload   memory.CompetencePayload
	Support   []Episode
	Failed    []Episode
	// Followed are the failed episodes under its conditions whose reduced
	// steps are this procedure's: uses of it that failed.
	Followed []Episode
	// Confidence follows the evidence count: 1 − 1/(n+1), capped.
	Confidence  float64
	Sensitivity memory.Sensitivity
	Rationale   string
}

// candidate is one procedure seen in a group, before its support is
// counted: the successful episodes whose reduced steps have one shape,
// and those steps.
type candidate struct {
	key     string
	support []Episode
	steps   [][]Action
}

// triggers are the trigger messages of the candidate's episodes.
func (cand *candidate) triggers() []string {
	out := make([]string, len(cand.support))
	for i, ep := range cand.support {
		out[i] = ep.Trigger
	}
	return out
}

// Learn finds the procedures of one group of episodes (one scope, one
// trigger signature) that at least the configured number of successful
// episodes share. Procedures of one trigger get the conditions that tell
// them apart, when the environments do (substrate RFC §12).
func (c *Consolidator) Learn(group []Episode) []Procedure {
	group = sortedEpisodes(group)
	var failed []Episode
	followed := map[string][]Episode{} // recipe key → the failed episodes that followed it
	cands := map[string]*candidate{}
	for _, ep := range group {
		steps := Reduce(ep.Actions, c.cfg.Probes)
		key := ""
		if len(steps) > 0 {
			key = procedureKey(ep.Signature, triggerValues(ep.Trigger), steps)
		}
		switch {
		case !ep.Success:
			failed = append(failed, ep)
			if key != "" {
				followed[key] = append(followed[key], ep)
			}
			continue
		case key == "":
			continue
		}
		if cands[key] == nil {
			cands[key] = &candidate{key: key}
		}
		cands[key].support = append(cands[key].support, ep)
		cands[key].steps = append(cands[key].steps, steps)
	}
	var all, kept []*candidate
	for _, k := range slices.Sorted(maps.Keys(cands)) {
		all = append(all, cands[k])
		if len(cands[k].support) >= c.cfg.Support {
			kept = append(kept, cands[k])
		}
	}
	var out []Procedure
	names := map[string]int{}
	for _, cand := range kept {
		var contrary [][]Episode
		for _, o := range all {
			if o != cand {
				contrary = append(contrary, o.support)
			}
		}
		if f := followed[cand.key]; len(f) > 0 {
			contrary = append(contrary, f)
		}
		p := c.procedure(cand, conditionsOf(cand.support, contrary), kept, failed, followed[cand.key])
		names[p.Payload.SkillName]++
		if n := names[p.Payload.SkillName]; n > 1 {
			p.Payload.SkillName += fmt.Sprintf(" #%d", n)
		}
		out = append(out, p)
	}
	return out
}

// procedure builds the record of one candidate procedure of a group, under
// its conditions: kept are the group's procedures, failed its failed
// episodes and followed those that followed this one's recipe.
func (c *Consolidator) procedure(cand *candidate, conds memory.Conditions, kept []*candidate, failed, followed []Episode) Procedure {
	relevant := underConditions(failed, conds)
	followed = underConditions(followed, conds)

	triggers := cand.triggers()
	tpls := Templates(cand.steps, triggers)
	recipe := make([]memory.Step, len(tpls))
	var tools []string
	for i, t := range tpls {
		results := make([][]byte, len(cand.steps))
		for e := range cand.steps {
			results[e] = cand.steps[e][i].Result
		}
		recipe[i] = memory.Step{Step: stepText(t), Tool: t.Tool, ArgsSchema: argsSchema(t), Validation: validation(results)}
		if !slices.Contains(tools, t.Tool) {
			tools = append(tools, t.Tool)
		}
	}

	sens := memory.Public
	var lastSuccess time.Time
	for _, ep := range cand.support {
		sens = sens.Max(ep.Sensitivity)
		lastSuccess = ep.ClosedAt
	}
	signal := canonical(triggers)
	if signal == "" {
		signal = cand.support[0].Signature
	}
	perf := &memory.Performance{Successes: len(cand.support), Failures: len(followed), LastSuccessAt: &lastSuccess}
	if n := len(followed); n > 0 {
		t := followed[n-1].ClosedAt
		perf.LastFailureAt = &t
	}
	name := "fix " + cand.support[0].Signature
	if strings.HasPrefix(cand.support[0].Signature, "intent:") || strings.HasPrefix(cand.support[0].Signature, "task:") {
		name = cand.support[0].Signature
	}
	if len(conds) > 0 {
		name += " (" + conditionText(conds) + ")"
	}
	var fallbacks []string
	for _, o := range kept {
		if o != cand {
			fallbacks = append(fallbacks, summary(Templates(o.steps, o.triggers())))
		}
	}
	payload := memory.CompetencePayload{
		Kind: memory.Competence, SkillName: name,
		Triggers:      []memory.Trigger{{Signal: signal, Conditions: conds}},
		Recipe:        recipe,
		FailureModes:  failureModes(failed, cand.steps),
		Fallbacks:     fallbacks,
		RequiredTools: tools,
		Performance:   perf,
	}
	n := float64(len(cand.support))
	condText := conditionText(conds)
	if condText == "" {
		condText = "none"
	}
	return Procedure{
		Key: cand.key, Scope: cand.support[0].Scope, Signature: cand.support[0].Signature, Payload: payload,
		Support: cand.support, Failed: relevant, Followed: followed, Sensitivity: sens,
		Confidence: math.Round(min(MaxConfidence, 1-1/(n+1))*1000) / 1000,
		Rationale: fmt.Sprintf("%d successful episodes, %d failed, conditions %s: learned from episodes whose first error has the signature %q",
			len(cand.support), len(relevant), condText, cand.support[0].Signature),
	}
}

// underConditions are the episodes whose environment does not contradict
// conditions.
func underConditions(eps []Episode, conds memory.Conditions) []Episode {
	var out []Episode
	for _, ep := range eps {
		if holds(conds, ep.Environment) {
			out = append(out, ep)
		}
	}
	return out
}

// summary is a procedure's steps on one line.
func summary(tpls []Template) string {
	s := make([]string, len(tpls))
	for i, t := range tpls {
		s[i] = stepText(t)
	}
	return strings.Join(s, "; then ")
}

// failureModes are the errors the failed attempts of the problem met: what
// each failed episode tried and what it ended on, and the errors of steps
// the successful ones had to retry.
func failureModes(failed []Episode, steps [][]Action) []string {
	var out []string
	add := func(s string) {
		if s != "" && !slices.Contains(out, s) && len(out) < 10 {
			out = append(out, s)
		}
	}
	for _, f := range failed {
		last := f.Trigger
		if n := len(f.Errors); n > 0 {
			last = f.Errors[n-1]
		}
		tried := Reduce(f.Actions, nil)
		if len(tried) == 0 {
			add("unresolved: " + signature.Of(last))
			continue
		}
		// One episode's steps name its own paths and values: normalised
		// like the error, they say what was tried without them.
		add(signature.Normalise(summary(Templates([][]Action{tried}, nil))) + " did not fix it: " + signature.Of(last))
	}
	for _, eps := range steps {
		for _, a := range eps {
			if a.Failed {
				add(a.Tool + " failed: " + signature.Of(errorText(a.Result)))
			}
		}
	}
	return out
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
	if err != nil || v.retract == "" {
		return w, err
	}
	w.outcome = "retracted"
	_, err = tx.Retract(ctx, tenant, next.ID, next.Version, revise.Change{Actor: actor, Rationale: v.retract, Evidence: v.evidence})
	return w, err
}

// writeBatch is how many learned records one transaction writes: a pass
// commits in batches rather than once a record; a batch that fails is
// rolled back whole and redone by the next pass (writes are idempotent).
const writeBatch = 50

// written is what writing one learned record did, counted once its batch
// has committed.
type written struct {
	outcome string
	uses    [2]int // a procedure's successes and failures since its stored version
	reused  int    // a plan's uses since its stored version
}

// inBatches writes items through the write path, writeBatch a
// transaction, and hands each committed write to done.
func inBatches[T any](ctx context.Context, w *revise.Writer, items []T, write func(context.Context, *revise.Tx, T) (written, error), done func(written)) error {
	for len(items) > 0 {
		batch := items[:min(len(items), writeBatch)]
		items = items[len(batch):]
		var out []written
		err := w.InTx(ctx, func(ctx context.Context, tx *revise.Tx) error {
			out = out[:0]
			for _, it := range batch {
				wr, err := write(ctx, tx, it)
				if err != nil {
					return err
				}
				out = append(out, wr)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, wr := range out {
			done(wr)
		}
	}
	return nil
}

// existing is the live record of a procedure, found by its tag.
func (c *Consolidator) existing(ctx context.Context, tx *revise.Tx, tenant, key string) (memory.Record, bool, error) {
	page, err := store.List(ctx, tx.Exec(), tenant, store.Filter{
		Types: []memory.Type{memory.Competence}, Tags: []string{LearnedTag, procedureTag + key},
		Statuses: []memory.Status{memory.Active, memory.Contested, memory.Draft, memory.Retracted}, Limit: 10})
	if err != nil || len(page.Records) == 0 {
		return memory.Record{}, false, err
	}
	if err := c.cfg.Writer.Sealer().OpenRecords(ctx, tenant, page.Records); err != nil {
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
