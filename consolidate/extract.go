package consolidate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/engram-dev/engram/extract"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/policy"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
	"github.com/engram-dev/engram/view"
)

// Facts a language model finds in free text (issue 11, item 7; substrate
// RFC §7): an optional stage, off unless [Config.Extractor] is set.
const (
	// ExtractedTag marks the facts a language model found.
	ExtractedTag = "model-extracted"
	// ModelConfidence is the confidence a model's fact claims: modest,
	// below the 0.7 of a fact an agent states in an event.
	ModelConfidence = 0.4
	// modelRef names the model's reading as a source of kind reasoning.
	modelRef = "model:extract"
)

// extractFacts asks the model, when one is configured, for the facts in
// the free text of each fresh episode of the history (what users said,
// observations, outcome summaries), and writes them through the write path
// ([Consolidator.writeFacts]).
//
// Each episode is asked once: only the episodes new since the watermark
// are, so a repeated pass asks nothing (and a pass redone from an older
// watermark asks again, and the write path absorbs what it already holds).
// The model's help is best-effort, and never holds the pass back: a failed
// call is logged and counted (model_failures) and the episode is left
// without the model's facts; the watermark moves on with the other stages'
// progress. A bad answer is the episode's alone, and the next episode is
// asked; any other failure (the endpoint down, refusing the key, timing
// out) stops the asking for the tenant's other episodes of this pass,
// counted as model_skipped, rather than waiting out a timeout for each. A
// cancelled pass stops and saves no watermark, as any other stage.
func (c *Consolidator) extractFacts(ctx context.Context, run Run, tenant string, h history) error {
	if c.cfg.Extractor == nil {
		return nil
	}
	down := false
	for _, ce := range h.closed {
		if !h.fresh[ce.ID] {
			continue
		}
		text := freeText(h.events[ce.ID])
		if text == "" {
			continue
		}
		if down {
			run.Add("model_skipped", 1)
			continue
		}
		facts, err := c.cfg.Extractor.Facts(ctx, text)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// The error never carries the API key (package extract).
			c.cfg.Logger.Warn("the model found no facts: the episode is left without them",
				slog.String("tenant", tenant), slog.String("episode", ce.ID.String()), slog.String("error", err.Error()))
			run.Add("model_failures", 1)
			down = !errors.Is(err, extract.ErrBadResponse)
			continue
		}
		c.metrics.extracted.Add(float64(len(facts)))
		run.Add("facts_extracted", int64(len(facts)))
		if len(facts) == 0 {
			continue
		}
		if err := c.writeFacts(ctx, run, tenant, ce, h.events[ce.ID], facts); err != nil {
			return err
		}
	}
	return nil
}

// freeText is what an episode's events say in words: user inputs,
// observations and outcome summaries, one a line. Events were redacted at
// ingestion, so no secret of theirs reaches the model.
func freeText(evs []store.EpisodeEvent) string {
	var b strings.Builder
	for _, se := range evs {
		var ev memory.Event
		if json.Unmarshal(se.Event, &ev) != nil {
			continue
		}
		var line string
		switch ev.Kind {
		case memory.UserInput:
			line = "user: " + ev.Text
		case memory.Observation:
			line = "observation: " + ev.Text
		case memory.Outcome:
			if ev.Outcome != nil && strings.TrimSpace(ev.Outcome.Summary) != "" {
				line = "outcome (" + ev.Outcome.Status + "): " + ev.Outcome.Summary
			}
		}
		if line = strings.TrimSpace(line); line != "" {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return strings.TrimSpace(b.String())
}

// writeFacts writes the facts a model found in one episode, in one
// transaction, each through the write path as an observed fact
// ([revise.Tx.ObserveFact]): the contradiction and dedup gates and the
// revision rules apply as to any fact (§7; write-path RFC §12.2.4, §12.3).
// What the model said is redacted first: it may echo a secret, or make one
// up. Each fact cites the episode (record://) and the model's reading (a
// source of kind reasoning), whose authorities are below an event's, so
// that a model's fact never outranks an observed one (write-path RFC
// §12.2.3, §12.4.3); it is derived_from the episode, and as sensitive as
// the most sensitive of the episode, its events and what redaction found.
// A fact the write path refuses is counted (semantic_refused), not an
// error.
func (c *Consolidator) writeFacts(ctx context.Context, run Run, tenant string, ce store.ClosedEpisode, evs []store.EpisodeEvent, facts []extract.Fact) error {
	red := c.redactor()
	sens := ce.Sensitivity
	for _, ev := range evs {
		sens = sens.Max(ev.Sensitivity)
	}
	sources := []memory.Source{
		{Kind: revise.SourceRecord, Ref: "record://" + ce.ID.String()},
		{Kind: revise.SourceReasoning, Ref: modelRef},
	}
	ch := revise.Change{Actor: actor, Evidence: sources,
		Rationale: fmt.Sprintf("a language model read it in the free text of episode %s", ce.ID)}
	var outcomes []string
	err := c.cfg.Writer.InTx(ctx, func(ctx context.Context, tx *revise.Tx) error {
		outcomes = outcomes[:0]
		ep, err := c.reader(tx).Unflagged(ctx, view.System(tenant), ce.ID)
		if errors.Is(err, store.ErrNotFound) {
			return nil // deleted since the pass read it
		}
		if err != nil {
			return err
		}
		for _, f := range facts {
			rec, err := factRecord(red, ep, sens, f, sources)
			if err != nil {
				return err
			}
			a, err := tx.ObserveFact(ctx, tenant, rec, ch)
			if refused(err) {
				outcomes = append(outcomes, "refused")
				continue
			}
			if err != nil {
				return err
			}
			outcomes = append(outcomes, string(a.Outcome))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("write the facts of episode %s: %w", ce.ID, err)
	}
	for _, o := range outcomes {
		c.metrics.records.WithLabelValues(string(memory.Semantic), o).Inc()
		run.Add("semantic_"+o, 1)
	}
	return nil
}

// factRecord is the semantic record of a model's fact from episode ep,
// redacted, with the episode's scope and visibility, and its evidence.
func factRecord(red *policy.Redactor, ep memory.Record, sens memory.Sensitivity, f extract.Fact, sources []memory.Source) (memory.Record, error) {
	validity := map[string]any{"mode": memory.Global}
	if len(f.Conditions) > 0 {
		conds := make(map[string]any, len(f.Conditions))
		for k, v := range f.Conditions {
			conds[k] = v
		}
		validity = map[string]any{"mode": memory.Conditional, "conditions": conds}
	}
	v, findings := red.Value(map[string]any{"subject": f.Subject, "predicate": f.Predicate, "object": f.Object, "validity": validity})
	if len(findings) > 0 {
		sens = sens.Max(policy.MaxSensitivity(findings))
	}
	p := v.(map[string]any)
	p["kind"], p["evidence"] = memory.Semantic, sources
	payload, err := json.Marshal(p)
	if err != nil {
		return memory.Record{}, fmt.Errorf("encode fact: %w", err)
	}
	rec := memory.Record{
		Type: memory.Semantic, Sensitivity: sens, Confidence: ModelConfidence, Salience: memory.DefaultSalience,
		Scope: ep.Scope, Tags: []string{LearnedTag, ExtractedTag}, Payload: payload, Visibility: ep.Visibility,
		Provenance: memory.Provenance{Sources: sources, CreatedBy: actor},
		Relations:  []memory.Relation{{Predicate: memory.DerivedFrom, TargetID: ep.ID}},
	}
	// The agent did not state the fact, the model did: the record names the
	// agent and thread (and the write path judges the agent by it) only
	// where the episode's visibility needs them (003 §12.8.5).
	if ep.Visibility == memory.VisibilityAgent || ep.Visibility == memory.VisibilityThread {
		rec.AgentID, rec.ThreadID = ep.AgentID, ep.ThreadID
	}
	return rec, nil
}

// redactor is the redactor in force: what a model says passes it before
// it is written.
func (c *Consolidator) redactor() *policy.Redactor {
	if c.cfg.Redactor != nil {
		return c.cfg.Redactor()
	}
	return policy.Default().Redactor()
}
