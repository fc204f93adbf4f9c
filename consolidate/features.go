package consolidate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/signature"
	"github.com/engram-dev/engram/store"
)

// An episode's features (issue 29) are what a pass derives from one closed
// episode's staged events alone: its problems with the steps they reduce
// to, and its trace with its plan graph. The events of a closed episode do
// not change (substrate RFC §5: append-only) and a revision of the episode
// (compression) gives it a new version, so the features are learned once,
// when a pass first reads the episode, and kept beside it
// (episode_features, migration 031); a pass regroups its window from them
// (§15.7) and reads events only for the episodes it has none of. What
// depends on the whole window — the error templates mined from the
// tenant's triggers and all that follows from them — is learned by each
// pass, as before.

// featuresVersion is the version of the code that learns features
// (learnFeatures and what it calls: reading problems and traces, reducing
// steps, building graphs, signatures). Change it with any change of what
// they derive: the rows the older code stored are learned again.
const featuresVersion = 1

// learnerOf names the code and configuration that learn features: the
// version, and the probes steps are reduced by. A stored row is used only
// by a consolidator of the same learner.
func learnerOf(version int, probes []string) string {
	h := sha256.New()
	for _, p := range probes {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("v%d/%s", version, hex.EncodeToString(h.Sum(nil))[:16])
}

// features are what consolidation learns of one closed episode from its
// events, without what its record says (id, thread, scope, closing time,
// its own environment and sensitivity), which [features.problems] and
// [features.trace] take from the episode's row.
type features struct {
	// Sensitivity is the most sensitive of the episode's events; "" when
	// it has none.
	Sensitivity memory.Sensitivity
	// Environment are the scalar keys its events reported, the first
	// report of a key winning.
	Environment map[string]any
	// Problems are its problems ([readProblems]) with the indexes of the
	// steps each reduces to under the learner's probes and its trigger
	// read for templates, and nothing of the episode's row.
	Problems []Episode
	// Trace is its trace ([readTrace]) with its plan graph under the
	// learner's probes and its first input read for templates, and
	// nothing of the episode's row but its actions;
	// TraceSteps are the indexes among them of the graph's steps.
	Trace      Trace
	TraceSteps []int
}

// learnFeatures learns the features of an episode that closed with
// outcome from its events in timeline order: [readProblems] and
// [readTrace] over an episode row that says nothing but the outcome
// (which decides what its problems are), so that what they return is the
// events' alone.
func learnFeatures(outcome string, evs []store.EpisodeEvent, probes []string) features {
	bare := store.ClosedEpisode{Outcome: outcome}
	r := readEvents(bare, evs)
	f := features{Sensitivity: r.base.Sensitivity, Environment: r.base.Environment}
	f.Problems = r.finish(outcome == "success")
	for i := range f.Problems {
		p := &f.Problems[i]
		p.Environment, p.Sensitivity = nil, ""
		p.reduced, p.reducedKnown = p.triedSteps(probes), true
		if p.Trigger != "" {
			l := signature.ReadLine(p.Trigger)
			p.line = &l
		}
	}
	tr := readTrace(bare, evs)
	acts := planActions(tr)
	f.TraceSteps = reduction(acts, probes)
	g := graphOf(pick(acts, f.TraceSteps))
	f.Trace = Trace{Episode: Episode{Actions: tr.Actions}, Intent: tr.Intent, Tagged: tr.Tagged, FirstInput: tr.FirstInput,
		Latency: tr.Latency, graph: &g}
	if !tr.Tagged && tr.FirstInput != "" {
		l := signature.ReadLine(tr.FirstInput)
		f.Trace.inputLine = &l
	}
	return f
}

// problems are the episode's problems, as [readProblems] reads them from
// the episode's row and its events.
func (f *features) problems(ce store.ClosedEpisode) []Episode {
	if f.Problems == nil {
		return nil
	}
	env := map[string]any{}
	addEnv(env, ce.Environment)
	addEnv(env, f.Environment)
	sens := ce.Sensitivity.Max(f.Sensitivity)
	out := make([]Episode, len(f.Problems))
	for i, p := range f.Problems {
		p.Tenant, p.ID, p.Thread, p.ClosedAt, p.Scope = ce.Tenant, ce.ID, ce.Thread, ce.ClosedAt, ce.Scope
		p.Environment, p.Sensitivity = env, sens
		out[i] = p
	}
	return out
}

// trace is the episode's trace, as [readTrace] reads it from the
// episode's row and its events.
func (f *features) trace(ce store.ClosedEpisode) Trace {
	tr := f.Trace
	tr.Episode = readEpisode(ce, nil)
	tr.Actions, tr.Sensitivity = f.Trace.Actions, tr.Sensitivity.Max(f.Sensitivity)
	return tr
}

// The stored form of features: JSON with short keys, a tool result kept
// byte for byte (a JSON value re-encoded would be compacted, and an
// error's text is read from its bytes).
type (
	featuresJSON struct {
		Sensitivity memory.Sensitivity `json:"s"`
		Environment map[string]any     `json:"env"`
		Problems    []problemJSON      `json:"p"`
		Trace       traceJSON          `json:"t"`
	}
	problemJSON struct {
		Trigger   string       `json:"tr"`
		Signature string       `json:"sig"`
		Ident     string       `json:"id"`
		Success   bool         `json:"ok"`
		Actions   []actionJSON `json:"a"`
		Errors    []string     `json:"e"`
		// Reduced are the indexes among Actions of its reduced steps.
		Reduced []int           `json:"r"`
		Line    *signature.Line `json:"l"`
	}
	traceJSON struct {
		Intent     string        `json:"in"`
		Tagged     bool          `json:"tag"`
		FirstInput string        `json:"fi"`
		Latency    time.Duration `json:"lat"`
		Actions    []actionJSON  `json:"a"`
		// Steps are the indexes among Actions of its graph's steps.
		Steps     []int             `json:"st"`
		Ops       []string          `json:"ops"`
		Edges     []memory.PlanEdge `json:"ed"`
		InputLine *signature.Line   `json:"il"`
	}
	actionJSON struct {
		Tool    string         `json:"t"`
		Args    map[string]any `json:"a"`
		Wrapped bool           `json:"w"`
		// Result is the result's bytes as a string, or, when they are no
		// UTF-8 (which a JSON string cannot hold), ResultBytes.
		Result      string `json:"r"`
		ResultBytes []byte `json:"rb"`
		Failed      bool   `json:"f"`
	}
)

// encodeFeatures is the stored form of f.
func encodeFeatures(f features) ([]byte, error) {
	doc := featuresJSON{Sensitivity: f.Sensitivity, Environment: f.Environment}
	if f.Problems != nil {
		doc.Problems = make([]problemJSON, len(f.Problems))
	}
	for i, p := range f.Problems {
		doc.Problems[i] = problemJSON{Trigger: p.Trigger, Signature: p.Signature, Ident: p.Ident, Success: p.Success,
			Actions: actionsJSON(p.Actions), Errors: p.Errors, Reduced: p.reduced, Line: p.line}
	}
	tr := f.Trace
	doc.Trace = traceJSON{Intent: tr.Intent, Tagged: tr.Tagged, FirstInput: tr.FirstInput, Latency: tr.Latency,
		Actions: actionsJSON(tr.Actions), Steps: f.TraceSteps, Ops: tr.graph.Ops, Edges: tr.graph.Edges, InputLine: tr.inputLine}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode episode features: %w", err)
	}
	return b, nil
}

// decodeFeatures reads features from their stored form.
func decodeFeatures(raw []byte) (features, error) {
	var doc featuresJSON
	if err := json.Unmarshal(raw, &doc); err != nil {
		return features{}, fmt.Errorf("decode episode features: %w", err)
	}
	f := features{Sensitivity: doc.Sensitivity, Environment: doc.Environment, TraceSteps: doc.Trace.Steps}
	if doc.Problems != nil {
		f.Problems = make([]Episode, len(doc.Problems))
	}
	for i, p := range doc.Problems {
		acts := fromJSON(p.Actions)
		if !inRange(p.Reduced, len(acts)) {
			return features{}, errors.New("decode episode features: a step out of its problem's actions")
		}
		f.Problems[i] = Episode{Trigger: p.Trigger, Signature: p.Signature, Ident: p.Ident, Success: p.Success,
			Actions: acts, Errors: p.Errors, reduced: p.Reduced, reducedKnown: true, line: p.Line}
	}
	t := doc.Trace
	f.Trace = Trace{Intent: t.Intent, Tagged: t.Tagged, FirstInput: t.FirstInput, Latency: t.Latency, inputLine: t.InputLine}
	f.Trace.Actions = fromJSON(t.Actions)
	if !inRange(t.Steps, len(f.Trace.Actions)) {
		return features{}, errors.New("decode episode features: a step out of its trace's actions")
	}
	f.Trace.graph = &Graph{Steps: pick(f.Trace.Actions, t.Steps), Ops: t.Ops, Edges: t.Edges}
	return f, nil
}

// inRange reports whether every index of idx is below n.
func inRange(idx []int, n int) bool {
	return !slices.ContainsFunc(idx, func(i int) bool { return i < 0 || i >= n })
}

func actionsJSON(acts []Action) []actionJSON {
	if acts == nil {
		return nil
	}
	out := make([]actionJSON, len(acts))
	for i, a := range acts {
		out[i] = actionJSON{Tool: a.Tool, Args: a.Args, Wrapped: a.Wrapped, Failed: a.Failed}
		switch {
		case a.Result == nil:
		case utf8.Valid(a.Result) && len(a.Result) > 0:
			out[i].Result = string(a.Result)
		default:
			out[i].ResultBytes = a.Result
		}
	}
	return out
}

func fromJSON(acts []actionJSON) []Action {
	if acts == nil {
		return nil
	}
	out := make([]Action, len(acts))
	for i, a := range acts {
		out[i] = Action{Tool: a.Tool, Args: a.Args, Wrapped: a.Wrapped, Failed: a.Failed}
		switch {
		case a.Result != "":
			out[i].Result = json.RawMessage(a.Result)
		case a.ResultBytes != nil:
			out[i].Result = a.ResultBytes
		}
	}
	return out
}

// sealedPrefix is how a value [seal.Sealer.Seal] sealed begins.
var sealedPrefix = []byte(`{"sealed":`)

// isSealedDoc reports whether stored features are sealed: their plain
// form is an object whose first member is never "sealed".
func isSealedDoc(doc []byte) bool { return bytes.HasPrefix(doc, sealedPrefix) }

// featuresBatch is how many episodes' features one statement stores.
const featuresBatch = 500

// sealFeatures is the stored form of an episode's features: sealed when
// the episode is (substrate RFC §15.9) — as sensitive as the write path
// seals, or of an event stored sealed — since they say what its events
// said.
func (c *Consolidator) sealFeatures(ctx context.Context, tenant string, ce store.ClosedEpisode, f features, evs []store.EpisodeEvent) ([]byte, error) {
	doc, err := encodeFeatures(f)
	if err != nil {
		return nil, err
	}
	s := c.cfg.Writer.Sealer()
	if !s.Applies(ce.Sensitivity.Max(f.Sensitivity)) && !slices.ContainsFunc(evs, func(e store.EpisodeEvent) bool { return e.Sealed }) {
		return doc, nil
	}
	sealed, err := s.Seal(ctx, tenant, doc)
	if err != nil {
		return nil, fmt.Errorf("seal episode features: %w", err)
	}
	return sealed, nil
}

// openFeatures reads an episode's stored features, opening them when
// sealed.
func (c *Consolidator) openFeatures(ctx context.Context, tenant string, doc []byte) (features, error) {
	if isSealedDoc(doc) {
		var err error
		if doc, err = c.cfg.Writer.Sealer().Open(ctx, tenant, doc); err != nil {
			return features{}, fmt.Errorf("open episode features: %w", err)
		}
	}
	return decodeFeatures(doc)
}

// keepFeatures stores the features a pass learned, featuresBatch episodes
// a statement. They only spare later passes the work: a batch that fails
// is logged and left for the next pass to learn again.
func (c *Consolidator) keepFeatures(ctx context.Context, tenant string, rows []store.EpisodeFeatures) error {
	for len(rows) > 0 {
		batch := rows[:min(len(rows), featuresBatch)]
		rows = rows[len(batch):]
		if err := store.PutEpisodeFeatures(ctx, c.cfg.DB, tenant, c.learner, batch); err != nil {
			if ctx.Err() != nil {
				return err
			}
			c.cfg.Logger.Warn("keep episode features", slog.String("tenant", tenant), slog.Int("episodes", len(batch)), slog.Any("error", err))
		}
	}
	return nil
}
