package api

import "time"

// WriteStats is the answer of GET /v1/stats/writes: the write path's
// metrics (write-path RFC §12.12.3) as this daemon counted them since it
// started (Since), and the review queue of its tenants as the database
// holds it at At.
//
// The counts are one daemon's, since its start: a fleet's are the sum of
// its daemons', which Prometheus computes from their engram_writes_total,
// engram_write_rejections_total and engram_write_gate_duration_seconds (the
// README gives the PromQL).
type WriteStats struct {
	Since time.Time `json:"since"`
	At    time.Time `json:"at"`
	// Layers are the writes of each layer (record type) that had any, in
	// retrieval-layer order; All sums them.
	Layers []LayerWrites `json:"layers"`
	All    LayerWrites   `json:"all"`
	// Rejections are the writes a gate refused, by gate and reason, most
	// first.
	Rejections []WriteRejection `json:"rejections"`
	// Gates are the latencies of the gates that ran, in the order the
	// write path runs them.
	Gates []GateLatency `json:"gates"`
	// TamperedStamps is how many provenance stamps the audit found not to
	// match their signature.
	TamperedStamps int64            `json:"tampered_stamps"`
	Reviews        ReviewQueueStats `json:"reviews"`
}

// LayerWrites are the writes of new records to one layer, or (Layer
// empty) to all, by outcome, and the rates §12.12.3 defines over them.
// The rates are absent when there was no write.
type LayerWrites struct {
	Layer    string        `json:"layer,omitempty"`
	Writes   int64         `json:"writes"`
	Outcomes WriteOutcomes `json:"outcomes"`
	// AcceptanceRate is the share of writes the write path took without a
	// reviewer: created, absorbed, merged or contested.
	AcceptanceRate *float64 `json:"acceptance_rate,omitempty"`
	// WAR is §12.12.3's write acceptance rate: the share of writes
	// committed as a new record or version (created, merged, contested).
	// Its target is 0.4 to 0.8 for facts and procedures.
	WAR *float64 `json:"war,omitempty"`
	// DedupHitRate is §12.12.3's DHR: the share of writes found to
	// duplicate a live record (absorbed or merged). Above 0.3, agents
	// write much that memory already holds.
	DedupHitRate *float64 `json:"dedup_hit_rate,omitempty"`
}

// WriteOutcomes count writes by what the write path did with them.
type WriteOutcomes struct {
	// Created is a new active record.
	Created int64 `json:"created"`
	// Absorbed is a duplicate of a live record: nothing written.
	Absorbed int64 `json:"absorbed"`
	// Merged is folded into the live record it duplicates.
	Merged int64 `json:"merged"`
	// Contested is written contesting the live facts it contradicts.
	Contested int64 `json:"contested"`
	// Queued is held as a draft for a reviewer.
	Queued int64 `json:"queued"`
	// Rejected is refused by a gate.
	Rejected int64 `json:"rejected"`
}

// WriteRejection is how many writes one gate refused for one reason, and
// their share of all refusals (§12.12.3's P(reason | rejected)).
type WriteRejection struct {
	Gate   string  `json:"gate"`
	Reason string  `json:"reason"`
	Count  int64   `json:"count"`
	Share  float64 `json:"share"`
}

// GateLatency is how long one gate took over a write: how many times it
// ran, the mean, and the 50th, 95th and 99th percentiles estimated from
// the histogram's buckets as Prometheus' histogram_quantile does.
type GateLatency struct {
	Gate        string  `json:"gate"`
	Count       int64   `json:"count"`
	MeanSeconds float64 `json:"mean_seconds"`
	P50Seconds  float64 `json:"p50_seconds"`
	P95Seconds  float64 `json:"p95_seconds"`
	P99Seconds  float64 `json:"p99_seconds"`
}

// ReviewQueueStats is the review queue of the daemon's tenants (those of
// its API keys) as the database holds it, and how many reviews this
// daemon's escalation runs escalated since it started.
type ReviewQueueStats struct {
	Pending int64 `json:"pending"`
	// OldestAt is when the oldest pending review was queued, and
	// OldestAgeSeconds its age at the answer's At; absent and 0 when none
	// is pending.
	OldestAt         *time.Time `json:"oldest_at,omitempty"`
	OldestAgeSeconds float64    `json:"oldest_age_seconds"`
	// Tenants are the queues of the tenants with a pending review.
	Tenants     []TenantReviewQueue `json:"tenants"`
	Escalations int64               `json:"escalations"`
}

// TenantReviewQueue is one tenant's pending reviews and the oldest one's
// age.
type TenantReviewQueue struct {
	Tenant           string    `json:"tenant"`
	Pending          int64     `json:"pending"`
	OldestAt         time.Time `json:"oldest_at"`
	OldestAgeSeconds float64   `json:"oldest_age_seconds"`
}
