package eval

import (
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// ReportMeta is what a Markdown report says of how it was made.
type ReportMeta struct {
	// Command is the command line that reproduces the run (make eval …).
	Command string
	// Chart is the file name of the chart WriteSVG drew, linked from the
	// report; empty for none.
	Chart string
}

// WriteMarkdown writes the reports of one run as a Markdown document: the
// seed and configuration that reproduce it, issue 12's targets, success
// and steps per phase, each problem's figures, retrieval usefulness and
// the records learned. The reports must share one configuration.
func WriteMarkdown(w io.Writer, reports []Report, meta ReportMeta) error {
	if len(reports) == 0 {
		return errors.New("write report: no report")
	}
	for _, r := range reports[1:] {
		if !reflect.DeepEqual(r.Config, reports[0].Config) {
			return fmt.Errorf("write report: %s ran another configuration than %s", r.Agent, reports[0].Agent)
		}
	}
	m := Measure(reports...)
	var b strings.Builder
	b.WriteString("# engram evaluation: do agents get better with experience?\n\n")
	b.WriteString("The agents solve the same seeded stream of episodes: engram follows the procedures and plans " +
		"engram consolidated from its past episodes; raw episodes replays the most similar successful past episode " +
		"(engram's episodic layer only, no consolidation); no memory explores every time. Acquisition comes first; " +
		"past the drift point some problems' fixes change; deployment is held-out instances with memory frozen.\n\n")
	writeSetup(&b, reports[0].Config, m, meta)
	writeTargets(&b, m)
	if meta.Chart != "" {
		fmt.Fprintf(&b, "## Success rate\n\n![success rate per window of episodes](%s)\n\n", meta.Chart)
	}
	writeCurves(&b, reports)
	writePhases(&b, m)
	writeComparisons(&b, m)
	writeProblems(&b, m)
	writeRetrieval(&b, m)
	writeRecords(&b, m)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSetup writes the command, then every field of the configuration,
// found by reflection so that a field added to Config is never left out.
func writeSetup(b *strings.Builder, cfg Config, m Metrics, meta ReportMeta) {
	b.WriteString("## Reproduce\n\n")
	if meta.Command != "" {
		fmt.Fprintf(b, "```sh\n%s\n```\n\n", meta.Command)
	}
	b.WriteString("| configuration | value |\n| --- | --- |\n")
	v := reflect.ValueOf(cfg)
	for i := range v.NumField() {
		if f := v.Type().Field(i); f.IsExported() {
			fmt.Fprintf(b, "| %s | %s |\n", f.Name, cell(fmt.Sprint(v.Field(i).Interface())))
		}
	}
	fmt.Fprintf(b, "| deployment episodes | %d |\n\n", m.Agents[0].Deployment.Episodes)
}

func writeTargets(b *strings.Builder, m Metrics) {
	b.WriteString("## Targets\n\n| target | value | goal | met |\n| --- | --: | --: | :-: |\n")
	for _, t := range m.Targets {
		fmt.Fprintf(b, "| %s | %s | %s %s | %s |\n", cell(t.Name), formatNumber(t.Value), t.Op, formatNumber(t.Bound), mark(t))
	}
	b.WriteString("\n")
}

// mark is ✓ for a target met, ✗ for one missed, n/a for one that could
// not be measured.
func mark(t Target) string {
	switch {
	case math.IsNaN(t.Value):
		return "n/a"
	case t.Met:
		return "✓"
	}
	return "✗"
}

// writeCurves writes each agent's curve as a sparkline, readable where
// the chart is not shown.
func writeCurves(b *strings.Builder, reports []Report) {
	b.WriteString("```text\n")
	for _, r := range reports {
		var rates []float64
		for _, p := range PhaseCurve(r) {
			rates = append(rates, p.Rate)
		}
		fmt.Fprintf(b, "%-14s %s\n", r.Agent, Sparkline(rates))
	}
	b.WriteString("```\n\n")
}

func writePhases(b *strings.Builder, m Metrics) {
	a0 := m.Agents[0]
	fmt.Fprintf(b, "## Success and steps per success by phase\n\n"+
		"| agent | before drift (%d episodes) | steps | after drift (%d) | steps | deployment (%d) | steps |\n"+
		"| --- | --: | --: | --: | --: | --: | --: |\n", a0.BeforeDrift.Episodes, a0.AfterDrift.Episodes, a0.Deployment.Episodes)
	for _, a := range m.Agents {
		fmt.Fprintf(b, "| %s", cell(a.Agent))
		for _, t := range []Tally{a.BeforeDrift, a.AfterDrift, a.Deployment} {
			fmt.Fprintf(b, " | %s | %s", formatRate(t.SuccessRate()), formatSteps(t.StepsPerSuccess()))
		}
		b.WriteString(" |\n")
	}
	b.WriteString("\n")
}

func writeComparisons(b *strings.Builder, m Metrics) {
	b.WriteString("## Memory's effect\n\n| comparison | value |\n| --- | --: |\n")
	fmt.Fprintf(b, "| memory correctness impact, whole run (engram − no memory) | %s |\n", formatNumber(m.Impact))
	fmt.Fprintf(b, "| memory correctness impact, deployment (engram − no memory) | %s |\n", formatNumber(m.DeploymentImpact))
	fmt.Fprintf(b, "| margin over raw episodes, deployment success rate | %s |\n", formatNumber(m.Margin))
	fmt.Fprintf(b, "| margin over raw episodes, deployment steps per success | %s |\n", formatNumber(m.StepsMargin))
	for _, a := range m.Agents {
		if a.Agent == engramAgent {
			fmt.Fprintf(b, "| attempts after drift until the record engram offers works as it stands in ≥ %.0f%% of later ones "+
				"(max; median over drifted problems) | %s; %s |\n", RecoveredShare*100, formatNumber(a.RelearnMax), formatNumber(a.RelearnMedian))
		}
	}
	b.WriteString("\n")
}

// writeProblems writes one row per problem and, per agent, the successes
// until it was reliable and the attempts after drift until it was again.
func writeProblems(b *strings.Builder, m Metrics) {
	b.WriteString("## Problems\n\n")
	fmt.Fprintf(b, "Reliable after: successful episodes of the problem after which its later acquisition attempts before "+
		"drift succeed ≥ %.0f%% of the time. Lag: its attempts after drift before its later attempts succeed ≥ %.0f%%.\n\n",
		ReliableShare*100, RecoveredShare*100)
	b.WriteString("| problem | drifted | attempts before / after drift")
	align := "| --: | :-: | --:"
	for _, a := range m.Agents {
		fmt.Fprintf(b, " | %s: reliable after | %s: lag", cell(a.Agent), cell(a.Agent))
		align += " | --: | --:"
	}
	b.WriteString(" |\n" + align + " |\n")
	for _, id := range problemIDs(m) {
		about := aboutProblem(m, id)
		fmt.Fprintf(b, "| %d | %s | %d / %d", id, yesNo(about.Drifted), about.Before, about.After)
		for _, a := range m.Agents {
			p := a.problem(id)
			fmt.Fprintf(b, " | %s | %s", formatNumber(p.UntilReliable), formatNumber(p.Lag))
		}
		b.WriteString(" |\n")
	}
	b.WriteString("| **max** | | ")
	for _, a := range m.Agents {
		fmt.Fprintf(b, " | %s | %s", formatNumber(a.UntilReliableMax), formatNumber(a.LagMax))
	}
	b.WriteString(" |\n| **median** | | ")
	for _, a := range m.Agents {
		fmt.Fprintf(b, " | %s | ", formatNumber(a.UntilReliableMedian))
	}
	b.WriteString(" |\n\n")
}

// problemIDs are the problems any agent met, in order.
func problemIDs(m Metrics) []int {
	var ids []int
	for _, a := range m.Agents {
		for _, p := range a.Problems {
			if !slices.Contains(ids, p.Problem) {
				ids = append(ids, p.Problem)
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// aboutProblem is the first agent's figures for a problem that met it:
// all agents meet the same stream, so whether the problem drifted and its
// number of attempts are the same for every agent that met it.
func aboutProblem(m Metrics, id int) ProblemMetrics {
	for _, a := range m.Agents {
		if p := a.problem(id); p.Before+p.After > 0 {
			return p
		}
	}
	return ProblemMetrics{Problem: id}
}

func writeRetrieval(b *strings.Builder, m Metrics) {
	b.WriteString("## Retrieval usefulness\n\nUseful: the record the agent followed worked (substrate RFC §14).\n\n" +
		"| agent | retrievals | followed | useful | useful / retrievals | followed / retrievals |\n" +
		"| --- | --: | --: | --: | --: | --: |\n")
	for _, a := range m.Agents {
		r := a.Retrieval
		fmt.Fprintf(b, "| %s | %d | %d | %d | %s | %s |\n", cell(a.Agent), r.Retrieved, r.Followed, r.Useful,
			formatRate(r.UsefulShare()), formatRate(r.FollowedShare()))
	}
	b.WriteString("\n")
}

// writeRecords writes the active records of each agent's memory at the
// end of acquisition, one row per type.
func writeRecords(b *strings.Builder, m Metrics) {
	b.WriteString("## Records learned\n\nActive records at the end of acquisition, by type.\n\n| type")
	align := "| ---"
	var types []string
	for _, a := range m.Agents {
		fmt.Fprintf(b, " | %s", cell(a.Agent))
		align += " | --:"
		for t := range a.Records {
			if !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
	}
	b.WriteString(" |\n" + align + " |\n")
	slices.Sort(types)
	for _, t := range types {
		fmt.Fprintf(b, "| %s", cell(t))
		for _, a := range m.Agents {
			fmt.Fprintf(b, " | %d", a.Records[t])
		}
		b.WriteString(" |\n")
	}
	b.WriteString("| **total**")
	for _, a := range m.Agents {
		total := 0
		for _, n := range a.Records {
			total += n
		}
		fmt.Fprintf(b, " | %d", total)
	}
	b.WriteString(" |\n")
}

// cell is s made safe inside a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

// formatNumber is a figure with at most two decimals: "never" for Never,
// "n/a" for NotMeasured.
func formatNumber(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case math.IsInf(v, 1):
		return "never"
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// formatRate is a share with two decimals, so that a column aligns.
func formatRate(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", v)
}

// formatSteps is a mean number of steps with one decimal.
func formatSteps(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", v)
}

// sparks are the levels of a sparkline, from 0 to 1.
var sparks = []rune("▁▂▃▄▅▆▇█")

// Sparkline draws rates between 0 and 1 as one block character each, for
// a terminal: 0 is ▁, 1 is █; a rate that is not measured is a space.
func Sparkline(rates []float64) string {
	var b strings.Builder
	for _, r := range rates {
		if math.IsNaN(r) {
			b.WriteRune(' ')
			continue
		}
		level := int(math.Round(min(max(r, 0), 1) * float64(len(sparks)-1)))
		b.WriteRune(sparks[level])
	}
	return b.String()
}

// ProgressBar draws done out of total as a bar of width cells followed by
// the count: "[█████░░░░░] 5/10".
func ProgressBar(done, total, width int) string {
	width = max(width, 0)
	filled := 0
	if total > 0 {
		filled = min(max(done, 0), total) * width / total
	}
	return fmt.Sprintf("[%s%s] %d/%d", strings.Repeat("█", filled), strings.Repeat("░", width-filled), done, total)
}
