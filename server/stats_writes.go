package server

import (
	"cmp"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"

	dto "github.com/prometheus/client_model/go"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

// gateOrder is the order the write path runs its gates in (write-path RFC
// §12.1.2); the latencies are listed in it.
var gateOrder = []string{revise.GateSchema, revise.GateEvidence, revise.GateContradiction,
	revise.GateDedup, revise.GateProvenance, revise.GateApproval}

// writeStats serves GET /v1/stats/writes to operator keys: the write
// path's metrics (write-path RFC §12.12.3) read back from the daemon's
// Prometheus registry — so this daemon's counts since it started, every
// tenant's — and the review queue of the daemon's tenants, read from the
// database, which every daemon sharing it sees alike.
func (s *Server) writeStats(w http.ResponseWriter, r *http.Request) error {
	families, err := s.gatherer.Gather()
	if err != nil {
		return fmt.Errorf("gather metrics: %w", err)
	}
	byName := make(map[string]*dto.MetricFamily, len(families))
	for _, f := range families {
		byName[f.GetName()] = f
	}
	at := s.now().UTC()
	st := api.WriteStats{Since: s.started.UTC(), At: at}
	st.Layers, st.All = layerWrites(byName[revise.MetricWrites])
	st.Rejections = writeRejections(byName[revise.MetricRejections])
	st.Gates = gateLatencies(byName[revise.MetricGateDuration])
	st.TamperedStamps = counterTotal(byName[revise.MetricTampered])
	st.Reviews.Escalations = counterTotal(byName[revise.MetricEscalations])

	queues, err := store.TenantQueues(r.Context(), s.db, s.tenants())
	if err != nil {
		return err
	}
	st.Reviews.Tenants = make([]api.TenantReviewQueue, len(queues))
	for i, q := range queues {
		age := max(0, at.Sub(q.Oldest).Seconds())
		st.Reviews.Tenants[i] = api.TenantReviewQueue{Tenant: q.Tenant, Pending: q.Pending, OldestAt: q.Oldest, OldestAgeSeconds: age}
		st.Reviews.Pending += q.Pending
		if st.Reviews.OldestAt == nil || q.Oldest.Before(*st.Reviews.OldestAt) {
			st.Reviews.OldestAt = &st.Reviews.Tenants[i].OldestAt
			st.Reviews.OldestAgeSeconds = age
		}
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

// tenants are the tenants of the server's keys, sorted.
func (s *Server) tenants() []string {
	var ts []string
	for _, p := range s.keys {
		if p.role != RoleOperator && !slices.Contains(ts, p.tenant) {
			ts = append(ts, p.tenant)
		}
	}
	slices.Sort(ts)
	return ts
}

// layerWrites sums engram_writes_total{layer,outcome} by layer, in
// retrieval-layer order (layers it does not know after, by name), and
// over every layer.
func layerWrites(f *dto.MetricFamily) ([]api.LayerWrites, api.LayerWrites) {
	byLayer := map[string]*api.LayerWrites{}
	var all api.LayerWrites
	for _, m := range f.GetMetric() {
		layer := label(m, "layer")
		lw := byLayer[layer]
		if lw == nil {
			lw = &api.LayerWrites{Layer: layer}
			byLayer[layer] = lw
		}
		n := int64(math.Round(m.GetCounter().GetValue()))
		count(lw, label(m, "outcome"), n)
		count(&all, label(m, "outcome"), n)
	}
	layers := make([]api.LayerWrites, 0, len(byLayer))
	for _, lw := range byLayer {
		rates(lw)
		layers = append(layers, *lw)
	}
	slices.SortFunc(layers, func(a, b api.LayerWrites) int {
		return cmp.Or(cmp.Compare(layerRank(a.Layer), layerRank(b.Layer)), cmp.Compare(a.Layer, b.Layer))
	})
	rates(&all)
	return layers, all
}

func layerRank(layer string) int {
	if i := slices.Index(memory.Types, memory.Type(layer)); i >= 0 {
		return i
	}
	return len(memory.Types)
}

// count adds n writes of outcome to lw.
func count(lw *api.LayerWrites, outcome string, n int64) {
	lw.Writes += n
	o := &lw.Outcomes
	switch revise.Outcome(outcome) {
	case revise.Created:
		o.Created += n
	case revise.Absorbed:
		o.Absorbed += n
	case revise.Merged:
		o.Merged += n
	case revise.Contested:
		o.Contested += n
	case revise.Queued:
		o.Queued += n
	case "rejected":
		o.Rejected += n
	}
}

// rates sets lw's rates (write-path RFC §12.12.3) from its counts, when it
// has any write.
func rates(lw *api.LayerWrites) {
	if lw.Writes == 0 {
		return
	}
	o, n := lw.Outcomes, float64(lw.Writes)
	accepted := float64(o.Created+o.Absorbed+o.Merged+o.Contested) / n
	war := float64(o.Created+o.Merged+o.Contested) / n
	dhr := float64(o.Absorbed+o.Merged) / n
	lw.AcceptanceRate, lw.WAR, lw.DedupHitRate = &accepted, &war, &dhr
}

// writeRejections lists engram_write_rejections_total{gate,reason}, most
// first, each with its share of every rejection.
func writeRejections(f *dto.MetricFamily) []api.WriteRejection {
	out := []api.WriteRejection{}
	var total int64
	for _, m := range f.GetMetric() {
		n := int64(math.Round(m.GetCounter().GetValue()))
		if n == 0 {
			continue
		}
		out = append(out, api.WriteRejection{Gate: label(m, "gate"), Reason: label(m, "reason"), Count: n})
		total += n
	}
	for i := range out {
		out[i].Share = float64(out[i].Count) / float64(total)
	}
	slices.SortFunc(out, func(a, b api.WriteRejection) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Gate, b.Gate), cmp.Compare(a.Reason, b.Reason))
	})
	return out
}

// gateLatencies summarises engram_write_gate_duration_seconds{gate}: each
// gate that ran, in the order the write path runs them (gates it does not
// know after, by name).
func gateLatencies(f *dto.MetricFamily) []api.GateLatency {
	out := []api.GateLatency{}
	for _, m := range f.GetMetric() {
		h := m.GetHistogram()
		n := h.GetSampleCount()
		if n == 0 {
			continue
		}
		bounds := make([]float64, len(h.GetBucket()))
		cumulative := make([]uint64, len(h.GetBucket()))
		for i, b := range h.GetBucket() {
			bounds[i], cumulative[i] = b.GetUpperBound(), b.GetCumulativeCount()
		}
		out = append(out, api.GateLatency{
			Gate:        label(m, "gate"),
			Count:       int64(n),
			MeanSeconds: h.GetSampleSum() / float64(n),
			P50Seconds:  bucketQuantile(0.50, bounds, cumulative, n),
			P95Seconds:  bucketQuantile(0.95, bounds, cumulative, n),
			P99Seconds:  bucketQuantile(0.99, bounds, cumulative, n),
		})
	}
	rank := func(g string) int {
		if i := slices.Index(gateOrder, g); i >= 0 {
			return i
		}
		return len(gateOrder)
	}
	slices.SortFunc(out, func(a, b api.GateLatency) int {
		return cmp.Or(cmp.Compare(rank(a.Gate), rank(b.Gate)), cmp.Compare(a.Gate, b.Gate))
	})
	return out
}

// bucketQuantile estimates the q-quantile (0 ≤ q ≤ 1) of a histogram
// from its buckets as Prometheus' histogram_quantile does: it finds the
// bucket holding the observation of rank q·total and interpolates
// linearly within it, assuming the observations spread evenly between
// the bucket's lower and upper bound (the first bucket's lower bound is
// 0). A rank beyond the last finite bound (in the implicit +Inf bucket)
// answers that bound, the most the buckets can tell. bounds are the
// finite upper bounds, ascending; cumulative the count of observations at
// most each; total the count of all, the +Inf bucket's. No observation
// answers NaN.
func bucketQuantile(q float64, bounds []float64, cumulative []uint64, total uint64) float64 {
	if total == 0 || len(bounds) != len(cumulative) {
		return math.NaN()
	}
	rank := q * float64(total)
	b := sort.Search(len(cumulative), func(i int) bool { return float64(cumulative[i]) >= rank })
	if b == len(bounds) {
		if b == 0 {
			return math.NaN()
		}
		return bounds[b-1]
	}
	if b == 0 && bounds[0] <= 0 {
		return bounds[0]
	}
	start, end, inBucket := 0.0, bounds[b], float64(cumulative[b])
	if b > 0 {
		start = bounds[b-1]
		inBucket -= float64(cumulative[b-1])
		rank -= float64(cumulative[b-1])
	}
	if inBucket == 0 {
		return end
	}
	return start + (end-start)*(rank/inBucket)
}

// counterTotal sums a counter family's series.
func counterTotal(f *dto.MetricFamily) int64 {
	var n float64
	for _, m := range f.GetMetric() {
		n += m.GetCounter().GetValue()
	}
	return int64(math.Round(n))
}

// label is the value of m's label name, or "".
func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
