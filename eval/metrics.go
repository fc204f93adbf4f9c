package eval

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// The agents the comparisons name, as their reports call them.
var (
	engramAgent   = Engram{}.Name()
	rawAgent      = (&Replay{}).Name()
	noMemoryAgent = NoMemory{}.Name()
)

// Shares of later attempts that must succeed for a problem to count as
// solved (issue 12's targets).
const (
	// ReliableShare: a problem is solved reliably once its later attempts
	// succeed at least this often.
	ReliableShare = 0.95
	// RecoveredShare: a drifted problem has adapted once its later
	// attempts succeed at least this often.
	RecoveredShare = 0.90
)

// Counts that did not happen or could not be measured. Figures that count
// episodes are float64 so that both fit beside the numbers, sort, and take
// a median.
var (
	// Never is a count whose event did not happen: no number of
	// successes made a problem reliable.
	Never = math.Inf(1)
	// NotMeasured is a figure with nothing to measure (no attempt, no
	// drift, no deployment): NaN, so that no comparison with it holds.
	NotMeasured = math.NaN()
)

// Metrics are the figures of issue 12 over the reports of one run: each
// agent's, the comparisons between them, and the targets.
type Metrics struct {
	// Agents are each report's figures, in the order of the reports.
	Agents []AgentMetrics
	// Impact is the memory correctness impact measured by ablation
	// (write-path RFC §12.12.5): the engram agent's success rate minus
	// the agent without memory's, over acquisition and deployment;
	// DeploymentImpact is the same over deployment only. NotMeasured
	// when either report is missing.
	Impact, DeploymentImpact float64
	// Margin is the engram agent's success rate in deployment minus the
	// raw-episode agent's; StepsMargin the same for steps per success
	// (negative: the engram agent needs fewer).
	Margin, StepsMargin float64
	// Targets are issue 12's targets, measured.
	Targets []Target
}

// AgentMetrics are one agent's figures.
type AgentMetrics struct {
	Agent string
	// BeforeDrift and AfterDrift split acquisition at Config.DriftAt
	// (AfterDrift is empty without drift); Deployment is the frozen
	// phase.
	BeforeDrift, AfterDrift, Deployment Tally
	// Problems are the figures of each problem met, by problem id.
	Problems []ProblemMetrics
	// UntilReliableMax and UntilReliableMedian are the largest and the
	// median ProblemMetrics.UntilReliable over the problems measured;
	// Never counts as more than any number.
	UntilReliableMax, UntilReliableMedian float64
	// LagMax is the largest ProblemMetrics.Lag (NotMeasured when no
	// problem drifted during acquisition); RelearnMax and RelearnMedian
	// the largest and the median ProblemMetrics.Relearn.
	LagMax, RelearnMax, RelearnMedian float64
	// Retrieval is how the agent used what it retrieved.
	Retrieval Retrieval
	// Records is Report.Records: what the agent's memory learned.
	Records map[string]int
}

// Overall is the agent's tally over acquisition and deployment.
func (a AgentMetrics) Overall() Tally {
	return Tally{
		Episodes:  a.BeforeDrift.Episodes + a.AfterDrift.Episodes + a.Deployment.Episodes,
		Successes: a.BeforeDrift.Successes + a.AfterDrift.Successes + a.Deployment.Successes,
		Steps:     a.BeforeDrift.Steps + a.AfterDrift.Steps + a.Deployment.Steps,
	}
}

// problem is the agent's figures for a problem; NotMeasured ones when
// the agent did not meet it.
func (a AgentMetrics) problem(id int) ProblemMetrics {
	for _, p := range a.Problems {
		if p.Problem == id {
			return p
		}
	}
	return ProblemMetrics{Problem: id, UntilReliable: NotMeasured, Lag: NotMeasured, Relearn: NotMeasured}
}

// Tally counts the episodes of one part of a run.
type Tally struct {
	Episodes, Successes int
	// Steps is the number of actions of the successful episodes.
	Steps int
}

// SuccessRate is the share of successful episodes; NotMeasured without
// episodes, since nothing run is not the same as everything failed.
func (t Tally) SuccessRate() float64 {
	if t.Episodes == 0 {
		return NotMeasured
	}
	return float64(t.Successes) / float64(t.Episodes)
}

// StepsPerSuccess is the mean number of actions of a successful episode;
// NotMeasured without a success.
func (t Tally) StepsPerSuccess() float64 {
	if t.Successes == 0 {
		return NotMeasured
	}
	return float64(t.Steps) / float64(t.Successes)
}

func (t *Tally) add(o Outcome) {
	t.Episodes++
	if o.Success {
		t.Successes++
		t.Steps += o.Steps
	}
}

// ProblemMetrics are how one agent fared on one problem, over acquisition.
type ProblemMetrics struct {
	Problem int
	// Drifted: the problem's fix changed at some point of the run.
	Drifted bool
	// Before is the number of acquisition attempts before the problem's
	// drift (all of them if it never drifted); After the number after.
	Before, After int
	// UntilReliable is the number of successful attempts after which the
	// problem's later attempts before drift succeed at least
	// ReliableShare of the time: Never when no number does, NotMeasured
	// without attempts.
	UntilReliable float64
	// Lag is the number of attempts after drift before the problem's
	// later attempts succeed at least RecoveredShare of the time: Never
	// when they do not, NotMeasured when the problem did not drift
	// during acquisition.
	Lag float64
	// Relearn is the number of attempts after drift before the record
	// the agent follows works as it stands (the attempt was Useful) in at
	// least RecoveredShare of its later attempts: how long memory takes
	// to notice the drift and offer a fix that holds. Success alone can
	// come back sooner, by exploring past a stale step.
	Relearn float64
}

// Retrieval counts the episodes in which the agent retrieved from memory,
// followed a record it retrieved, and found that record worked (substrate
// RFC §14, retrieval usefulness).
type Retrieval struct {
	Retrieved, Followed, Useful int
}

// UsefulShare is the share of retrievals whose followed record worked;
// NotMeasured without retrievals.
func (r Retrieval) UsefulShare() float64 { return ratio(r.Useful, r.Retrieved) }

// FollowedShare is the share of retrievals the agent followed.
func (r Retrieval) FollowedShare() float64 { return ratio(r.Followed, r.Retrieved) }

func ratio(n, of int) float64 {
	if of == 0 {
		return NotMeasured
	}
	return float64(n) / float64(of)
}

// Target is one of issue 12's targets, measured: Value compared by Op
// ("≤", "≥" or "<") with Bound.
type Target struct {
	Name  string
	Value float64
	Op    string
	Bound float64
	// Met: the value meets the bound. A value NotMeasured meets nothing.
	Met bool
}

func newTarget(name string, value float64, op string, bound float64) Target {
	t := Target{Name: name, Value: value, Op: op, Bound: bound}
	switch op {
	case "≤":
		t.Met = value <= bound
	case "≥":
		t.Met = value >= bound
	case "<":
		t.Met = value < bound
	}
	return t
}

// Measure computes the figures of the reports of one run. The comparisons
// need the engram, raw-episode and no-memory agents' reports, found by
// agent name; those missing leave their figures NotMeasured.
func Measure(reports ...Report) Metrics {
	var m Metrics
	for _, r := range reports {
		m.Agents = append(m.Agents, measureAgent(r))
	}
	engram, raw, none := m.agent(engramAgent), m.agent(rawAgent), m.agent(noMemoryAgent)

	m.Impact, m.DeploymentImpact, m.Margin, m.StepsMargin = NotMeasured, NotMeasured, NotMeasured, NotMeasured
	if engram != nil && none != nil {
		m.Impact = engram.Overall().SuccessRate() - none.Overall().SuccessRate()
		m.DeploymentImpact = engram.Deployment.SuccessRate() - none.Deployment.SuccessRate()
	}
	if engram != nil && raw != nil {
		m.Margin = engram.Deployment.SuccessRate() - raw.Deployment.SuccessRate()
		m.StepsMargin = engram.Deployment.StepsPerSuccess() - raw.Deployment.StepsPerSuccess()
	}
	reliable, lag := NotMeasured, NotMeasured
	if engram != nil {
		reliable, lag = engram.UntilReliableMax, engram.LagMax
	}
	m.Targets = []Target{
		newTarget("successful episodes until a problem is solved reliably (engram, max over problems)", reliable, "≤", 3),
		newTarget(fmt.Sprintf("attempts after drift until success is back to %.0f%% (engram, max over drifted problems)", RecoveredShare*100),
			lag, "≤", 5),
		newTarget("memory correctness impact (engram − no memory, success rate)", m.Impact, "≥", 0.5),
		newTarget("margin in deployment (engram − raw episodes, success rate)", m.Margin, "≥", 0.15),
		newTarget("steps per success in deployment (engram − raw episodes)", m.StepsMargin, "<", 0),
	}
	return m
}

// agent is the figures of the named agent; nil without its report.
func (m Metrics) agent(name string) *AgentMetrics {
	for i := range m.Agents {
		if m.Agents[i].Agent == name {
			return &m.Agents[i]
		}
	}
	return nil
}

// measureAgent computes one report's figures.
func measureAgent(r Report) AgentMetrics {
	a := AgentMetrics{Agent: r.Agent, Records: r.Records}
	for _, o := range r.Outcomes {
		switch {
		case o.Phase == Deployment:
			a.Deployment.add(o)
		case r.Config.DriftAt > 0 && o.Episode >= r.Config.DriftAt:
			a.AfterDrift.add(o)
		default:
			a.BeforeDrift.add(o)
		}
		if o.Retrieved {
			a.Retrieval.Retrieved++
		}
		if o.Followed {
			a.Retrieval.Followed++
		}
		if o.Useful {
			a.Retrieval.Useful++
		}
	}
	// A session meets several problems: each error is an attempt of its
	// own.
	a.Problems = measureProblems(r.Outcomes)
	if len(r.Errors) > 0 {
		a.Problems = measureProblems(r.Errors)
	}
	var reliable, lags, relearn []float64
	for _, p := range a.Problems {
		reliable = append(reliable, p.UntilReliable)
		lags = append(lags, p.Lag)
		relearn = append(relearn, p.Relearn)
	}
	a.UntilReliableMax, a.UntilReliableMedian = maxOf(reliable), median(reliable)
	a.LagMax = maxOf(lags)
	a.RelearnMax, a.RelearnMedian = maxOf(relearn), median(relearn)
	return a
}

// measureProblems computes each problem's figures from its acquisition
// attempts, in episode order.
func measureProblems(outcomes []Outcome) []ProblemMetrics {
	type attempts struct {
		drifted       bool
		before, after []bool
		afterUseful   []bool
	}
	byProblem := map[int]*attempts{}
	for _, o := range outcomes {
		at := byProblem[o.Problem]
		if at == nil {
			at = &attempts{}
			byProblem[o.Problem] = at
		}
		at.drifted = at.drifted || o.Drifted
		switch {
		case o.Phase == Deployment:
			// Held-out instances: what acquisition taught, not how fast.
		case o.Drifted:
			at.after = append(at.after, o.Success)
			at.afterUseful = append(at.afterUseful, o.Useful)
		default:
			at.before = append(at.before, o.Success)
		}
	}
	var out []ProblemMetrics
	for _, id := range slices.Sorted(maps.Keys(byProblem)) {
		at := byProblem[id]
		out = append(out, ProblemMetrics{Problem: id, Drifted: at.drifted, Before: len(at.before), After: len(at.after),
			UntilReliable: successesUntilReliable(at.before, ReliableShare), Lag: attemptsUntilReliable(at.after, RecoveredShare),
			Relearn: attemptsUntilReliable(at.afterUseful, RecoveredShare)})
	}
	return out
}

// successesUntilReliable is the least number of successes in attempts
// after which the later attempts succeed at least share of the time. At
// least one later attempt must show it: a problem whose only success is
// its last attempt is Never reliable, not reliable by default.
func successesUntilReliable(attempts []bool, share float64) float64 {
	if len(attempts) == 0 {
		return NotMeasured
	}
	successes := 0
	for cut := 0; cut < len(attempts); cut++ {
		// cut is 0 or just after a success: count the later attempts.
		if cut == 0 || attempts[cut-1] {
			if reliableFrom(attempts, cut, share) {
				return float64(successes)
			}
		}
		if attempts[cut] {
			successes++
		}
	}
	return Never
}

// attemptsUntilReliable is the least number of attempts after which the
// later attempts (at least one) succeed at least share of the time.
func attemptsUntilReliable(attempts []bool, share float64) float64 {
	if len(attempts) == 0 {
		return NotMeasured
	}
	for cut := range attempts {
		if reliableFrom(attempts, cut, share) {
			return float64(cut)
		}
	}
	return Never
}

// reliableFrom reports whether attempts[cut:], not empty, succeed at
// least share of the time.
func reliableFrom(attempts []bool, cut int, share float64) bool {
	later := attempts[cut:]
	ok := 0
	for _, s := range later {
		if s {
			ok++
		}
	}
	// A ratio, not ok >= share*n: the ratio of 19 in 20 is the double
	// nearest 0.95, as the constant is, where the product may round below.
	return len(later) > 0 && float64(ok)/float64(len(later)) >= share
}

// maxOf is the largest of the values that are measured (Never above any
// number); NotMeasured when none is.
func maxOf(values []float64) float64 {
	out := NotMeasured
	for _, v := range values {
		if !math.IsNaN(v) && (math.IsNaN(out) || v > out) {
			out = v
		}
	}
	return out
}

// median is the median of the values that are measured: Never when a
// middle one is Never; NotMeasured when none is measured.
func median(values []float64) float64 {
	var vs []float64
	for _, v := range values {
		if !math.IsNaN(v) {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return NotMeasured
	}
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}
