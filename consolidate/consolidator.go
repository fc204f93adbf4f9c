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
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/extract"
	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/policy"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/schemas"
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
	// One tenant's failure never stops another's pass, nor the stages
	// after: it is counted, logged and returned at the end, and the
	// tenant's new episodes are learned from again by the next pass that
	// sees one of its episodes (its groups are regrouped whole).
	var failed []error
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

// procedures reads the problems of the tenant's episodes, learns the
// error templates of their triggers, groups the problems by scope and
// template (or fixed signature) and learns from each group that has a
// fresh problem.
func (c *Consolidator) procedures(ctx context.Context, run Run, tenant string, h history) error {
	var learned []Procedure
	for _, group := range problemGroups(h) {
		learned = append(learned, c.Learn(group)...)
	}
	return inBatches(ctx, c.cfg.Writer, learned, func(ctx context.Context, tx *revise.Tx, p Procedure) (written, error) {
		return c.write(ctx, tx, tenant, p)
	}, func(w written) {
		c.metrics.records.WithLabelValues(string(memory.Competence), w.outcome).Inc()
		c.metrics.uses.WithLabelValues("success").Add(float64(w.uses[0]))
		c.metrics.uses.WithLabelValues("failure").Add(float64(w.uses[1]))
		run.Add("competence_"+w.outcome, 1)
	}, func(p Procedure, err error) error {
		return c.skipped(ctx, run, tenant, string(memory.Competence), p.Key, err)
	})
}

// problemGroups are the problems of h's episodes grouped by scope and
// signature, in key order, the groups with a problem of a fresh episode
// only: the ones a pass learns from again. The signature of a problem
// whose trigger is an occurrence of a template learned from the tenant's
// triggers (one with wildcards) is the template (substrate RFC §8:
// procedures are found by their trigger, whatever its instance values).
func problemGroups(h history) [][]Episode {
	var all []Episode
	for _, ce := range h.closed {
		all = append(all, readProblems(ce, h.events[ce.ID])...)
	}
	miner := signature.NewMiner(0)
	for _, ep := range all {
		if ep.Trigger != "" {
			miner.Add(ep.Trigger)
		}
	}
	groups := map[string][]Episode{}
	touched := map[string]bool{}
	for _, ep := range all {
		if ep.Trigger != "" {
			if tpl, ok := miner.Template(ep.Trigger); ok {
				ep.Template, ep.Signature = tpl, tpl.String()
			}
		}
		if ep.Signature == "" {
			continue
		}
		key := ep.Scope + "\x00" + ep.Signature
		groups[key] = append(groups[key], ep)
		if h.fresh[ep.ID] {
			touched[key] = true
		}
	}
	out := make([][]Episode, 0, len(touched))
	for _, key := range slices.Sorted(maps.Keys(touched)) {
		out = append(out, groups[key])
	}
	return out
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
// counted: the successful problems whose reduced steps have one shape,
// one a thread, and those steps.
type candidate struct {
	key     string
	support []Episode
	steps   [][]Action
}

// triggers are the trigger messages of the candidate's problems.
func (cand *candidate) triggers() []string {
	out := make([]string, len(cand.support))
	for i, ep := range cand.support {
		out[i] = ep.Trigger
	}
	return out
}

// values are the values each of the candidate's triggers names.
func (cand *candidate) values() [][]triggerValue {
	out := make([][]triggerValue, len(cand.support))
	for i, ep := range cand.support {
		out[i] = ep.values()
	}
	return out
}

// has reports whether a problem of ep's thread supports the candidate:
// support counts independent tasks, never segments of one run.
func (cand *candidate) has(ep Episode) bool {
	return slices.ContainsFunc(cand.support, func(o Episode) bool { return sameTask(o, ep) })
}

func sameTask(a, b Episode) bool {
	if a.Thread != "" || b.Thread != "" {
		return a.Thread == b.Thread
	}
	return a.ID == b.ID
}

// Learn finds the procedures of one group of problems (one scope, one
// trigger signature or template) that at least the configured number of
// tasks (threads) share. Procedures of one trigger get the conditions
// that tell them apart, when the environments do (substrate RFC §12).
func (c *Consolidator) Learn(group []Episode) []Procedure {
	group = sortedEpisodes(group)
	var failed []Episode
	followed := map[string][]Episode{} // recipe key → the failed problems that followed it
	cands := map[string]*candidate{}
	for _, ep := range group {
		steps := ep.tried(c.cfg.Probes)
		key := ""
		if len(steps) > 0 {
			key = procedureKey(ep.Signature, ep.values(), steps)
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
		if cands[key].has(ep) {
			continue
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
		p, ok := c.procedure(cand, all, kept, failed, followed[cand.key])
		if !ok {
			continue
		}
		names[p.Payload.SkillName]++
		if n := names[p.Payload.SkillName]; n > 1 {
			p.Payload.SkillName += fmt.Sprintf(" #%d", n)
		}
		out = append(out, p)
	}
	return out
}

// procedure builds the record of one candidate procedure of a group: all
// are the group's candidates, kept those with support, failed its failed
// problems and followed those that followed this one's recipe. Its
// trigger is the group's template specialised to the values its support
// shares and its recipe does not bind; the problems that are no
// occurrence of it are not evidence for or against it. It is false for a
// recipe with a step that is nothing but variables no trigger binds: a
// step nobody could follow.
func (c *Consolidator) procedure(cand *candidate, all, kept []*candidate, failed, followed []Episode) (Procedure, bool) {
	tpls := templates(cand.steps, cand.values())
	trig, ok := triggerOf(cand, tpls)
	if !ok {
		return Procedure{}, false
	}
	if slices.ContainsFunc(tpls, unfollowable) {
		return Procedure{}, false
	}
	applies := func(ep Episode) bool {
		if trig.Template == "" {
			return true
		}
		_, ok := signature.Match(signature.ParseTemplate(trig.Template), ep.Trigger)
		return ok
	}
	var contrary [][]Episode
	for _, o := range all {
		if o != cand {
			if g := slices.DeleteFunc(slices.Clone(o.support), func(e Episode) bool { return !applies(e) }); len(g) > 0 {
				contrary = append(contrary, g)
			}
		}
	}
	failed = slices.DeleteFunc(slices.Clone(failed), func(e Episode) bool { return !applies(e) })
	followed = slices.DeleteFunc(slices.Clone(followed), func(e Episode) bool { return !applies(e) })
	if len(followed) > 0 {
		contrary = append(contrary, followed)
	}
	conds := conditionsOf(cand.support, contrary)
	relevant := underConditions(failed, conds)
	followed = underConditions(followed, conds)

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
	for _, ep := range cand.support {
		sens = sens.Max(ep.Sensitivity)
	}
	trig.Conditions = conds
	perf := &memory.Performance{}
	for _, ep := range sortedEpisodes(append(slices.Clone(cand.support), followed...)) {
		*perf = perf.Use(ep.Success, ep.ClosedAt)
	}
	sig := cand.support[0].Signature
	if trig.Template != "" {
		sig = trig.Template
	}
	name := "fix " + sig
	if strings.HasPrefix(sig, "intent:") || strings.HasPrefix(sig, "task:") {
		name = sig
	}
	name = clipName(name)
	if len(conds) > 0 {
		name += " (" + conditionText(conds) + ")"
	}
	var fallbacks []string
	for _, o := range kept {
		if o != cand {
			fallbacks = append(fallbacks, summary(templates(o.steps, o.values())))
		}
	}
	payload := memory.CompetencePayload{
		Kind: memory.Competence, SkillName: name,
		Triggers:      []memory.Trigger{trig},
		Recipe:        recipe,
		FailureModes:  failureModes(failed, cand.steps),
		Fallbacks:     fallbacks,
		RequiredTools: tools,
		Performance:   perf,
	}
	condText := conditionText(conds)
	if condText == "" {
		condText = "none"
	}
	return Procedure{
		Key: cand.key, Scope: cand.support[0].Scope, Signature: cand.support[0].Signature, Payload: payload,
		Support: cand.support, Failed: relevant, Followed: followed, Sensitivity: sens,
		Confidence: Confidence(perf.Successes, perf.Failures),
		Rationale: fmt.Sprintf("%d successful episodes, %d failed, conditions %s: learned from the errors they resolved, of the signature %q",
			len(cand.support), len(relevant), condText, sig),
	}, true
}

// Confidence is what a procedure's uses say of it:
// [memory.LearnedConfidence].
func Confidence(successes, failures int) float64 {
	return memory.LearnedConfidence(successes, failures)
}

// maxName bounds the signature part of a procedure's name.
const maxName = 160

// clipName shortens a name to maxName bytes on a rune boundary.
func clipName(s string) string {
	if len(s) <= maxName {
		return s
	}
	cut := maxName
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// triggerOf is the trigger a candidate procedure is found by: its most
// frequent message as the signal and, for a group of a learned template,
// the template with the wildcards its support shares one value at and
// its recipe does not bind fixed to that value (the recipes' variables
// bound from a wildcard renumbered to match). It is false when a
// trigger of the support is no occurrence of the group's template.
func triggerOf(cand *candidate, tpls []Template) (memory.Trigger, bool) {
	signal := canonical(cand.triggers())
	if signal == "" {
		signal = cand.support[0].Signature
	}
	tpl := cand.support[0].Template
	if tpl.Wildcards() == 0 {
		return memory.Trigger{Signal: signal}, true
	}
	used := map[int]bool{}
	for _, t := range tpls {
		for _, src := range t.From {
			if src.Placeholder == signature.Wildcard {
				used[src.Index] = true
			}
		}
	}
	vals := make([][]string, len(cand.support))
	for e, ep := range cand.support {
		if vals[e] = tpl.WildcardValues(ep.Trigger); vals[e] == nil {
			return memory.Trigger{}, false
		}
	}
	fixed, remap, ok := tpl.Fix(cand.support[0].Trigger, func(k int) bool {
		return used[k] || slices.ContainsFunc(vals, func(v []string) bool { return v[k] != vals[0][k] })
	})
	if !ok {
		return memory.Trigger{}, false
	}
	for _, t := range tpls {
		for n, src := range t.From {
			if src.Placeholder == signature.Wildcard {
				src.Index = remap[src.Index]
				t.From[n] = src
			}
		}
	}
	return memory.Trigger{Signal: signal, Template: fixed.String()}, true
}

// unfollowable reports whether a step is nothing but variables that no
// trigger binds: "{value}" for a whole command.
func unfollowable(t Template) bool {
	if len(t.Args) == 0 {
		return false
	}
	for _, v := range t.Args {
		s, ok := v.(string)
		if !ok || !reWholeVar.MatchString(s) {
			return false
		}
		if _, bound := t.From[strings.Trim(s, "{}")]; bound {
			return false
		}
	}
	return true
}

// reWholeVar is an argument that is one variable and nothing else.
var reWholeVar = regexp.MustCompile(`^\{[A-Za-z_][A-Za-z_0-9]*\}$`)

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
		tried := f.tried(nil)
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
// transaction, and hands each committed write to done. A batch the write
// path refuses is written again one item a transaction, and an item it
// still refuses — a record its schema or gates refuse, a value too large
// to index — is handed to skip and left out: one bad record never stops a
// pass, or every pass after it, from learning the rest. Other errors (the
// database gone) fail the call.
func inBatches[T any](ctx context.Context, w *revise.Writer, items []T, write func(context.Context, *revise.Tx, T) (written, error), done func(written), skip func(T, error) error) error {
	for len(items) > 0 {
		batch := items[:min(len(items), writeBatch)]
		items = items[len(batch):]
		out, err := writeAll(ctx, w, batch, write)
		if err == nil {
			for _, wr := range out {
				done(wr)
			}
			continue
		}
		if !refused(err) || len(batch) == 1 && skip == nil {
			return err
		}
		for _, it := range batch {
			out, err := writeAll(ctx, w, []T{it}, write)
			switch {
			case err == nil:
				done(out[0])
			case refused(err) && skip != nil:
				if err := skip(it, err); err != nil {
					return err
				}
			default:
				return err
			}
		}
	}
	return nil
}

// writeAll writes items in one transaction.
func writeAll[T any](ctx context.Context, w *revise.Writer, items []T, write func(context.Context, *revise.Tx, T) (written, error)) ([]written, error) {
	var out []written
	err := w.InTx(ctx, func(ctx context.Context, tx *revise.Tx) error {
		out = out[:0]
		for _, it := range items {
			wr, err := write(ctx, tx, it)
			if err != nil {
				return err
			}
			out = append(out, wr)
		}
		return nil
	})
	return out, err
}

// refused reports whether the write path refused a record for what it
// is (its schema, a gate, a limit, a value too large to index, a value
// the database rejects), rather than failing for want of a database: the
// record can be skipped, the pass go on.
func refused(err error) bool {
	var ve *schemas.ValidationError
	var re *revise.RejectedError
	var tl *revise.TooLargeError
	var ce *revise.ConflictError
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &ve), errors.As(err, &re), errors.As(err, &tl), errors.As(err, &ce),
		errors.Is(err, store.ErrTooLargeToIndex), errors.Is(err, store.ErrActiveFactExists), errors.Is(err, store.ErrExists):
		return true
	case errors.As(err, &pe):
		// Data exceptions, integrity violations, program limits (an index
		// row too large): the record's, not the database's.
		return strings.HasPrefix(pe.Code, "22") || strings.HasPrefix(pe.Code, "23") || strings.HasPrefix(pe.Code, "54")
	}
	return false
}

// skipped notes a learned record the write path refused: counted in the
// run and the metric, logged, and audited on the tenant (substrate RFC
// §15A.8: who did what and why), so that an operator sees what a pass
// left out and why.
func (c *Consolidator) skipped(ctx context.Context, run Run, tenant, kind, name string, err error) error {
	c.metrics.skipped.WithLabelValues(kind).Inc()
	run.Add("skipped_"+kind, 1)
	c.cfg.Logger.Warn("consolidation skipped a record the write path refused", slog.String("tenant", tenant),
		slog.String("type", kind), slog.String("name", name), slog.Any("error", err))
	return c.cfg.Writer.NoteSkipped(ctx, tenant, actor, fmt.Sprintf("skipped %s %q: %v", kind, name, err))
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
