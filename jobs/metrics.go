package jobs

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	duration *prometheus.HistogramVec
	failures *prometheus.CounterVec
	leader   prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "engram_job_duration_seconds",
			Help:    "Time a periodic job's run took, by job and how it ended.",
			Buckets: []float64{.01, .05, .1, .5, 1, 2.5, 5, 10, 30, 60, 300, 900},
		}, []string{"job", "status"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "engram_job_failures_total",
			Help: "Runs of a periodic job that failed.",
		}, []string{"job"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "engram_job_leader",
			Help: "1 while this daemon leads, and so runs the periodic jobs.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.duration, m.failures, m.leader)
	}
	return m
}
