package revise

import "github.com/prometheus/client_golang/prometheus"

// Names of the write path's metrics (write-path RFC §12.12.3), for those
// that read them back from the registry.
const (
	// MetricWrites counts writes of new records by layer and outcome.
	MetricWrites = "engram_writes_total"
	// MetricRejections counts refused writes by gate and reason.
	MetricRejections = "engram_write_rejections_total"
	// MetricGateDuration is the histogram of each gate's time, by gate.
	MetricGateDuration = "engram_write_gate_duration_seconds"
	// MetricTampered counts provenance stamps found tampered.
	MetricTampered = "engram_provenance_tampered_total"
	// MetricEscalations counts async reviews escalated past their SLA.
	MetricEscalations = "engram_review_escalations_total"
	// MetricRevisions counts committed revisions by layer and audit action:
	// the revision and contradiction rates (substrate RFC §14, §15.10).
	MetricRevisions = "engram_revisions_total"
)

// metrics are the write path's (write-path RFC §12.12.3): writes by layer
// and outcome (acceptance rate, dedup hit rate), rejections by gate and
// reason, each gate's latency, tampered stamps found.
type metrics struct {
	writes     *prometheus.CounterVec
	rejections *prometheus.CounterVec
	gate       *prometheus.HistogramVec
	tampered   prometheus.Counter
	revisions  *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricWrites,
			Help: "Writes of new records through the write path, by layer (record type) and outcome: created, absorbed, merged, contested, queued, rejected.",
		}, []string{"layer", "outcome"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRejections,
			Help: "Writes a gate refused, by gate and structured reason.",
		}, []string{"gate", "reason"}),
		gate: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricGateDuration,
			Help:    "Time one gate of the write path took over one write.",
			Buckets: prometheus.ExponentialBuckets(0.00001, 4, 10),
		}, []string{"gate"}),
		tampered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricTampered,
			Help: "Provenance stamps the audit found not to match their signature.",
		}),
		revisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRevisions,
			Help: "Committed revisions, by layer (record type) and audit action: create, supersede, fork, contest, retract, merge, absorb, ...",
		}, []string{"layer", "action"}),
	}
	if reg != nil {
		reg.MustRegister(m.writes, m.rejections, m.gate, m.tampered, m.revisions)
	}
	return m
}
