package consolidate

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/engram-dev/engram/store"
)

// Keeping the planner informed (issue 33, item 3). A table the planner has
// no statistics for — never analysed, as after a bulk load, a restore or
// weeks of writes on a server with autovacuum off — is planned with
// PostgreSQL's default selectivities, and consolidation's statements then
// choose plans that read a whole tenant for each episode, seconds where
// an analysed table takes milliseconds (docs/operations.md). So a pass
// begins by reading what the planner knows of each of engram's tables,
// and analyses those it knows too little of: a table never
// analysed that holds rows, and one modified since its last analysis by
// more than [AnalyzeModifiedRows] plus [AnalyzeModifiedFraction] of its
// rows — twice autovacuum's default fraction, so that on a server whose
// autovacuum keeps up a pass never analyses anything.
const (
	AnalyzeModifiedRows     = 1000
	AnalyzeModifiedFraction = 0.2
)

// staleness says why the planner's statistics of a table are too old to
// plan by, or "" when they are not.
func staleness(s store.TableStatistics) string {
	switch {
	case !s.Analysed && s.Rows != 0:
		// Rows is negative for a table never vacuumed (its size unknown),
		// positive for one vacuumed but not analysed; 0 for one that held
		// nothing when last vacuumed, whose modifications say whether it
		// grew since.
		return "never analysed"
	case float64(s.Modified) > AnalyzeModifiedRows+AnalyzeModifiedFraction*max(s.Rows, 0):
		return "modified"
	}
	return ""
}

// analyzeMetrics counts the tables a pass analysed, and why.
func newAnalyzeMetric(reg prometheus.Registerer) *prometheus.CounterVec {
	m := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "engram_tables_analyzed_total",
		Help: "Tables a consolidation pass analysed because the planner's statistics of them were missing (reason never_analysed) or older than many modifications (reason modified): autovacuum is off or not keeping up.",
	}, []string{"table", "reason"})
	if reg != nil {
		reg.MustRegister(m)
	}
	return m
}

// statistics analyses the tables whose statistics are missing or stale,
// each with a log line saying why. A table that cannot be analysed is
// logged and left: the pass goes on with the plans it has.
func (c *Consolidator) statistics(ctx context.Context, run Run) error {
	tables, err := store.ReadTableStatistics(ctx, c.cfg.DB)
	if err != nil {
		return err
	}
	for _, t := range tables {
		why := staleness(t)
		if why == "" {
			continue
		}
		start := time.Now()
		if err := store.AnalyzeTable(ctx, c.cfg.DB, t.Table); err != nil {
			if ctx.Err() != nil {
				return err
			}
			c.cfg.Logger.Warn("analyze table", slog.String("table", t.Table), slog.Any("error", err))
			continue
		}
		reason := "never_analysed"
		detail := "the planner had no statistics of it (autovacuum off, or a bulk load or restore not yet analysed)"
		if why == "modified" {
			reason = "modified"
			detail = fmt.Sprintf("%d rows modified since its last analysis, of about %.0f (autovacuum off or behind)", t.Modified, max(t.Rows, 0))
		}
		c.analyzed.WithLabelValues(t.Table, reason).Inc()
		run.Add("tables_analyzed", 1)
		c.cfg.Logger.Info("analyzed table for the planner", slog.String("table", t.Table), slog.String("reason", detail),
			slog.Duration("took", time.Since(start)))
	}
	return nil
}
