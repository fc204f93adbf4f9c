package main

import (
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

// writeReport writes the Markdown report, the SVG chart and the curves as
// JSON into dir and prints each agent's curve and where the files are.
func writeReport(dir string, reports []eval.Report, command string, made time.Time, stdout io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report directory: %w", err)
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
	var doc strings.Builder
	if err := eval.WriteMarkdown(&doc, reports, eval.ReportMeta{Command: command, Chart: chartFile}); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, reportFile), []byte(doc.String()), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	for _, r := range reports {
		fmt.Fprintf(stdout, "%-13s %s\n", r.Agent, eval.Sparkline(r.Curve()))
	}
	fmt.Fprintf(stdout, "\nwrote %s, %s and %s\n", filepath.Join(dir, reportFile), filepath.Join(dir, chartFile), filepath.Join(dir, curvesFile))
	return nil
}

// commandLine is the command that reproduces a run of cfg.
func commandLine(cfg eval.Config, schedule string) string {
	return fmt.Sprintf("engram-eval run --seed %d --problems %d --episodes %d --deployment %d --drift %d --drift-share %g "+
		"--tasks %g --flaky %g --budget %g --every %d --window %d --schedule %q",
		cfg.Seed, cfg.Problems, cfg.Episodes, cfg.Deployment, cmpDrift(cfg.DriftAt), cfg.DriftShare, cfg.Tasks, cfg.Flaky,
		cfg.Budget, cfg.ConsolidateEvery, cfg.Window, schedule)
}

func cmpDrift(at int) int {
	if at == 0 {
		return -1
	}
	return at
}
