package consolidate

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/signature"
	"github.com/engram-dev/engram/store"
	"github.com/engram-dev/engram/view"
)

// Tags of the plan records consolidation writes: "plan:<key>" names the
// structure a record stands for, "plan_id:<id>" the intent's plan.
const (
	planTag   = "plan:"
	planIDTag = "plan_id:"
)

// Edge kinds of a plan graph (substrate RFC §15A.10).
const (
	DataEdge    = "data"
	ControlEdge = "control"
)

// Trace is what plan extraction reads of a closed episode: every action,
// whatever error came first, and how long it took.
type Trace struct {
	Episode
	// Intent is the episode's intent label, or the normalised text of its
	// first user input.
	Intent string
	// Tagged: the runtime named the intent (an intent: tag); else
	// FirstInput is the first user input it is read from.
	Tagged     bool
	FirstInput string
	Latency    time.Duration
	// graph is its plan graph under the pass's probes, and inputLine its
	// first input as templates read it, when its features learned them
	// (features.go).
	graph     *Graph
	inputLine *signature.Line
}

// readTrace builds a [Trace]: the episode as competence extraction reads
// it, with the actions an error would have cut off put back.
func readTrace(ce store.ClosedEpisode, evs []store.EpisodeEvent) Trace {
	tr := Trace{Episode: readEpisode(ce, nil)}
	var intent, firstInput string
	calls := pairing{}
	for _, se := range evs {
		tr.Sensitivity = tr.Sensitivity.Max(se.Sensitivity)
		var ev memory.Event
		if json.Unmarshal(se.Event, &ev) != nil {
			continue
		}
		for _, tag := range ev.Tags {
			if label, ok := strings.CutPrefix(tag, "intent:"); ok && intent == "" {
				intent = label
			}
		}
		switch ev.Kind {
		case memory.UserInput:
			if firstInput == "" {
				firstInput = ev.Text
			}
		case memory.ToolCall:
			if ev.Tool != nil {
				tr.Actions = calls.call(tr.Actions, ev.Tool)
			}
		case memory.ToolOutput:
			if ev.Tool != nil {
				calls.output(tr.Actions, ev.Tool)
			}
		}
	}
	// The same intent as competence grouping gives an episode without an
	// error (§15A.10: plans are found by intent).
	switch {
	case strings.TrimSpace(intent) != "":
		tr.Intent, tr.Tagged = strings.ToLower(strings.TrimSpace(intent)), true
	case firstInput != "":
		tr.Intent, tr.FirstInput = signature.Normalise(firstInput), firstInput
	}
	if len(evs) > 1 {
		first := slices.MinFunc(evs, func(a, b store.EpisodeEvent) int { return a.Time.Compare(b.Time) })
		last := slices.MaxFunc(evs, func(a, b store.EpisodeEvent) int { return a.Time.Compare(b.Time) })
		tr.Latency = last.Time.Sub(first.Time)
	}
	return tr
}

// Graph is an episode's actions as a DAG: node i is step i, an edge a
// data dependency (a later step's arguments use what an earlier one
// returned or named first) or, between consecutive steps no data edge
// links, a control dependency.
type Graph struct {
	Steps []Action
	Ops   []string
	Edges []memory.PlanEdge
}

// reToken splits arguments and results into the values one step can hand
// to another.
var (
	reToken    = regexp.MustCompile(`[^\s"'` + "`" + `,;()\[\]{}=<>|&]+`)
	reFileName = regexp.MustCompile(`^[\w.-]+\.[A-Za-z]\w{0,5}$`)
	// reNotID is what a plan_id does not keep: anything but the letters
	// (with their marks) and digits of every script.
	reNotID = regexp.MustCompile(`[^\p{L}\p{M}\p{N}]+`)
)

// BuildGraph turns an episode's actions into its plan graph. The actions
// are reduced first, as a procedure's are: failed-then-retried steps,
// repeats and unused probes are not part of the plan.
func BuildGraph(actions []Action, probes []string) Graph {
	return graphOf(Reduce(actions, probes))
}

// graphOf is the plan graph of reduced steps.
func graphOf(steps []Action) Graph {
	g := Graph{Steps: steps, Ops: make([]string, len(steps))}
	produced := make([]map[string]bool, len(steps)) // values each step made or named
	for i, a := range steps {
		g.Ops[i] = op(a)
		own := map[string]bool{}
		for _, t := range tokens(argText(a.Args)) {
			own[t] = true
		}
		produced[i] = map[string]bool{}
		for _, t := range tokens(resultText(a.Result)) {
			if !own[t] {
				produced[i][t] = true
			}
		}
		for t := range own {
			if pathLike(t) {
				produced[i][t] = true
			}
		}
	}
	for j := 1; j < len(steps); j++ {
		from := map[int]bool{}
		for _, t := range tokens(argText(steps[j].Args)) {
			// The latest earlier step that made or named the value.
			forms := forms(t)
			for i := j - 1; i >= 0; i-- {
				if slices.ContainsFunc(forms, func(f string) bool { return produced[i][f] }) {
					from[i] = true
					break
				}
			}
		}
		for _, i := range slices.Sorted(maps.Keys(from)) {
			g.Edges = append(g.Edges, memory.PlanEdge{From: nodeID(i), To: nodeID(j), Kind: DataEdge})
		}
		if !from[j-1] {
			g.Edges = append(g.Edges, memory.PlanEdge{From: nodeID(j - 1), To: nodeID(j), Kind: ControlEdge})
		}
	}
	slices.SortFunc(g.Edges, func(a, b memory.PlanEdge) int {
		return cmp.Or(strings.Compare(a.From, b.From), strings.Compare(a.To, b.To), strings.Compare(a.Kind, b.Kind))
	})
	return g
}

// Key is the graph's structure, canonical: its node ops in order and its
// edges, under the intent. Graphs with one key are structurally equal.
func (g Graph) Key(intent string) string {
	h := sha256.New()
	h.Write([]byte(intent))
	for _, o := range g.Ops {
		h.Write([]byte{0})
		h.Write([]byte(o))
	}
	for _, e := range g.Edges {
		fmt.Fprintf(h, "\x01%s>%s:%s", e.From, e.To, e.Kind)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// edgesOf is a graph's edges, an empty list (never null: the schema
// wants a list) for a graph of one step.
func edgesOf(g Graph) []memory.PlanEdge {
	if g.Edges == nil {
		return []memory.PlanEdge{}
	}
	return g.Edges
}

func nodeID(i int) string { return fmt.Sprintf("n%d", i+1) }

// op names a node as a procedure step is named, with the values that
// vary normalised away: "shell git init", "write_file path=<path>".
func op(a Action) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(a.Args)) {
		v := signature.Normalise(flat(a.Args[k]))
		if k == "args" || (slices.Contains(shellTools, a.Tool) && (k == "command" || k == "cmd")) {
			parts = append(parts, v)
		} else {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.TrimSpace(a.Tool + " " + strings.Join(parts, " "))
}

// tokens are the values in a text that can carry data from one step to
// another: words of four characters or more with a dot, a separator, a
// dash, an underscore or a digit — names, paths, ids, not prose.
func tokens(s string) []string {
	var out []string
	for _, t := range reToken.FindAllString(s, -1) {
		t = strings.TrimRight(t, ".:")
		if len(t) >= 4 && strings.ContainsAny(t, "./\\_-0123456789") && strings.Trim(t, "-") != "" && !strings.HasPrefix(t, "-") {
			out = append(out, t)
		}
	}
	return out
}

// pathLike reports whether an argument names a file: a path or a name with
// an extension.
func pathLike(t string) bool {
	return strings.ContainsAny(t, `/\`) || reFileName.MatchString(t)
}

// forms are the ways an earlier step can have named a value a later one
// uses: the value itself and, for a path, its name and the directories
// it is in.
func forms(t string) []string {
	out := []string{t}
	if !strings.ContainsAny(t, `/\`) {
		return out
	}
	p := strings.TrimRight(t, `/\`)
	if i := strings.LastIndexAny(p, `/\`); i >= 0 && i < len(p)-1 {
		out = append(out, p[i+1:])
	}
	for i := strings.LastIndexAny(p, `/\`); i > 0; i = strings.LastIndexAny(p, `/\`) {
		p = p[:i]
		out = append(out, p, p+"/")
	}
	return out
}

func argText(args map[string]any) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(args)) {
		parts = append(parts, flat(args[k]))
	}
	return strings.Join(parts, " ")
}

func resultText(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	return flat(v)
}

// Plan is a plan graph learned from the episodes of one intent, ready to
// be written as a plan_graph record.
type Plan struct {
	Key         string
	Scope       string
	Intent      string
	Payload     memory.PlanGraphPayload
	Support     []Trace
	Failed      []Trace
	Confidence  float64
	Sensitivity memory.Sensitivity
	Rationale   string
}

// maxPlanID bounds a plan_id: an intent read from a long first input
// would make a plan_id tag past the write path's tag limit.
const maxPlanID = 80

// PlanID is the plan_id of an intent's plans: the intent as an
// identifier — its letters and digits, of whatever script, lower-cased,
// runs of anything else one "_" — at most maxPlanID bytes: a long one cut
// at a character, with a hash of the whole so that two long intents keep
// two ids. An intent with no letter or digit is "plan_" and a hash of it,
// so that two such intents keep two ids too.
func PlanID(intent string) string {
	id := strings.Trim(reNotID.ReplaceAllString(strings.ToLower(intent), "_"), "_")
	if id == "" {
		sum := sha256.Sum256([]byte(intent))
		return "plan_" + hex.EncodeToString(sum[:6])
	}
	if len(id) > maxPlanID {
		sum := sha256.Sum256([]byte(id))
		cut := maxPlanID - 13
		for cut > 0 && !utf8.RuneStart(id[cut]) {
			cut--
		}
		id = strings.TrimRight(id[:cut], "_") + "_" + hex.EncodeToString(sum[:6])
	}
	return id
}

// LearnPlans finds the plans of one intent's episodes (one scope): the
// graph structures that at least the configured number of successful
// episodes share, each with its metrics, best supported first, the most
// recent on a tie (substrate RFC §9, §15A.10).
func (c *Consolidator) LearnPlans(group []Trace) []Plan {
	group = slices.SortedFunc(slices.Values(group), func(a, b Trace) int {
		return cmp.Or(a.ClosedAt.Compare(b.ClosedAt), strings.Compare(a.ID.String(), b.ID.String()))
	})
	type structure struct {
		graph           Graph
		support, failed []Trace
		steps           [][]Action
	}
	byKey := map[string]*structure{}
	for _, tr := range group {
		g := tr.graph
		if g == nil {
			built := BuildGraph(planActions(tr), c.cfg.Probes)
			g = &built
		}
		if len(g.Steps) == 0 {
			continue
		}
		k := g.Key(tr.Intent)
		if byKey[k] == nil {
			byKey[k] = &structure{graph: *g}
		}
		s := byKey[k]
		if tr.Success {
			s.support = append(s.support, tr)
			s.steps = append(s.steps, g.Steps)
		} else {
			s.failed = append(s.failed, tr)
		}
	}
	var out []Plan
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		s := byKey[k]
		n := len(s.support)
		if n < c.cfg.Support {
			continue
		}
		tpls := Templates(s.steps, nil)
		nodes := make([]memory.PlanNode, len(tpls))
		for i, t := range tpls {
			nodes[i] = memory.PlanNode{ID: nodeID(i), Op: s.graph.Ops[i], Params: t.Args}
		}
		var latency time.Duration
		sens := memory.Public
		for _, tr := range s.support {
			latency += tr.Latency
			sens = sens.Max(tr.Sensitivity)
		}
		f := len(s.failed)
		intent := s.support[0].Intent
		out = append(out, Plan{
			Key: k, Scope: s.support[0].Scope, Intent: intent,
			Payload: memory.PlanGraphPayload{
				Kind: memory.PlanGraph, PlanID: PlanID(intent), Intent: clipName(intent), Nodes: nodes, Edges: edgesOf(s.graph),
				Metrics: map[string]any{
					"uses": n, "successes": n, "failures": f,
					"failure_rate":   math.Round(float64(f)/float64(n+f)*1000) / 1000,
					"avg_latency_ms": (latency / time.Duration(n)).Milliseconds(),
				},
			},
			Support: s.support, Failed: s.failed, Sensitivity: sens,
			Confidence: math.Round(min(MaxConfidence, 1-1/(float64(n)+1))*1000) / 1000,
			Rationale: fmt.Sprintf("%d successful episodes, %d failed, of intent %q followed this graph: %d steps, %d edges",
				n, f, intent, len(nodes), len(s.graph.Edges)),
		})
	}
	slices.SortStableFunc(out, func(a, b Plan) int {
		return cmp.Or(len(b.Support)-len(a.Support), b.Support[len(b.Support)-1].ClosedAt.Compare(a.Support[len(a.Support)-1].ClosedAt))
	})
	return out
}

// mineInput adds its first input to a miner of templates.
func (tr Trace) mineInput(m *signature.Miner) {
	if tr.inputLine != nil {
		m.AddLine(*tr.inputLine)
		return
	}
	m.Add(tr.FirstInput)
}

// inputTemplate is the template of m its first input is an occurrence of.
func (tr Trace) inputTemplate(m *signature.Miner) (signature.Template, bool) {
	if tr.inputLine != nil {
		return m.TemplateOf(*tr.inputLine)
	}
	return m.Template(tr.FirstInput)
}

// planActions are the actions a trace's plan graph is built of: a
// failed episode's last call, where its failure showed, is a step of what
// it tried.
func planActions(tr Trace) []Action {
	acts := tr.Actions
	if n := len(acts); !tr.Success && n > 0 && acts[n-1].Failed {
		acts = slices.Clone(acts)
		acts[n-1].Failed = false
	}
	return acts
}

// traceGroups are the traces of h's episodes grouped by scope and
// intent, in key order, the groups with a fresh episode only. An episode
// whose runtime named no intent is known by its first input; inputs that
// are occurrences of one template learned from the tenant's first inputs
// ("deploy billing to staging", "deploy search to staging") are one
// intent, the template (substrate RFC §9: plans are found by intent).
func traceGroups(h history) [][]Trace {
	traces := make([]Trace, len(h.closed))
	for i, ce := range h.closed {
		traces[i] = h.features[ce.ID].trace(ce)
	}
	return groupTraces(traces, h.fresh)
}

// groupTraces is [traceGroups] of traces.
func groupTraces(traces []Trace, fresh map[uuid.UUID]bool) [][]Trace {
	miner := signature.NewMiner(0)
	for _, tr := range traces {
		if !tr.Tagged && tr.FirstInput != "" {
			tr.mineInput(miner)
		}
	}
	groups := map[string][]Trace{}
	touched := map[string]bool{}
	for _, tr := range traces {
		if !tr.Tagged && tr.FirstInput != "" {
			if tpl, ok := tr.inputTemplate(miner); ok {
				tr.Intent = tpl.String()
			}
		}
		if tr.Intent == "" {
			continue
		}
		key := tr.Scope + "\x00" + tr.Intent
		groups[key] = append(groups[key], tr)
		if fresh[tr.ID] {
			touched[key] = true
		}
	}
	out := make([][]Trace, 0, len(touched))
	for _, key := range slices.Sorted(maps.Keys(touched)) {
		out = append(out, groups[key])
	}
	return out
}

// plans learns the plan graphs of a tenant's intents that have a fresh
// episode, and writes each intent's best supported one.
func (c *Consolidator) plans(ctx context.Context, run Run, tenant string, h history) error {
	var best []Plan
	for _, group := range traceGroups(h) {
		if plans := c.LearnPlans(group); len(plans) > 0 {
			best = append(best, plans[0])
		}
	}
	return inBatches(ctx, c.cfg.Writer, best, func(ctx context.Context, tx *revise.Tx, p Plan) (written, error) {
		return c.writePlan(ctx, tx, tenant, p)
	}, func(w written) {
		c.metrics.records.WithLabelValues(string(memory.PlanGraph), w.outcome).Inc()
		c.metrics.planReuse.Add(float64(w.reused))
		run.Add("plan_"+w.outcome, 1)
	}, func(p Plan, err error) error {
		return c.skipped(ctx, run, tenant, string(memory.PlanGraph), p.Payload.PlanID, err)
	})
}

// writePlan writes an intent's plan through the write path: a new record
// (version "1"); nothing when the live plan says the same; the live plan's
// next revision, amended in place, when only its metrics or evidence
// changed; and, when the structure changed, a record of the next version
// that supersedes it — the old structure stays in history (§15A.10).
func (c *Consolidator) writePlan(ctx context.Context, tx *revise.Tx, tenant string, p Plan) (written, error) {
	w, err := c.applyPlan(ctx, tx, tenant, p)
	if err != nil {
		return written{}, fmt.Errorf("write plan %q: %w", p.Payload.PlanID, err)
	}
	c.cfg.Logger.Debug("plan", slog.String("tenant", tenant), slog.String("plan_id", p.Payload.PlanID), slog.String("outcome", w.outcome))
	return w, nil
}

// applyPlan is writePlan's work, in the batch's transaction.
func (c *Consolidator) applyPlan(ctx context.Context, tx *revise.Tx, tenant string, p Plan) (written, error) {
	sources := make([]memory.Source, len(p.Support))
	rels := make([]memory.Relation, len(p.Support))
	for i, tr := range p.Support {
		sources[i] = memory.Source{Kind: "record", Ref: "record://" + tr.ID.String()}
		rels[i] = memory.Relation{Predicate: memory.DerivedFrom, TargetID: tr.ID}
	}
	ch := revise.Change{Actor: actor, Rationale: c.rationale(p.Sensitivity, p.Rationale, len(p.Support), len(p.Failed)), Evidence: sources}
	idTag := c.planIDTag(p)
	page, err := c.reader(tx).Records(ctx, view.System(tenant), store.Filter{
		Types: []memory.Type{memory.PlanGraph}, Tags: []string{LearnedTag, idTag}, Scope: &p.Scope,
		Statuses: []memory.Status{memory.Active, memory.Contested, memory.Draft}, Limit: 1})
	if err != nil {
		return written{}, err
	}
	payload := p.Payload
	payload.Version = "1"
	var old memory.Record
	sameStructure := false
	if len(page.Records) > 0 {
		old = page.Records[0]
		var prev memory.PlanGraphPayload
		if err := json.Unmarshal(old.Payload, &prev); err != nil {
			return written{}, fmt.Errorf("decode plan %s: %w", old.ID, err)
		}
		payload.Version = prev.Version
		if sameStructure = slices.Contains(old.Tags, planTag+p.Key); !sameStructure {
			v, _ := strconv.Atoi(prev.Version) // a version that is not a number starts again at 1
			payload.Version = strconv.Itoa(v + 1)
		}
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return written{}, fmt.Errorf("encode plan: %w", err)
	}
	rec := memory.Record{
		Type: memory.PlanGraph, Sensitivity: p.Sensitivity, Confidence: p.Confidence, Salience: memory.DefaultSalience,
		Scope: p.Scope, Tags: []string{LearnedTag, planTag + p.Key, idTag}, Payload: raw,
		Visibility: memory.VisibilityTenant,
		Provenance: memory.Provenance{Sources: sources, CreatedBy: actor},
		Relations:  rels,
	}
	switch {
	case len(page.Records) == 0:
		a, err := tx.Admit(ctx, tenant, rec, ch)
		return written{outcome: string(a.Outcome)}, err
	case old.Status == memory.Draft || same(old, rec):
		return written{outcome: "unchanged"}, nil
	case sameStructure:
		// The same structure again: its metrics and evidence, amended; the
		// uses it gained are reuse.
		_, err = tx.Amend(ctx, tenant, old.ID, old.Version, rec, ch)
		return written{outcome: "revised", reused: max(0, planUses(rec.Payload)-planUses(old.Payload))}, err
	}
	_, _, err = tx.Supersede(ctx, tenant, old.ID, old.Version, rec, ch)
	return written{outcome: "revised"}, err
}

// planUses is the uses a plan record's metrics count.
func planUses(payload json.RawMessage) int {
	var p struct {
		Metrics struct {
			Uses int `json:"uses"`
		} `json:"metrics"`
	}
	_ = json.Unmarshal(payload, &p)
	return p.Metrics.Uses
}
