package consolidate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/store"
)

// DefaultCompressAfter is how old a closed episode must be before it is
// compressed, when [Compression.After] is zero.
const DefaultCompressAfter = 30 * 24 * time.Hour

// Compression is when a pass compresses episodes (substrate RFC §5: closed
// episodes older than a configurable age, already used as evidence, are
// compressed). engramd's consolidate.compress section.
type Compression struct {
	// After is how long ago an episode must have closed;
	// [DefaultCompressAfter] when zero.
	After time.Duration `yaml:"after"`
	// Off turns compression off.
	Off bool `yaml:"off"`
}

// Summariser writes the summary of an episode about to be compressed; see
// [Config.Summarise].
type Summariser func(ctx context.Context, ep Episode) (string, error)

// compressMetrics count what compression did.
type compressMetrics struct {
	episodes prometheus.Counter
	released prometheus.Counter
}

func newCompressMetrics(reg prometheus.Registerer) compressMetrics {
	m := compressMetrics{
		episodes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "engram_consolidation_episodes_compressed_total",
			Help: "Closed episodes compressed: their timeline cut down to errors, outcomes and cited events, plus a summary.",
		}),
		released: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "engram_consolidation_events_released_total",
			Help: "Staged events compression released (deleted) because no kept timeline entry or live record points to them.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.episodes, m.released)
	}
	return m
}

// compress is a pass's last stage: it walks the episodes closed at least
// [Compression.After] ago, from where the last pass stopped, a batch at a
// time, and compresses those a live record uses as evidence. An episode
// nobody had learned from by then is left whole. The watermark is saved
// after each batch, so a pass stopped part-way resumes at the batch it
// was in, and an episode compressed already is never compressed again.
func (c *Consolidator) compress(ctx context.Context, run Run, mark *passMark) error {
	if c.cfg.Compress.Off {
		return nil
	}
	before := c.cfg.Now().Add(-c.cfg.Compress.After)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		page, err := store.AgedEpisodes(ctx, c.cfg.DB, mark.Compress, before, c.cfg.Batch)
		if err != nil {
			return err
		}
		due := map[string][]store.ClosedEpisode{}
		var tenants []string
		for _, e := range page {
			if e.Cited && !e.Compressed {
				if due[e.Tenant] == nil {
					tenants = append(tenants, e.Tenant)
				}
				due[e.Tenant] = append(due[e.Tenant], e.ClosedEpisode)
			}
		}
		for _, tenant := range tenants {
			if err := c.compressAll(ctx, run, tenant, due[tenant]); err != nil {
				return fmt.Errorf("compress episodes of tenant %s: %w", tenant, err)
			}
		}
		if len(page) > 0 {
			last := page[len(page)-1]
			mark.Compress = store.EpisodeMark{ClosedAt: last.ClosedAt, Tenant: last.Tenant, ID: last.ID}
			if err := run.SaveCursor(ctx, *mark); err != nil {
				return err
			}
		}
		if len(page) < c.cfg.Batch {
			return nil
		}
	}
}

// compressAll compresses episodes of one tenant, each in a transaction of
// its own.
func (c *Consolidator) compressAll(ctx context.Context, run Run, tenant string, eps []store.ClosedEpisode) error {
	ids := make([]uuid.UUID, len(eps))
	for i, e := range eps {
		ids[i] = e.ID
	}
	evs, err := c.episodeEvents(ctx, tenant, ids)
	if err != nil {
		return err
	}
	byEpisode := map[uuid.UUID][]store.EpisodeEvent{}
	for _, ev := range evs {
		byEpisode[ev.Episode] = append(byEpisode[ev.Episode], ev)
	}
	for _, ce := range eps {
		done, err := c.compressOne(ctx, ce, byEpisode[ce.ID])
		var conflict *revise.ConflictError
		var invalid *schemas.ValidationError
		if errors.As(err, &conflict) || errors.As(err, &invalid) {
			// The write path refused this episode (compressed or changed
			// meanwhile, say): the others go on, and the pass with them.
			c.cfg.Logger.Warn("compress episode", slog.String("tenant", tenant), slog.String("episode", ce.ID.String()), slog.Any("error", err))
			run.Add("compress_refused", 1)
			continue
		}
		if err != nil {
			return err
		}
		c.compressed.episodes.Inc()
		c.compressed.released.Add(float64(done.Released))
		run.Add("episodes_compressed", 1)
		if done.Released > 0 {
			run.Add("events_released", int64(done.Released))
		}
	}
	return nil
}

// compressOne compresses one episode through the write path, keeping the
// events consolidation learns from.
func (c *Consolidator) compressOne(ctx context.Context, ce store.ClosedEpisode, evs []store.EpisodeEvent) (revise.Compressed, error) {
	refs := make([]string, len(evs))
	for i, ev := range evs {
		refs[i] = "evt://" + ev.ID.String()
	}
	citedRefs, err := store.CitedRefs(ctx, c.cfg.DB, ce.Tenant, refs)
	if err != nil {
		return revise.Compressed{}, err
	}
	cited := map[uuid.UUID]bool{}
	for _, r := range citedRefs {
		if id, err := uuid.Parse(strings.TrimPrefix(r, "evt://")); err == nil {
			cited[id] = true
		}
	}
	steps, whole := c.steps(ce, evs, cited)
	summary := c.summary(ctx, ce, evs)
	why := fmt.Sprintf("closed %s, more than %s ago, and evidence of live records", ce.ClosedAt.UTC().Format(time.RFC3339), age(c.cfg.Compress.After))
	if whole {
		why += "; its steps could not be told from the rest, so every event stays"
	}
	var out revise.Compressed
	err = c.cfg.Writer.InTx(ctx, func(ctx context.Context, tx *revise.Tx) error {
		out, err = tx.Compress(ctx, ce.Tenant, ce.ID, 0, revise.Compaction{Steps: steps, Summary: summary}, revise.Change{
			Actor: actor, Rationale: why, Evidence: []memory.Source{{Kind: revise.SourceRecord, Ref: "record://" + ce.ID.String()}}})
		return err
	})
	if err != nil {
		return out, fmt.Errorf("compress episode %s: %w", ce.ID, err)
	}
	c.cfg.Logger.Debug("compressed episode", slog.String("tenant", ce.Tenant), slog.String("episode", ce.ID.String()),
		slog.Int("kept", out.Kept), slog.Int("entries", out.Entries), slog.Int("released", out.Released))
	return out, nil
}

// steps are the staged events of an episode that consolidation learns
// from, beyond its errors, its outcome and the events cited (which the
// write path keeps in any case): the calls and outputs of the steps its
// procedures and plans are made of (the reduced actions of [Reduce] and
// [BuildGraph]; for a failed episode, all it tried, its failure mode),
// of its failed calls (its errors), its first user input
// and intent label, the first report of each environment key, and its
// first and last events (its latency). It proves the choice by reading the
// episode back from those events alone: when what a pass would learn from
// them differs in anything from what it learns from all of them, every
// event is a step (whole is true), and compression releases none. So a
// pass after compression writes nothing new: procedures and plans come out
// unchanged.
func (c *Consolidator) steps(ce store.ClosedEpisode, evs []store.EpisodeEvent, cited map[uuid.UUID]bool) (steps []uuid.UUID, whole bool) {
	keep := map[uuid.UUID]bool{}
	calls := pairing{}
	var (
		actions []Action
		evOf    [][]uuid.UUID // the events of each action
		input   bool
		intent  bool
		envSeen = map[string]bool{}
	)
	for _, se := range evs {
		var ev memory.Event
		if json.Unmarshal(se.Event, &ev) != nil {
			continue
		}
		if ev.Kind == memory.ErrorEvent || ev.Kind == memory.Outcome || cited[se.ID] {
			keep[se.ID] = true
		}
		for k := range ev.Environment {
			if !envSeen[k] {
				envSeen[k], keep[se.ID] = true, true
			}
		}
		if !intent && slices.ContainsFunc(ev.Tags, func(t string) bool { return strings.HasPrefix(t, "intent:") }) {
			intent, keep[se.ID] = true, true
		}
		switch ev.Kind {
		case memory.UserInput:
			if !input {
				input, keep[se.ID] = true, true
			}
		case memory.ToolCall:
			if ev.Tool != nil {
				actions = calls.call(actions, ev.Tool)
				evOf = append(evOf, []uuid.UUID{se.ID})
			}
		case memory.ToolOutput:
			if ev.Tool == nil {
				continue
			}
			i, failed := calls.output(actions, ev.Tool)
			if failed {
				keep[se.ID] = true // an error
			}
			if i >= 0 {
				evOf[i] = append(evOf[i], se.ID)
			}
		}
	}
	if len(evs) > 0 {
		keep[slices.MinFunc(evs, func(a, b store.EpisodeEvent) int { return a.Time.Compare(b.Time) }).ID] = true
		keep[slices.MaxFunc(evs, func(a, b store.EpisodeEvent) int { return a.Time.Compare(b.Time) }).ID] = true
	}
	ep := readEpisode(ce, evs)
	offset := len(actions) - len(ep.Actions) // the episode's actions are the trace's after its trigger
	pick := func(from []Action, at int, reduced []Action) {
		for _, j := range subsequence(from, reduced) {
			if i := at + j; i >= 0 && i < len(evOf) {
				for _, id := range evOf[i] {
					keep[id] = true
				}
			}
		}
	}
	pick(actions, 0, Reduce(actions, c.cfg.Probes))
	pick(ep.Actions, offset, Reduce(ep.Actions, c.cfg.Probes))
	if !ep.Success {
		pick(ep.Actions, offset, Reduce(ep.Actions, nil)) // what it tried: a failure mode
	}
	for i, a := range actions {
		if a.Failed {
			pick(actions, 0, actions[i:i+1])
		}
	}

	var kept []store.EpisodeEvent
	for _, se := range evs {
		if keep[se.ID] {
			kept = append(kept, se)
			steps = append(steps, se.ID)
		}
	}
	if reflect.DeepEqual(c.learning(ce, evs), c.learning(ce, kept)) {
		return steps, false
	}
	steps = steps[:0]
	for _, se := range evs {
		steps = append(steps, se.ID)
	}
	return steps, true
}

// subsequence are the indexes in actions of reduced, a subsequence of it.
func subsequence(actions, reduced []Action) []int {
	var out []int
	i := 0
	for _, r := range reduced {
		for i < len(actions) && !reflect.DeepEqual(actions[i], r) {
			i++
		}
		if i == len(actions) {
			return out
		}
		out = append(out, i)
		i++
	}
	return out
}

// learning is everything a pass learns from one episode: what groups it,
// the steps procedures and failure modes are made of, its plan graph and
// metrics. Two readings of an episode with the same learning teach a pass
// the same.
type learning struct {
	Signature, Trigger, Intent string
	Success                    bool
	Sensitivity                memory.Sensitivity
	Environment                map[string]any
	Errors                     []string
	// Steps are its reduced actions; Tried, for a failed episode, the
	// actions a failure mode names.
	Steps, Tried []Action
	Graph        Graph
	Latency      time.Duration
	// Problems are what each of its problems teaches.
	Problems []problemLearning
}

// problemLearning is what a pass learns from one problem of an episode.
type problemLearning struct {
	Signature, Trigger string
	Success            bool
	Errors             []string
	Steps              []Action
}

func (c *Consolidator) learning(ce store.ClosedEpisode, evs []store.EpisodeEvent) learning {
	ep := readEpisode(ce, evs)
	tr := readTrace(ce, evs)
	l := learning{
		Signature: ep.Signature, Trigger: ep.Trigger, Intent: tr.Intent, Success: ep.Success, Sensitivity: ep.Sensitivity.Max(tr.Sensitivity),
		Environment: ep.Environment, Errors: ep.Errors,
		Steps: Reduce(ep.Actions, c.cfg.Probes),
		Graph: BuildGraph(tr.Actions, c.cfg.Probes), Latency: tr.Latency,
	}
	if !ep.Success {
		l.Tried = Reduce(ep.Actions, nil) // failureModes
	}
	for _, p := range readProblems(ce, evs) {
		l.Problems = append(l.Problems, problemLearning{Signature: p.Signature, Trigger: p.Trigger, Success: p.Success,
			Errors: p.Errors, Steps: Reduce(p.Actions, c.cfg.Probes)})
	}
	return l
}

// summary is what a compressed episode says it was: the configured
// summariser's words, else the language model's (consolidate.model) when
// one is configured, redacted with the policy in force as anything a
// model says is; without either, or when it fails, [Summary]'s.
func (c *Consolidator) summary(ctx context.Context, ce store.ClosedEpisode, evs []store.EpisodeEvent) string {
	det := Summary(ce, evs, c.cfg.Probes)
	var s string
	var err error
	switch {
	case c.cfg.Summarise != nil:
		s, err = c.cfg.Summarise(ctx, readEpisode(ce, evs))
	case c.cfg.Extractor != nil:
		s, err = c.cfg.Extractor.Summarise(ctx, det+"\n"+freeText(evs))
	default:
		return det
	}
	if err == nil && strings.TrimSpace(s) != "" {
		s, _ = c.redactor().String(s)
		return s
	}
	if err == nil {
		err = errors.New("empty summary")
	}
	c.cfg.Logger.Warn("summarise episode", slog.String("tenant", ce.Tenant), slog.String("episode", ce.ID.String()), slog.Any("error", err))
	return det
}

// age is a duration in days when it is whole days.
func age(d time.Duration) string {
	const day = 24 * time.Hour
	if d%day == 0 {
		if d == day {
			return "1 day"
		}
		return fmt.Sprintf("%d days", d/day)
	}
	return d.String()
}

// maxSummaryPart bounds each part of a deterministic summary.
const maxSummaryPart = 400

// Summary is the deterministic summary of an episode: its outcome, its
// task, the error that opened it and how many followed, the steps it took
// and how many events it had. It is made of the episode's events, which
// the policy plane redacted before they were staged.
func Summary(ce store.ClosedEpisode, evs []store.EpisodeEvent, probes []string) string {
	ep := readEpisode(ce, evs)
	tr := readTrace(ce, evs)
	outcome := ce.Outcome
	if outcome == "" {
		outcome = "no outcome"
	}
	parts := []string{"Episode, " + outcome}
	if tr.Intent != "" {
		parts = append(parts, "task: "+clip(tr.Intent))
	}
	if ep.Trigger != "" {
		parts = append(parts, "error: "+clip(ep.Trigger))
	}
	switch n := len(ep.Errors); {
	case n == 1:
		parts = append(parts, "1 later error: "+clip(ep.Errors[0]))
	case n > 1:
		parts = append(parts, fmt.Sprintf("%d later errors, the last: %s", n, clip(ep.Errors[n-1])))
	}
	if steps := Reduce(tr.Actions, probes); len(steps) > 0 {
		parts = append(parts, "steps: "+clip(summary(Templates([][]Action{steps}, nil))))
	}
	parts = append(parts, fmt.Sprintf("%d events, %d tool calls", len(evs), len(tr.Actions)))
	return strings.Join(parts, ". ")
}

// clip shortens s to maxSummaryPart bytes, on a rune boundary.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= maxSummaryPart {
		return s
	}
	cut := maxSummaryPart
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
