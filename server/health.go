package server

import (
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// DefaultHealthRange is how far back GET /v1/stats/health looks when not
// told, and MaxHealthBuckets how many buckets it answers at most.
const (
	DefaultHealthRange = 30 * 24 * time.Hour
	MaxHealthBuckets   = 1000
)

// healthBuckets are the bucket widths GET /v1/stats/health accepts.
var healthBuckets = map[string]time.Duration{"hour": time.Hour, "day": 24 * time.Hour, "week": 7 * 24 * time.Hour}

// The composite score's weights (write-path RFC §12.12.7).
const (
	weightCorrectness   = 0.25
	weightPrecision     = 0.20
	weightHallucination = 0.20
	weightErrors        = 0.15
	weightAcceptance    = 0.10
	weightOperational   = 0.10
)

// statsTenant is the tenant a statistics request reads: a tenant key's own
// (a tenant parameter naming another is refused), or, for an operator key,
// the one its tenant parameter names, which it must.
func statsTenant(r *http.Request) (string, error) {
	p, want := principalOf(r), r.URL.Query().Get("tenant")
	if p.role != RoleOperator {
		if want != "" && want != p.tenant {
			return "", badParam("tenant", "a tenant's key reads its own tenant's statistics only: leave tenant out, or use an operator key")
		}
		return p.tenant, nil
	}
	if want == "" {
		return "", badParam("tenant", "an operator key names the tenant to read (GET /v1/tenants lists them)")
	}
	return want, nil
}

// listTenants serves GET /v1/tenants to operator keys: the tenants the
// database holds, so an operator's console can pick one to read statistics
// of.
func (s *Server) listTenants(w http.ResponseWriter, r *http.Request) error {
	ts, err := store.Tenants(r.Context(), s.db)
	if err != nil {
		return err
	}
	out := api.Tenants{Tenants: make([]api.Tenant, len(ts))}
	for i, t := range ts {
		out.Tenants[i] = api.Tenant{ID: t.ID, CreatedAt: t.Created}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// healthStats serves GET /v1/stats/health: a tenant's metrics of
// substrate RFC §15.10 over a time range, in buckets, with the composite
// health score of write-path RFC §12.12.7. A tenant's keys read their own
// tenant (a tenant parameter naming another is a bad parameter, so the
// route admits every role); an operator's any one it names.
func (s *Server) healthStats(w http.ResponseWriter, r *http.Request) error {
	tenant, err := statsTenant(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	bucket := q.Get("bucket")
	if bucket == "" {
		bucket = "day"
	}
	step, ok := healthBuckets[bucket]
	if !ok {
		return badParam("bucket", "%q is not one of hour, day, week", bucket)
	}
	to := s.now().UTC()
	if t, err := timeParam(r, "to"); err != nil {
		return err
	} else if t != nil {
		to = t.UTC()
	}
	from := to.Add(-DefaultHealthRange)
	if t, err := timeParam(r, "from"); err != nil {
		return err
	} else if t != nil {
		from = t.UTC()
	}
	// PostgreSQL keeps microseconds: so must the range, for its buckets'
	// starts and ours to be the same.
	from, to = from.Truncate(time.Microsecond), to.Truncate(time.Microsecond)
	if !from.Before(to) {
		return badParam("from", "must be before to")
	}
	n := int((to.Sub(from) + step - 1) / step)
	if n > MaxHealthBuckets {
		return badParam("bucket", "%d %s buckets from %s to %s: at most %d; choose a wider bucket or a shorter range",
			n, bucket, from.Format(time.RFC3339), to.Format(time.RFC3339), MaxHealthBuckets)
	}

	// The statements are independent: over a pool they run at once, each
	// on its own connection; in a transaction, one after another.
	var (
		counts []store.HealthCount
		totals store.HealthTotals
		stored []store.Held
		perf   []store.CompetenceUses
	)
	g, ctx := errgroup.WithContext(r.Context())
	if _, pool := s.db.(*pgxpool.Pool); !pool {
		g.SetLimit(1)
	}
	g.Go(func() (err error) {
		stored, err = store.HeldRecords(ctx, s.db, tenant, from)
		return err
	})
	g.Go(func() (err error) {
		counts, err = store.HealthSeries(ctx, s.db, tenant, from, to, step)
		return err
	})
	g.Go(func() (err error) {
		totals, err = store.ReadHealthTotals(ctx, s.db, tenant, from, to)
		return err
	})
	g.Go(func() (err error) {
		perf, err = store.CompetencePerformance(ctx, s.db, tenant, from, to, step)
		return err
	})
	if err := g.Wait(); err != nil {
		return err
	}

	st := api.HealthStats{Tenant: tenant, From: from, To: to, Bucket: bucket, Live: map[memory.Type]int64{},
		Series: make([]api.HealthBucket, n), RejectionReasons: map[string]int64{},
		Salience: api.HealthSalience{Bounds: decay.Bounds, Types: map[memory.Type][]int64{}}}
	for i := range st.Series {
		st.Series[i] = api.HealthBucket{Start: from.Add(time.Duration(i) * step), Records: map[memory.Type]int64{},
			Created: map[memory.Type]int64{}, Feedback: map[string]int64{}, Writes: map[string]int64{}, Actions: map[string]int64{}}
	}
	before := map[memory.Type]int64{}
	for _, h := range stored {
		typ, status := memory.Type(h.Type), memory.Status(h.Status)
		if h.Before {
			before[typ] += h.N
		}
		if status == memory.Active || status == memory.Contested {
			st.Live[typ] += h.N
		}
		if status == memory.Contested {
			st.Contested += h.N
		}
	}
	for _, c := range counts {
		i := int((c.Bucket.Sub(from) + step/2) / step)
		if c.Bucket.IsZero() || i < 0 || i >= n {
			continue
		}
		b := &st.Series[i]
		switch c.Metric {
		case store.HealthCreated:
			b.Created[memory.Type(c.Key)] += c.N
		case store.HealthRetrievals:
			b.Retrievals += c.N
		case store.HealthFeedback:
			typ, outcome, _ := strings.Cut(c.Key, ":")
			b.Feedback[outcome] += c.N
			if typ == string(memory.PlanGraph) && (outcome == "used_success" || outcome == "used_failure") {
				b.PlanReuse += c.N
			}
		case store.HealthAudit:
			b.Actions[c.Key] += c.N
		case store.HealthRejected:
			st.RejectionReasons[c.Key] += c.N
		}
	}
	if err := s.salienceHistogram(r, tenant, &st); err != nil {
		return err
	}

	// Running sums: records held at each bucket's end, the live
	// procedures' successes and failures then, and the window's totals the
	// score reads.
	held := before
	var wins, losses int64
	perfIn := make([][2]int64, n)
	for _, c := range perf {
		if c.Bucket.IsZero() {
			wins, losses = wins+c.Successes, losses+c.Failures
			continue
		}
		if i := int((c.Bucket.Sub(from) + step/2) / step); i >= 0 && i < n {
			perfIn[i][0] += c.Successes
			perfIn[i][1] += c.Failures
		}
	}
	var fb, writes api.HealthBucket
	fb.Feedback, writes.Writes = map[string]int64{}, map[string]int64{}
	for i := range st.Series {
		b := &st.Series[i]
		for _, t := range memory.Types {
			held[t] += b.Created[t]
			b.Records[t] = held[t]
		}
		a := b.Actions
		b.Writes = map[string]int64{"created": a["create"], "absorbed": a["absorb"], "merged": a["merge"],
			"contested": a["contest"], "queued": a["submit_for_review"], "approved": a["approve"], "rejected": a["reject"]}
		b.AcceptanceRate = acceptance(b.Writes)
		b.Contradictions = a["contest"] + a["fork"]
		b.Revisions = a["update"] + a["amend"] + a["supersede"] + a["retract"] + a["merge"] + a["rollback"]
		b.ContradictionRate = ratio(b.Contradictions, a["create"])
		b.RevisionRate = ratio(b.Revisions, a["create"])
		used := b.Feedback["used_success"] + b.Feedback["used_failure"]
		b.Usefulness = ratio(used, used+b.Feedback["unused"])
		wins, losses = wins+perfIn[i][0], losses+perfIn[i][1]
		b.CompetenceSuccesses, b.CompetenceFailures = wins, losses
		if wins+losses > 0 {
			rate := memory.SuccessRate(wins, losses)
			b.CompetenceSuccessRate = &rate
		}
		for k, v := range b.Feedback {
			fb.Feedback[k] += v
		}
		for k, v := range b.Writes {
			writes.Writes[k] += v
		}
	}
	st.Score = healthScore(fb.Feedback, writes.Writes, totals)
	writeJSON(w, http.StatusOK, st)
	return nil
}

// HealthSample is how many live records the health route's salience
// distribution reads at most, about: above it, a sample of the records
// table's pages is read and scaled to the live counts, so the route's cost
// does not grow with a tenant's size.
const HealthSample = 50_000

// salienceHistogram fills st's salience distribution, from st.Live: exact
// for a tenant of up to [HealthSample] live records, else estimated from a
// sample of about that many and scaled to each type's live count. A
// sample would have to read most of the table (a large tenant among few)
// is not one: then it is exact.
func (s *Server) salienceHistogram(r *http.Request, tenant string, st *api.HealthStats) error {
	var live int64
	for _, n := range st.Live {
		live += n
	}
	percent := 100.0
	if live > HealthSample {
		if p := 100 * float64(HealthSample) / float64(live); p <= 30 {
			percent = p
		}
	}
	hist, err := store.SalienceHistogram(r.Context(), s.db, tenant, decay.Bounds, percent)
	if err != nil {
		return err
	}
	sampled := map[memory.Type]int64{}
	for _, h := range hist {
		typ := memory.Type(h.Type)
		if st.Salience.Types[typ] == nil {
			st.Salience.Types[typ] = make([]int64, len(decay.Bounds)+1)
		}
		if h.Bucket >= 0 && h.Bucket <= len(decay.Bounds) {
			st.Salience.Types[typ][h.Bucket] += h.N
			sampled[typ] += h.N
		}
	}
	st.Salience.SamplePercent = percent
	if percent < 100 {
		for typ, counts := range st.Salience.Types {
			scale := float64(st.Live[typ]) / float64(sampled[typ])
			for i, n := range counts {
				counts[i] = int64(math.Round(float64(n) * scale))
			}
		}
	}
	return nil
}

// acceptance is the write acceptance rate of write-path RFC §12.12.3: the
// writes committed (created, or approved by a reviewer) over those decided
// (created, absorbed as duplicates, rejected by a reviewer).
func acceptance(w map[string]int64) *float64 {
	return ratio(w["created"]+w["approved"], w["created"]+w["absorbed"]+w["rejected"])
}

func ratio(a, b int64) *float64 {
	if b == 0 {
		return nil
	}
	v := float64(a) / float64(b)
	return &v
}

// healthScore is the composite memory health score of write-path RFC
// §12.12.7 over a range's feedback, write outcomes and totals. Each part is
// normalised to [0, 1], 1 best; a part with nothing to measure is left out
// and the others' weights are renormalised.
func healthScore(feedback, writes map[string]int64, t store.HealthTotals) api.HealthScore {
	used := feedback["used_success"] + feedback["used_failure"]
	parts := []api.HealthPart{
		{Name: "correctness_impact", Weight: weightCorrectness,
			Detail: "needs an ablation (memory on against memory off): engram-eval measures it, the daemon does not"},
		part("retrieval_precision", weightPrecision, ratio(used, used+feedback["unused"]),
			// Target ≥ 0.7 (§12.12.4): at or above it is optimal.
			func(v float64) float64 { return min(1, v/0.7) },
			"records used over records given feedback; target ≥ 0.7", "no feedback in the range"),
		part("hallucination_leakage", weightHallucination, ratio(t.Refuted, t.Committed),
			// Alert above 0.05 (§12.12.5): 0.05 normalises to 0.5.
			func(v float64) float64 { return max(0, 1-v/0.1) },
			"records created in the range since retracted or contested; alert above 0.05", "no record created in the range"),
		part("memory_induced_errors", weightErrors, ratio(t.FailedTasks, t.Tasks),
			// Target < 0.01 (§12.12.5): 0.01 normalises to 0.75.
			func(v float64) float64 { return max(0, 1-v/0.04) },
			"retrievals whose feedback names a record used in a failure, over retrievals given feedback; target < 0.01",
			"no feedback in the range"),
		part("write_acceptance", weightAcceptance, acceptance(writes), acceptanceScore,
			"created and approved over created, absorbed and rejected; target 0.4–0.8, alert above 0.95 (too little filtering) or below 0.3 (too much), each scoring 0.5",
			"no write in the range"),
		part("operational", weightOperational, ratio(t.Pending-t.Overdue, t.Pending),
			func(v float64) float64 { return v },
			"pending reviews within their deadline", ""),
	}
	// With no review pending, nothing is overdue.
	if t.Pending == 0 {
		one := 1.0
		parts[5].Value, parts[5].Normalized, parts[5].Detail = &one, &one, "no review pending"
	}
	var sum, weights float64
	measured := 0
	for _, p := range parts {
		if p.Normalized != nil {
			sum += p.Weight * *p.Normalized
			weights += p.Weight
			if p.Name != "operational" {
				measured++
			}
		}
	}
	// An empty tenant's queue is within its deadlines, which says nothing
	// of its memory: no score without a quality metric.
	sc := api.HealthScore{Status: "unknown", Parts: parts}
	if measured > 0 {
		v := sum / weights
		sc.Score = &v
		switch {
		case v >= 0.8:
			sc.Status = "healthy"
		case v >= 0.6:
			sc.Status = "degraded"
		default:
			sc.Status = "critical"
		}
	}
	return sc
}

// acceptanceScore normalises a write acceptance rate (write-path RFC
// §12.12.3): 1 inside the target range 0.4–0.8, falling linearly outside
// it to 0.5 at the spec's alert thresholds — above 0.95 "suggests
// insufficient filtering", below 0.3 "over-restrictive policies" — as the
// other parts score their alert threshold 0.5. Past an alert it keeps
// falling at the same slope: 1 (every write taken) scores 1/3, 0.2 and
// below 0.
func acceptanceScore(v float64) float64 {
	switch {
	case v > 0.8:
		return max(0, 1-0.5*(v-0.8)/0.15)
	case v < 0.4:
		return max(0, 1-0.5*(0.4-v)/0.1)
	}
	return 1
}

// part is a score part measured as value (nil: not measured), normalised
// by norm.
func part(name string, weight float64, value *float64, norm func(float64) float64, detail, missing string) api.HealthPart {
	p := api.HealthPart{Name: name, Weight: weight, Value: value, Detail: detail}
	if value == nil {
		p.Detail = missing
		return p
	}
	n := norm(*value)
	p.Normalized = &n
	return p
}
