package decay

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// collectEvery is how long the collector reuses its last counts: a scrape
// costs two aggregate queries at most this often.
const collectEvery = 15 * time.Second

type metrics struct {
	pruned          *prometheus.CounterVec
	purged          prometheus.Counter
	artifactsPurged prometheus.Counter
	restored        prometheus.Counter
	feedback        *prometheus.CounterVec
	retracted       prometheus.Counter
}

// newMetrics makes the decay metrics and registers them, with the
// collector of record counts and salience, on reg when it is not nil.
func newMetrics(reg prometheus.Registerer, d *Decayer) *metrics {
	m := &metrics{
		pruned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "engram_records_pruned_total",
			Help: "Records the decay sweep expired, by type and reason (salience, max_age, expires_at).",
		}, []string{"type", "reason"}),
		purged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "engram_records_purged_total",
			Help: "Expired records the purge deleted for good after the grace period.",
		}),
		artifactsPurged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "engram_artifacts_purged_total",
			Help: "Artifacts the purge deleted because no remaining record referenced them.",
		}),
		restored: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "engram_records_restored_total",
			Help: "Expired records restored.",
		}),
		feedback: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "engram_feedback_total",
			Help: "Records that received feedback, by outcome (substrate RFC §15.10 retrieval usefulness).",
		}, []string{"outcome"}),
		retracted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "engram_feedback_retractions_total",
			Help: "Learned procedures retracted because the failures feedback reported met the retraction rule.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.pruned, m.purged, m.artifactsPurged, m.restored, m.feedback, m.retracted, &collector{decayer: d})
	}
	return m
}

var (
	recordsDesc = prometheus.NewDesc("engram_records",
		"Records of every tenant by type and status (substrate RFC §15.10 memory growth).", []string{"type", "status"}, nil)
	salienceDesc = prometheus.NewDesc("engram_record_salience",
		"Salience of the active set by type, as of the last decay sweep (substrate RFC §15.10 salience distribution).", []string{"type"}, nil)
)

// collector reports record counts and the materialised salience
// distribution from the database, at most once per collectEvery.
type collector struct {
	decayer *Decayer

	mu      sync.Mutex
	at      time.Time
	metrics []prometheus.Metric
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- recordsDesc
	ch <- salienceDesc
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.at) >= collectEvery {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ms, err := c.collect(ctx)
		cancel()
		if err != nil {
			c.decayer.logger.Warn("collect record metrics", "error", err.Error())
			ch <- prometheus.NewInvalidMetric(recordsDesc, err)
			return
		}
		c.at, c.metrics = time.Now(), ms
	}
	for _, m := range c.metrics {
		ch <- m
	}
}

func (c *collector) collect(ctx context.Context) ([]prometheus.Metric, error) {
	db := c.decayer.db
	counts, err := store.CountRecords(ctx, db)
	if err != nil {
		return nil, err
	}
	var out []prometheus.Metric
	for _, rc := range counts {
		out = append(out, prometheus.MustNewConstMetric(recordsDesc, prometheus.GaugeValue, float64(rc.N), string(rc.Type), string(rc.Status)))
	}
	hist, err := store.MaterialisedSalience(ctx, db, Bounds)
	if err != nil {
		return nil, err
	}
	for _, t := range memory.Types {
		b := hist[t]
		if b == nil {
			b = &store.SalienceBuckets{Counts: make([]uint64, len(Bounds))}
		}
		buckets := make(map[float64]uint64, len(Bounds))
		for i, le := range Bounds {
			buckets[le] = b.Counts[i]
		}
		out = append(out, prometheus.MustNewConstHistogram(salienceDesc, b.Count, b.Sum, buckets, string(t)))
	}
	return out, nil
}
