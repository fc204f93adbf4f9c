package consolidate

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
)

// Defaults of [Lifecycle].
const (
	DefaultProbationUses = 2
	DefaultRetractAfter  = 3
	DefaultRetractRate   = 0.3
	DefaultRateWindow    = 10
	// ProbationTag marks a procedure that has not proved itself in use yet.
	ProbationTag = memory.ProbationTag
)

// Outcome sources: a later episode counted as a use of a procedure is
// cited in its provenance as an outcome, so that it counts once.
const (
	useSuccess = "outcome://success/"
	useFailure = "outcome://failure/"
)

// Lifecycle configures how a learned procedure proves itself and when it
// is given up (substrate RFC §8: a new procedure is added beside the old
// one and the statistics decide; §15A.9). The zero value of each field is
// its documented default.
type Lifecycle struct {
	// ProbationUses is how many successful uses after it was learned take
	// a procedure off probation; [DefaultProbationUses] when zero.
	ProbationUses int `yaml:"probation_uses"`
	// RetractAfter is how many failures in a row since its last success
	// retract a procedure; [DefaultRetractAfter] when zero.
	RetractAfter int `yaml:"retract_after"`
	// RetractRate retracts a procedure whose smoothed success rate,
	// (s+1)/(s+f+2) over its last RateWindow uses by episode, falls under
	// it once the window is full; [DefaultRetractRate] when zero.
	RetractRate float64 `yaml:"retract_rate"`
	// RateWindow is how many of its latest uses RetractRate looks at;
	// [DefaultRateWindow] when zero.
	RateWindow int `yaml:"rate_window"`
}

func (l Lifecycle) withDefaults() Lifecycle {
	l.ProbationUses = cmp.Or(l.ProbationUses, DefaultProbationUses)
	l.RetractAfter = cmp.Or(l.RetractAfter, DefaultRetractAfter)
	l.RetractRate = cmp.Or(l.RetractRate, DefaultRetractRate)
	l.RateWindow = cmp.Or(l.RateWindow, DefaultRateWindow)
	return l
}

// verdict is what a pass decided about a procedure's live record.
type verdict struct {
	// retract, when set, is the rationale of its retraction.
	retract  string
	evidence []memory.Source
}

// learned prepares the first version of a procedure: the failed episodes
// that already followed it are counted and cited, and it starts on
// probation.
func (c *Consolidator) learned(p Procedure, rec *memory.Record) {
	for _, ep := range p.Followed {
		rec.Provenance.Sources = append(rec.Provenance.Sources, use(useFailure, ep))
	}
	rec.Tags = append(rec.Tags, ProbationTag)
}

// follow turns rec, the procedure as this pass learned it, into the next
// version of old: old's statistics (which feedback counts into too) with
// each episode that followed the recipe since counted once — a success or
// a failure by its outcome — its provenance citing every counted episode,
// on probation until it has proved itself. It says whether the procedure
// has drifted: a failure counted now that makes RetractAfter in a row since
// its last success, or a smoothed success rate under RetractRate.
func (c *Consolidator) follow(old memory.Record, p Procedure, rec *memory.Record) (verdict, error) {
	var prev memory.CompetencePayload
	if err := json.Unmarshal(old.Payload, &prev); err != nil {
		return verdict{}, fmt.Errorf("decode procedure %s: %w", old.ID, err)
	}
	perf := memory.Performance{}
	if prev.Performance != nil {
		perf = *prev.Performance
	}
	counted := map[uuid.UUID]bool{}
	learnedWith := 0
	for _, s := range old.Provenance.Sources {
		if id, ok := episodeOf(s.Ref); ok {
			counted[id] = true
		}
		if s.Kind == revise.SourceRecord {
			learnedWith++
		}
	}
	sources := slices.Clone(old.Provenance.Sources)
	uses := sortedEpisodes(append(slices.Clone(p.Support), p.Followed...))
	var fresh []memory.Source
	failedNow := false
	for _, ep := range uses {
		if counted[ep.ID] {
			continue
		}
		counted[ep.ID] = true // one use an episode, however many problems
		perf = perf.Use(ep.Success, ep.ClosedAt)
		if ep.Success {
			fresh = append(fresh, use(useSuccess, ep))
			continue
		}
		fresh = append(fresh, use(useFailure, ep))
		failedNow = true
	}
	sources = append(sources, fresh...)

	var next memory.CompetencePayload
	if err := json.Unmarshal(rec.Payload, &next); err != nil {
		return verdict{}, fmt.Errorf("decode procedure: %w", err)
	}
	next.Performance = &perf
	payload, err := json.Marshal(next)
	if err != nil {
		return verdict{}, fmt.Errorf("encode procedure: %w", err)
	}
	rec.Payload = payload
	rec.Confidence = Confidence(perf.Successes, perf.Failures)
	rec.Provenance.Sources = sources
	rec.Tags = slices.DeleteFunc(rec.Tags, func(t string) bool { return t == ProbationTag })
	if Probationary(perf.Successes-learnedWith, c.cfg.Lifecycle.ProbationUses) {
		rec.Tags = append(rec.Tags, ProbationTag)
	}
	if !failedNow {
		return verdict{}, nil
	}
	return verdict{retract: c.cfg.Lifecycle.Rule().Verdict(perf), evidence: fresh}, nil
}

// Probationary reports whether a procedure with so many successful uses
// since it was learned is still on probation.
func Probationary(usesSinceLearned, probationUses int) bool {
	return usesSinceLearned < probationUses
}

// Rule is the lifecycle's retraction rule, the one feedback applies too.
func (l Lifecycle) Rule() memory.RetractionRule {
	l = l.withDefaults()
	return memory.RetractionRule{After: l.RetractAfter, Rate: l.RetractRate, Window: l.RateWindow}
}

// use is the provenance source that counts an episode as a use.
func use(prefix string, ep Episode) memory.Source {
	at := ep.ClosedAt
	return memory.Source{Kind: "outcome", Ref: prefix + ep.ID.String(), Timestamp: &at}
}

// episodeOf is the episode a source of a procedure cites.
func episodeOf(ref string) (uuid.UUID, bool) {
	for _, p := range []string{"record://", useSuccess, useFailure} {
		if rest, ok := strings.CutPrefix(ref, p); ok {
			id, err := uuid.Parse(rest)
			return id, err == nil
		}
	}
	return uuid.Nil, false
}
