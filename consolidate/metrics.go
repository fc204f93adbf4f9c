package consolidate

import "github.com/prometheus/client_golang/prometheus"

// metrics are consolidation's (substrate RFC §14, §15.10): what it wrote,
// how learned procedures and plans are used, and how far it is behind.
// The job's duration is the scheduler's engram_job_duration_seconds; the
// write path counts contradictions and revisions (engram_revisions_total).
type metrics struct {
	records   *prometheus.CounterVec
	uses      *prometheus.CounterVec
	planReuse prometheus.Counter
	lag       prometheus.Gauge
	watermark prometheus.Gauge
	// extracted counts the facts a language model found (extract.go).
	extracted prometheus.Counter
	// stage times each stage of a pass.
	stage *prometheus.HistogramVec
	// skipped counts the learned records the write path refused.
	skipped *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "engram_consolidation_records_total",
			Help: "Records consolidation wrote, by type and outcome (created, revised, retracted, unchanged, absorbed, merged, queued).",
		}, []string{"type", "outcome"}),
		uses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "engram_procedure_uses_total",
			Help: "Uses of learned procedures consolidation counted (episodes that followed a recipe), by outcome: success or failure; their ratio is the competence success rate.",
		}, []string{"outcome"}),
		planReuse: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "engram_plan_reuse_total",
			Help: "Episodes that followed the structure of a plan already learned: plan reuse.",
		}),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "engram_consolidation_lag_seconds",
			Help: "How far consolidation's watermark is behind the newest closed episode, after its latest pass.",
		}),
		watermark: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "engram_consolidation_watermark_timestamp_seconds",
			Help: "Closing time of the newest episode consolidation has read.",
		}),
		extracted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "engram_extracted_facts_total",
			Help: "Facts a language model found in the free text of closed episodes, before the write path's gates.",
		}),
		stage: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "engram_consolidation_stage_seconds",
			Help:    "Time one stage of a consolidation pass took (for a tenant, where the stage is per tenant): statistics, history, procedures, plans, extract, duplicates, compress.",
			Buckets: []float64{.01, .05, .1, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"stage"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "engram_consolidation_skipped_total",
			Help: "Learned records the write path refused (schema, gates, limits), by type: left out, audited, and the pass went on.",
		}, []string{"type"}),
	}
	if reg != nil {
		reg.MustRegister(m.records, m.uses, m.planReuse, m.lag, m.watermark, m.stage, m.extracted, m.skipped)
	}
	return m
}
