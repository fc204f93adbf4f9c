package memory

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// MaxRecent bounds [Performance.Recent].
const MaxRecent = 32

// Use is p with one more use counted: a success or a failure at at, its
// counts, its last times and its recent uses.
func (p Performance) Use(success bool, at time.Time) Performance {
	mark := "f"
	if success {
		p.Successes++
		if p.LastSuccessAt == nil || at.After(*p.LastSuccessAt) {
			p.LastSuccessAt = &at
		}
		mark = "s"
	} else {
		p.Failures++
		if p.LastFailureAt == nil || at.After(*p.LastFailureAt) {
			p.LastFailureAt = &at
		}
	}
	p.Recent += mark
	if n := len(p.Recent); n > MaxRecent {
		p.Recent = p.Recent[n-MaxRecent:]
	}
	return p
}

// SuccessRate is engram's one success rate of a procedure or plan, as
// retrieval ranks by it and every surface prints it (engram procedures,
// SKILL.md, the console, GET /v1/stats/health): Laplace-smoothed,
// (successes+1)/(uses+2), so that a few uses never read as certain (3 of 3
// is 0.80) and one lucky success (⅔) does not beat twenty (21/22).
func SuccessRate[N int | int64](successes, failures N) float64 {
	return float64(successes+1) / float64(successes+failures+2)
}

// MaxLearnedConfidence caps the confidence evidence alone gives a learned
// record.
const MaxLearnedConfidence = 0.95

// LearnedConfidence is what a procedure's uses say of it: s/(s+f+1) for s
// successes and f failures, capped at [MaxLearnedConfidence] — 1 − 1/(s+1)
// while it has not failed, growing with evidence, and falling with every
// failure however it was reported (substrate RFC §8, §15A.9: the
// statistics decide).
func LearnedConfidence(successes, failures int) float64 {
	s, f := float64(max(successes, 0)), float64(max(failures, 0))
	return math.Round(min(MaxLearnedConfidence, s/(s+f+1))*1000) / 1000
}

// RetractionRule is when a learned procedure is given up (substrate RFC §8:
// the statistics decide; §15A.9): After failures in a row since its last
// success, or a smoothed success rate (s+1)/(n+2) under Rate over its last
// Window uses once it has that many. The same rule judges every use,
// whether consolidation observed it in an episode or an agent reported it
// by feedback.
type RetractionRule struct {
	After  int
	Rate   float64
	Window int
}

// DefaultRetraction is the rule a new install runs: three failures in a
// row, or a smoothed success rate under 0.3 over the last ten uses.
var DefaultRetraction = RetractionRule{After: 3, Rate: 0.3, Window: 10}

// Verdict is the rationale for retracting a procedure with performance p,
// or "" when its uses do not call for it.
func (r RetractionRule) Verdict(p Performance) string {
	streak := len(p.Recent) - len(strings.TrimRight(p.Recent, "f"))
	if r.After > 0 && streak >= r.After {
		since := "since it was learned"
		if p.LastSuccessAt != nil {
			since = "since its last success on " + p.LastSuccessAt.UTC().Format(time.RFC3339)
		}
		return fmt.Sprintf("%d failures in a row %s (%d successes, %d failures in all): retracted after drift",
			streak, since, p.Successes, p.Failures)
	}
	if r.Window <= 0 || len(p.Recent) < r.Window {
		return ""
	}
	last := p.Recent[len(p.Recent)-r.Window:]
	s := strings.Count(last, "s")
	rate := SuccessRate(s, len(last)-s)
	if rate < r.Rate {
		return fmt.Sprintf("smoothed success rate %.2f over its last %d uses is under %.2f: retracted after drift",
			rate, len(last), r.Rate)
	}
	return ""
}
