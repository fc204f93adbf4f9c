package consolidate

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/signature"
)

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
		all = append(all, h.features[ce.ID].problems(ce)...)
	}
	return groupProblems(all, h.fresh)
}

// groupProblems is [problemGroups] of the problems all.
func groupProblems(all []Episode, fresh map[uuid.UUID]bool) [][]Episode {
	miner := signature.NewMiner(0)
	for _, ep := range all {
		if ep.Trigger != "" {
			ep.mine(miner)
		}
	}
	groups := map[string][]Episode{}
	touched := map[string]bool{}
	for _, ep := range all {
		if ep.Trigger != "" {
			if tpl, ok := ep.templateIn(miner); ok {
				ep.Template, ep.Signature = tpl, tpl.String()
			}
		}
		if ep.Signature == "" {
			continue
		}
		key := ep.Scope + "\x00" + ep.Signature
		groups[key] = append(groups[key], ep)
		if fresh[ep.ID] {
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
		steps := ep.steps(c.cfg.Probes)
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
	tpl := signature.ParseTemplate(trig.Template)
	applies := func(ep Episode) bool { return trig.Template == "" || ep.occurs(tpl) }
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
		if vals[e] = ep.wildcardValues(tpl); vals[e] == nil {
			return memory.Trigger{}, false
		}
	}
	fixed, remap, ok := cand.support[0].fix(tpl, func(k int) bool {
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
