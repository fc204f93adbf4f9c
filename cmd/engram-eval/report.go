package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/engram-dev/engram/eval"
)

// Report files a run writes into its --out directory.
const (
	reportFile = "report.md"
	chartFile  = "curve.svg"
)

// writeReport writes the Markdown report and the SVG chart into dir and
// prints the targets' table and where the files are.
func writeReport(dir string, reports []eval.Report, command string, stdout io.Writer) error {
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
	fmt.Fprintf(stdout, "\nwrote %s and %s\n", filepath.Join(dir, reportFile), filepath.Join(dir, chartFile))
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
