package retrieve

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the retrieval metrics (substrate RFC §14, §15.10).
// Usefulness is engram_retrieval_records_used_total over
// engram_retrieval_records_returned_total; the disambiguation rate is
// engram_retrieval_disambiguations_total over engram_retrievals_total.
type metrics struct {
	duration      prometheus.Histogram
	layerDuration *prometheus.HistogramVec
	embed         prometheus.Histogram
	items         *prometheus.HistogramVec
	retrievals    *prometheus.CounterVec
	withheld      prometheus.Counter
	disambiguated *prometheus.CounterVec
	returned      prometheus.Counter
	used          *prometheus.CounterVec
}

// latencyBuckets run from half a millisecond to a second.
var latencyBuckets = prometheus.ExponentialBuckets(0.0005, 2, 12)

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "engram_retrieval_duration_seconds", Help: "Time to answer a retrieval, end to end.", Buckets: latencyBuckets,
		}),
		layerDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "engram_retrieval_layer_duration_seconds", Help: "Time the database took over each layer's search.", Buckets: latencyBuckets,
		}, []string{"layer"}),
		embed: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "engram_retrieval_embed_duration_seconds", Help: "Time to embed a task's text.", Buckets: latencyBuckets,
		}),
		items: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "engram_retrieval_items", Help: "Records an answer returned, by layer.", Buckets: []float64{0, 1, 2, 3, 5, 8, 13, 21, 34},
		}, []string{"layer"}),
		retrievals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "engram_retrievals_total", Help: "Retrievals answered, by mode (hybrid, or lexical when vector search took no part).",
		}, []string{"mode"}),
		withheld: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "engram_retrieval_withheld_total", Help: "Records trust gating kept out of answers.",
		}),
		disambiguated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "engram_retrieval_disambiguations_total", Help: "Answers whose procedures or plans needed disambiguation, by layer.",
		}, []string{"layer"}),
		returned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "engram_retrieval_records_returned_total", Help: "Records returned by retrievals.",
		}),
		used: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "engram_retrieval_records_used_total", Help: "Returned records that feedback on their retrieval reported, by outcome.",
		}, []string{"outcome"}),
	}
	if reg != nil {
		reg.MustRegister(m.duration, m.layerDuration, m.embed, m.items, m.retrievals, m.withheld, m.disambiguated, m.returned, m.used)
	}
	return m
}

func (m *metrics) observe(res Result, took time.Duration) {
	m.duration.Observe(took.Seconds())
	mode := "hybrid"
	if res.LexicalOnly {
		mode = "lexical"
	}
	m.retrievals.WithLabelValues(mode).Inc()
	m.withheld.Add(float64(res.Withheld))
	for _, l := range res.Layers {
		m.items.WithLabelValues(string(l.Name)).Observe(float64(len(l.Items)))
		m.returned.Add(float64(len(l.Items)))
		if l.NeedsDisambiguation {
			m.disambiguated.WithLabelValues(string(l.Name)).Inc()
		}
	}
}

// ObserveFeedback counts feedback on n records of a logged retrieval, for
// the usefulness metric.
func (r *Retriever) ObserveFeedback(outcome string, n int) {
	r.metrics.used.WithLabelValues(outcome).Add(float64(n))
}
