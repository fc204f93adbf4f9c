package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/engram-dev/engram/eval"
)

// Report files a run writes into its --out directory.
const (
	reportFile = "report.md"
	chartFile  = "curve.svg"
	// curvesFile is the curves as data (eval.Curves), which engramd's
	// console draws (console.eval_report).
	curvesFile = "curve.json"
)

// writeReport writes the report into dir — the family table, the replay
// metric and the targets, then the detail of the first run (family a's
// first seed when it ran) — with the SVG chart and the curves as JSON of
// that run, and prints the family table and the targets.
func writeReport(dir string, runs []eval.FamilyRun, command string, made time.Time, stdout io.Writer) error {
	if len(runs) == 0 {
		return errors.New("write report: no run")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report directory: %w", err)
	}
	detail := runs[0]
	reports := detail.Reports
	if detail.Family != "a" {
		// The chart and the console's curves draw engram and the two
		// controls the world of world.go has.
		reports = reports[:3]
	}
	var chart strings.Builder
	if err := eval.WriteSVG(&chart, reports); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, chartFile), []byte(chart.String()), 0o644); err != nil {
		return fmt.Errorf("write chart: %w", err)
	}
	curves, err := eval.NewCurves(reports, command, made)
	if err != nil {
		return err
	}
	var data strings.Builder
	if err := curves.WriteJSON(&data); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, curvesFile), []byte(data.String()), 0o644); err != nil {
		return fmt.Errorf("write curves: %w", err)
	}
	sums := eval.Summarize(runs)
	var doc strings.Builder
	if err := eval.WriteFamilies(&doc, sums, command); err != nil {
		return err
	}
	fmt.Fprintf(&doc, "## Family (%s), seed %d, in detail\n\n", detail.Family, detail.Seed)
	var one strings.Builder
	if err := eval.WriteMarkdown(&one, detail.Reports, eval.ReportMeta{Chart: chartFile}); err != nil {
		return err
	}
	// The detail's own sections, one level down.
	body := one.String()
	if _, rest, ok := strings.Cut(body, "\n\n"); ok {
		body = rest
	}
	doc.WriteString(strings.ReplaceAll(body, "\n## ", "\n### "))
	if err := os.WriteFile(filepath.Join(dir, reportFile), []byte(doc.String()), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	for _, r := range reports {
		fmt.Fprintf(stdout, "%-16s %s\n", r.Agent, eval.Sparkline(r.Curve()))
	}
	fmt.Fprintf(stdout, "\nSuccess in deployment, mean (min–max) over seeds:\n\n%s", eval.FamilyTable(sums))
	if t := eval.ReplayTable(sums); t != "" {
		fmt.Fprintf(stdout, "\nOffline replay metric (family b):\n\n%s", t)
	}
	fmt.Fprintf(stdout, "\nTargets:\n%s", eval.Marks(eval.FamilyTargets(sums)))
	fmt.Fprintf(stdout, "\nwrote %s, %s and %s\n", filepath.Join(dir, reportFile), filepath.Join(dir, chartFile), filepath.Join(dir, curvesFile))
	return nil
}

// commandLine is the command that reproduces a run of cfg.
func commandLine(cfg eval.Config, schedule, families string, seeds, sessions, heldOut int) string {
	return fmt.Sprintf("engram-eval run --family %s --seeds %d --seed %d --problems %d --episodes %d --deployment %d --drift %d --drift-share %g "+
		"--tasks %g --flaky %g --budget %g --every %d --window %d --sessions %d --held-out %d --schedule %q",
		families, seeds, cfg.Seed, cfg.Problems, cfg.Episodes, cfg.Deployment, cmpDrift(cfg.DriftAt), cfg.DriftShare, cfg.Tasks, cfg.Flaky,
		cfg.Budget, cfg.ConsolidateEvery, cfg.Window, sessions, heldOut, schedule)
}

func cmpDrift(at int) int {
	if at == 0 {
		return -1
	}
	return at
}
