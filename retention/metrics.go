package retention

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	acted *prometheus.CounterVec
	past  *prometheus.GaugeVec
}

// newMetrics makes the retention metrics and registers them on reg when it
// is not nil.
func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		acted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "engram_retention_records_total",
			Help: "Records the retention job expired (soft_delete) or deleted (hard_delete) past their class's maximum retention (write-path RFC §12.10.4).",
		}, []string{"class", "action"}),
		past: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "engram_records_past_retention",
			Help: "Records past their class's maximum retention not yet acted on, by class, as the last compliance report found (write-path RFC §12.10.5).",
		}, []string{"class"}),
	}
	if reg != nil {
		reg.MustRegister(m.acted, m.past)
	}
	return m
}
