package eval

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Spread is a figure over the seeds of a family: its mean, least and
// largest values, and the number of seeds that measured it.
type Spread struct {
	Mean, Min, Max float64
	N              int
}

func spreadOf(values []float64) Spread {
	s := Spread{Mean: NotMeasured, Min: NotMeasured, Max: NotMeasured}
	sum := 0.0
	for _, v := range values {
		if math.IsNaN(v) {
			continue
		}
		if s.N == 0 || v < s.Min {
			s.Min = v
		}
		if s.N == 0 || v > s.Max {
			s.Max = v
		}
		sum += v
		s.N++
	}
	if s.N > 0 {
		s.Mean = sum / float64(s.N)
	}
	return s
}

// String is the mean and, over several seeds, the range: "0.62 (0.55–0.70)".
func (s Spread) String() string {
	if s.N == 0 {
		return "n/a"
	}
	if s.N == 1 || s.Min == s.Max {
		return formatRate(s.Mean)
	}
	return fmt.Sprintf("%s (%s–%s)", formatRate(s.Mean), formatRate(s.Min), formatRate(s.Max))
}

// FamilySummary is a family's figures over its seeds.
type FamilySummary struct {
	Family string   `json:"family"`
	Title  string   `json:"title"`
	Seeds  []uint64 `json:"seeds"`
	// Deployment is each agent's success rate in deployment, by agent.
	Deployment map[string]Spread `json:"deployment"`
	// Impact is engram − no memory in deployment; Margin engram − raw
	// episodes in deployment.
	Impact, Margin Spread
	// ReliableAfter is the median over seeds of engram's median
	// successes until a problem is solved reliably.
	ReliableAfter float64 `json:"reliable_after"`
	// FailedPasses is the number of consolidation passes that failed, over
	// all seeds.
	FailedPasses int `json:"failed_passes"`
	// Replay is the offline replay metric, summed over seeds (nil where
	// not measured).
	Replay *ReplayMetric `json:"replay,omitempty"`
}

// Targets of the family table (issue 26).
const (
	TargetImpactMean      = 0.30
	TargetImpactPerFamily = 0.15
	TargetMargin          = 0.15
	TargetHitOverTable    = 0.10
)

// Summarize is each family's figures over its runs, in the order the
// families first appear.
func Summarize(runs []FamilyRun) []FamilySummary {
	var out []FamilySummary
	var order []string
	by := map[string][]FamilyRun{}
	for _, r := range runs {
		if by[r.Family] == nil {
			order = append(order, r.Family)
		}
		by[r.Family] = append(by[r.Family], r)
	}
	for _, name := range order {
		f, _ := FamilyByName(name)
		s := FamilySummary{Family: name, Title: f.Title, Deployment: map[string]Spread{}}
		perAgent := map[string][]float64{}
		var impact, margin, reliable []float64
		for _, r := range by[name] {
			s.Seeds = append(s.Seeds, r.Seed)
			m := Measure(r.Reports...)
			for _, a := range m.Agents {
				perAgent[a.Agent] = append(perAgent[a.Agent], a.Deployment.SuccessRate())
				if a.Agent == engramAgent {
					reliable = append(reliable, a.UntilReliableMedian)
				}
			}
			impact, margin = append(impact, m.DeploymentImpact), append(margin, m.Margin)
			for _, rep := range r.Reports {
				s.FailedPasses += rep.FailedPasses
			}
			if r.Replay != nil {
				if s.Replay == nil {
					s.Replay = &ReplayMetric{}
				}
				s.Replay.Errors += r.Replay.Errors
				for _, p := range [][2]*Hits{{&s.Replay.Engram, &r.Replay.Engram}, {&s.Replay.Raw, &r.Replay.Raw}, {&s.Replay.Table, &r.Replay.Table}} {
					p[0].At1 += p[1].At1
					p[0].At3 += p[1].At3
				}
			}
		}
		for a, vs := range perAgent {
			s.Deployment[a] = spreadOf(vs)
		}
		s.Impact, s.Margin, s.ReliableAfter = spreadOf(impact), spreadOf(margin), median(reliable)
		out = append(out, s)
	}
	return out
}

// FamilyTargets are issue 26's targets over the families' summaries.
func FamilyTargets(sums []FamilySummary) []Target {
	var impacts []float64
	failed := 0
	var out []Target
	for _, s := range sums {
		if s.Impact.N > 0 {
			// Weighted by seeds: the mean over families and seeds.
			for range s.Impact.N {
				impacts = append(impacts, s.Impact.Mean)
			}
		}
		failed += s.FailedPasses
	}
	out = append(out, newTarget("memory correctness impact in deployment (engram − no memory), over families and seeds",
		spreadOf(impacts).Mean, "≥", TargetImpactMean))
	for _, s := range sums {
		out = append(out, newTarget(fmt.Sprintf("family (%s): impact in deployment", s.Family), s.Impact.Mean, "≥", TargetImpactPerFamily))
		out = append(out, newTarget(fmt.Sprintf("family (%s): margin over raw episodes in deployment", s.Family), s.Margin.Mean, "≥", TargetMargin))
		if s.Replay != nil {
			e, _ := s.Replay.Engram.Rates(s.Replay.Errors)
			t, _ := s.Replay.Table.Rates(s.Replay.Errors)
			out = append(out, newTarget(fmt.Sprintf("family (%s): replay hit@1, engram − frequency table", s.Family), e-t, "≥", TargetHitOverTable))
		}
	}
	out = append(out, newTarget("consolidation passes that failed", float64(failed), "≤", 0))
	return out
}

// WriteFamilies writes the family table, the replay table and the targets
// as Markdown.
func WriteFamilies(w io.Writer, sums []FamilySummary, command string) error {
	var b strings.Builder
	b.WriteString("# engram evaluation: does it learn from experience not shaped for it?\n\n")
	b.WriteString("Each family of worlds differs in surface form; each runs the same protocol — acquisition with " +
		"consolidation, memory frozen, deployment on held-out instances and environments — over several seeds. " +
		"Figures are the mean over seeds and, in brackets, the least and largest.\n\n")
	if command != "" {
		fmt.Fprintf(&b, "```sh\n%s\n```\n\n", command)
	}
	b.WriteString("## Families\n\n")
	for _, s := range sums {
		fmt.Fprintf(&b, "- **(%s)** %s — seeds %v\n", s.Family, s.Title, s.Seeds)
	}
	b.WriteString("\n## Success in deployment\n\n")
	b.WriteString(FamilyTable(sums))
	if replay := ReplayTable(sums); replay != "" {
		b.WriteString("\n## Offline replay metric\n\nAn exploring agent's acquisition sessions streamed into an engramd that " +
			"consolidates; its held-out sessions not. After each held-out error it resolved: is its next successful command (the " +
			"call that advanced the fix) the first step of the first offer (hit@1), or of one of the first three (hit@3)? " +
			"engram: competence items whose signature matches, bound; raw episodes: the most similar past errors' fix, values " +
			"substituted; frequency table: the most frequent fixes of the error's template.\n\n")
		b.WriteString(replay)
	}
	b.WriteString("\n## Targets\n\n| target | value | goal | met |\n| --- | --: | --: | :-: |\n")
	for _, t := range FamilyTargets(sums) {
		fmt.Fprintf(&b, "| %s | %s | %s %s | %s |\n", cell(t.Name), formatNumber(t.Value), t.Op, formatNumber(t.Bound), mark(t))
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// FamilyTable is the family table as Markdown: per family, each agent's
// success in deployment, the impact, the margin over raw replay, the
// median successes until reliable and the consolidation passes failed.
func FamilyTable(sums []FamilySummary) string {
	var b strings.Builder
	b.WriteString("| family | seeds | engram | raw episodes | no memory | frequency table | impact (engram − no memory) | " +
		"margin over raw | reliable after ≤ N successes (median) | passes failed |\n" +
		"| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: |\n")
	for _, s := range sums {
		fmt.Fprintf(&b, "| (%s) | %d", s.Family, len(s.Seeds))
		for _, a := range []string{engramAgent, rawAgent, noMemoryAgent, tableAgent} {
			v, ok := s.Deployment[a]
			if !ok {
				b.WriteString(" | –")
				continue
			}
			fmt.Fprintf(&b, " | %s", v)
		}
		fmt.Fprintf(&b, " | %s | %s | %s | %d |\n", signed(s.Impact), signed(s.Margin), formatNumber(s.ReliableAfter), s.FailedPasses)
	}
	return b.String()
}

// ReplayTable is the offline replay metric as Markdown; "" when no family
// measured it.
func ReplayTable(sums []FamilySummary) string {
	var b strings.Builder
	for _, s := range sums {
		if s.Replay == nil {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("| family | held-out errors | memory | hit@1 | hit@3 |\n| --- | --: | --- | --: | --: |\n")
		}
		for _, row := range []struct {
			name string
			h    Hits
		}{{engramAgent, s.Replay.Engram}, {rawAgent, s.Replay.Raw}, {tableAgent, s.Replay.Table}} {
			at1, at3 := row.h.Rates(s.Replay.Errors)
			fmt.Fprintf(&b, "| (%s) | %d | %s | %s | %s |\n", s.Family, s.Replay.Errors, row.name, formatRate(at1), formatRate(at3))
		}
	}
	return b.String()
}

// signed is a spread of differences with its sign.
func signed(s Spread) string {
	if s.N == 0 {
		return "n/a"
	}
	f := func(v float64) string { return fmt.Sprintf("%+.2f", v) }
	if s.N == 1 || s.Min == s.Max {
		return f(s.Mean)
	}
	return fmt.Sprintf("%s (%s – %s)", f(s.Mean), f(s.Min), f(s.Max))
}

// Marks are the targets as console lines, ✓ or ✗ each.
func Marks(targets []Target) string {
	var b strings.Builder
	for _, t := range targets {
		fmt.Fprintf(&b, "  %s %s: %s (goal %s %s)\n", mark(t), t.Name, formatNumber(t.Value), t.Op, formatNumber(t.Bound))
	}
	return b.String()
}
