package retrieve

import (
	"encoding/json"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// candidate is a record found for a layer, scored.
type candidate struct {
	rec   memory.Record
	score float64
	why   Why
	// conds are the conditions the record applies under (a fact's
	// validity, a procedure's matched trigger): what separates it from
	// other candidates.
	conds memory.Conditions
	// problem: a procedure whose trigger is the task's problem (a
	// signature match), ranked before those that only share words.
	problem bool
}

// recencyHalfLife is how fast a procedure's or plan's last reinforcement
// stops counting for selection (substrate RFC §15A.11).
const recencyHalfLife = 30 * 24 * time.Hour

// probationFactor scales the score of a procedure on probation
// ([memory.ProbationTag]): enough to rank it below a proved one of equal
// score, too little to hide one whose statistics are clearly better.
const probationFactor = 0.9

// rank scores a layer's hits and orders them best first. Relevance fuses
// the normalised BM25 score and the vector similarity by weight (plain rank
// fusion loses to BM25 alone when the vectors are weak); current salience,
// confidence and provenance quality then scale it (003 §12.4.6). Facts and
// procedures are scaled by their applicability to the task's conditions,
// and procedures and plans by their smoothed success rate and the recency
// of their reinforcement (§15A.11).
//
// A procedure is first matched by its trigger: one whose trigger has the
// signature of the task's signal is the task's problem, has relevance 1
// and ranks before every procedure that only shares words with the task;
// the lexical relevance of those is scaled by the share of their trigger's
// words the task names, so that a word shared by chance (a tool its recipe
// names) is not normalised into the layer's best match.
func (r *Retriever) rank(cfg Config, layer LayerName, t Task, hits []store.Hit, vectors bool, now time.Time) []candidate {
	var best float64
	for _, h := range hits {
		best = max(best, h.BM25)
	}
	var signals []taskSignal
	if layer == LayerCompetence {
		signals = signalsOf(t)
	}
	w := cfg.Weights
	out := make([]candidate, 0, len(hits))
	for _, h := range hits {
		c := candidate{rec: h.Record}
		why := &c.why
		why.BM25, why.Terms, why.Vector = h.BM25, h.Terms, h.Similarity
		if best > 0 {
			why.Lexical = h.BM25 / best
		}
		lexical := why.Lexical
		var comp memory.CompetencePayload
		if layer == LayerCompetence {
			_ = json.Unmarshal(h.Record.Payload, &comp)
			c.conds, c.problem = matchTrigger(why, comp, t, signals, &r.signatures)
			lexical *= *why.SignalCoverage
		}
		switch {
		case layer == LayerWorking:
			why.Relevance = 1 // the thread's own
		case c.problem:
			why.Relevance = 1 // the task's own problem
		case vectors:
			var sim float64
			if h.Similarity != nil {
				sim = clamp01(*h.Similarity)
			}
			why.Relevance = (w.Lexical*lexical + w.Vector*sim) / (w.Lexical + w.Vector)
		default:
			why.Relevance = lexical
		}
		why.Salience = clamp01(decay.Current(h.Record, now))
		why.Confidence = h.Record.Confidence
		// 003 §12.4.6: authority(m), the best of its evidence by the
		// write path's own table.
		why.Provenance = clamp01(r.authority.Best(h.Record.Provenance.Sources))
		score := why.Relevance * factor(w.Salience, why.Salience) * factor(w.Confidence, why.Confidence) * factor(w.Provenance, why.Provenance)

		switch layer {
		case LayerSemantic:
			var p memory.SemanticPayload
			_ = json.Unmarshal(h.Record.Payload, &p)
			c.conds = p.Validity.Conditions
			score *= applicability(why, p.Validity.Conditions, t.Conditions)
		case LayerCompetence:
			score *= applicability(why, c.conds, t.Conditions)
			var s, f int
			if comp.Performance != nil {
				s, f = comp.Performance.Successes, comp.Performance.Failures
			}
			score *= selection(why, s, f, h.Record, now)
			if slices.Contains(h.Record.Tags, memory.ProbationTag) {
				// Not proved in use yet: below a proved procedure of about
				// the same score (substrate RFC §8).
				score *= probationFactor
			}
		case LayerPlan:
			var p memory.PlanGraphPayload
			_ = json.Unmarshal(h.Record.Payload, &p)
			// A plan is selected by its constraints against the task's
			// conditions (substrate RFC §9, §15A.11): one for other
			// conditions is not this task's, and one whose conditions
			// the task does not name applies less surely.
			c.conds = p.Conditions()
			if c.conds.Disjoint(t.Conditions) {
				continue
			}
			score *= applicability(why, c.conds, t.Conditions)
			if t.Intent != "" && strings.EqualFold(p.Intent, t.Intent) {
				why.IntentMatch = true
				why.Relevance = (1 + why.Relevance) / 2
				score *= 2
			}
			score *= selection(why, count(p.Metrics["successes"]), count(p.Metrics["failures"]), h.Record, now)
		}
		c.score = score
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b candidate) int {
		switch {
		case a.problem != b.problem && a.problem:
			return -1
		case a.problem != b.problem:
			return 1
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return strings.Compare(a.rec.ID.String(), b.rec.ID.String())
	})
	return out
}

// factor scales a score by a signal x in [0, 1] with weight w: 1 when w is
// 0, x when w is 1.
func factor(w, x float64) float64 { return 1 - w + w*x }

func clamp01(x float64) float64 { return math.Max(0, math.Min(1, x)) }

// applicability records which of a record's conditions the task satisfies
// and which it does not name, and returns the score factor: 1 when it
// satisfies all (or there are none), ½ when it names none of them.
func applicability(why *Why, conds, ctx memory.Conditions) float64 {
	if len(conds) == 0 {
		one := 1.0
		why.Applicability = &one
		return 1
	}
	for _, k := range slices.Sorted(maps.Keys(conds)) {
		if v, ok := ctx[k]; ok && reflect.DeepEqual(v, conds[k]) {
			why.MatchedConditions = append(why.MatchedConditions, k)
		} else {
			why.UnknownConditions = append(why.UnknownConditions, k)
		}
	}
	a := float64(len(why.MatchedConditions)) / float64(len(conds))
	why.Applicability = &a
	return 0.5 + 0.5*a
}

// count reads a statistic of a decoded payload (a JSON number).
func count(v any) int {
	n, _ := v.(float64)
	return max(int(n), 0)
}

// selection records a procedure's or plan's smoothed success rate and
// recency and returns the score factor. The rate is [memory.SuccessRate].
func selection(why *Why, successes, failures int, rec memory.Record, now time.Time) float64 {
	rate := memory.SuccessRate(successes, failures)
	age := now.Sub(rec.Lifecycle.LastReinforcedAt)
	recency := math.Exp2(-math.Max(0, age.Seconds()) / recencyHalfLife.Seconds())
	why.SuccessRate, why.Recency = &rate, &recency
	return (0.25 + 0.75*rate) * (0.8 + 0.2*recency)
}

// bestTrigger is the trigger of a procedure that best matches the task:
// among those whose conditions the task does not contradict (the store
// returned the procedure because one exists; the SQL
// engram_conditions_hold is [memory.Conditions.Disjoint] negated), one
// whose signature is a task signal's (that signal returned too), else the
// one whose signal shares most words with the task's signals and text,
// then the most specific. Condition values on both sides are decoded JSON,
// so they compare with reflect.DeepEqual, as Disjoint does. It returns the
// trigger's signature too, computed once: normalising a signal is most of
// ranking's own time.
func bestTrigger(ts []memory.Trigger, t Task, signals []taskSignal, sigs *signatures) (best memory.Trigger, bestSig, bestSignal string) {
	want := taskWords(t)
	bestScore := -1.0
	for _, tr := range ts {
		if tr.Conditions.Disjoint(t.Conditions) {
			continue
		}
		sig := sigs.of(tr.Signal)
		signal, problem := sameProblem(sig, signals)
		if tr.Template != "" {
			signal, problem = templateMatch(tr.Template, signals)
		}
		var shared int
		for w := range words(tr.Signal) {
			if want[w] {
				shared++
			}
		}
		score := float64(shared) + 0.01*float64(len(tr.Conditions))
		if problem {
			score += 1e6
		}
		if score > bestScore {
			best, bestSig, bestSignal, bestScore = tr, sig, signal, score
		}
	}
	return best, bestSig, bestSignal
}

func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		out[w] = true
	}
	return out
}

// disambiguate says whether the best of ranked candidates fails to beat the
// next by margin (substrate RFC §15A.11), and if so which condition keys
// would separate the contenders: keys some of them name with different
// values, or that some name and others do not, and that the task has not
// given. A procedure for the task's problem has no contender among those
// that only share words with it.
func disambiguate(ranked []candidate, margin float64, ctx map[string]any) (bool, []string) {
	if len(ranked) < 2 || ranked[0].score <= 0 {
		return false, nil
	}
	contenders := []candidate{ranked[0]}
	for _, c := range ranked[1:] {
		if c.problem == ranked[0].problem && c.score >= ranked[0].score*(1-margin) {
			contenders = append(contenders, c)
		}
	}
	if len(contenders) < 2 {
		return false, nil
	}
	keys := map[string]bool{}
	for _, c := range contenders {
		for k := range c.conds {
			keys[k] = true
		}
	}
	var sep []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if _, given := ctx[k]; given {
			continue
		}
		var vals []any
		missing := false
		for _, c := range contenders {
			v, ok := c.conds[k]
			if !ok {
				missing = true
				continue
			}
			vals = append(vals, v)
		}
		differ := missing
		for _, v := range vals[1:] {
			if !reflect.DeepEqual(v, vals[0]) {
				differ = true
			}
		}
		if differ {
			sep = append(sep, k)
		}
	}
	return true, sep
}
