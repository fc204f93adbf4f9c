package api

import (
	"time"

	"github.com/engram-dev/engram/memory"
)

// HealthStats is the answer of GET /v1/stats/health: one tenant's memory
// metrics over a time range (substrate RFC §14, §15.10), in time buckets,
// and the composite health score of write-path RFC §12.12.7 with its parts.
// Everything is counted from the database (records, audit log, feedback,
// retrieval log, reviews), so every daemon sharing it answers alike.
type HealthStats struct {
	Tenant string    `json:"tenant"`
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
	// Bucket is the buckets' width: "hour", "day" or "week".
	Bucket string `json:"bucket"`
	// Live is the tenant's live (active or contested) records now, by type.
	Live map[memory.Type]int64 `json:"live"`
	// Contested is how many of them are contested.
	Contested int64 `json:"contested"`
	// Series holds one entry per bucket from From, oldest first.
	Series []HealthBucket `json:"series"`
	// Salience is the stored salience (the last decay sweep's) of the live
	// records, by type; estimated from a sample for a large tenant.
	Salience HealthSalience `json:"salience"`
	// RejectionReasons counts the reviews rejected in the range, by reason
	// (write-path RFC §12.12.3): the rejections the database keeps. Writes
	// a gate refused never became rows; GET /v1/stats/writes counts them.
	RejectionReasons map[string]int64 `json:"rejection_reasons"`
	Score            HealthScore      `json:"score"`
}

// HealthBucket is one time bucket of [HealthStats]. Rates are null where
// their denominator is zero.
type HealthBucket struct {
	Start time.Time `json:"start"`
	// Records is how many records of each type the tenant held at the
	// bucket's end, counting every record still stored whatever its status;
	// Created how many were created in the bucket (the growth rate).
	Records map[memory.Type]int64 `json:"records"`
	Created map[memory.Type]int64 `json:"created"`
	// Retrievals answered in the bucket.
	Retrievals int64 `json:"retrievals"`
	// Feedback on records in the bucket, by outcome: used_success,
	// used_failure, unused.
	Feedback map[string]int64 `json:"feedback"`
	// Usefulness is the share of records given feedback that were used
	// (write-path RFC §12.12.4, retrieval precision).
	Usefulness *float64 `json:"usefulness"`
	// CompetenceSuccesses and CompetenceFailures are the uses of the
	// tenant's live (active or contested) procedures at the bucket's end,
	// summed from each one's performance: every use, whether observed in
	// a later episode or reported by feedback, as a procedure's own page
	// and engram procedures count them. CompetenceSuccessRate is their
	// success rate as engram states it everywhere, smoothed:
	// (successes+1)/(uses+2); null while no live procedure has a use.
	CompetenceSuccesses   int64    `json:"competence_successes"`
	CompetenceFailures    int64    `json:"competence_failures"`
	CompetenceSuccessRate *float64 `json:"competence_success_rate"`
	// PlanReuse counts plan graphs used (feedback used_success or
	// used_failure on a plan_graph record).
	PlanReuse int64 `json:"plan_reuse"`
	// Writes counts the write path's outcomes for new records, from the
	// audit log: created, absorbed (duplicates that brought new evidence
	// or tags: one that changed nothing leaves no row to count), merged, contested, queued
	// (for review), approved, rejected (by a reviewer).
	Writes map[string]int64 `json:"writes"`
	// AcceptanceRate is created and approved over created, absorbed and
	// rejected (write-path RFC §12.12.3, WAR).
	AcceptanceRate *float64 `json:"acceptance_rate"`
	// Contradictions counts contests and forks; Revisions counts updates,
	// amendments, supersessions, retractions, merges and rollbacks; their
	// rates are per record created in the bucket.
	Contradictions    int64    `json:"contradictions"`
	Revisions         int64    `json:"revisions"`
	ContradictionRate *float64 `json:"contradiction_rate"`
	RevisionRate      *float64 `json:"revision_rate"`
	// Actions is every audit action of the bucket, counted.
	Actions map[string]int64 `json:"actions"`
}

// HealthSalience is the salience distribution of [HealthStats]: Types[t][i]
// live records of type t have a salience above Bounds[i-1] and at most
// Bounds[i]; the last count is of those above the last bound.
type HealthSalience struct {
	Bounds []float64               `json:"bounds"`
	Types  map[memory.Type][]int64 `json:"types"`
	// SamplePercent is 100 when every live record was counted; less, the
	// share of the records table's pages read, the counts scaled to each
	// type's live count (a tenant of more than 50,000 live records).
	SamplePercent float64 `json:"sample_percent"`
}

// HealthScore is the composite memory health score of write-path RFC
// §12.12.7: the weighted mean of the parts that could be measured, their
// weights renormalised to sum to 1. Score is null, and Status "unknown",
// when none could.
type HealthScore struct {
	Score *float64 `json:"score"`
	// Status is healthy (score ≥ 0.8), degraded (≥ 0.6), critical or
	// unknown.
	Status string       `json:"status"`
	Parts  []HealthPart `json:"parts"`
}

// HealthPart is one metric of a [HealthScore].
type HealthPart struct {
	// Name is correctness_impact, retrieval_precision,
	// hallucination_leakage, memory_induced_errors, write_acceptance or
	// operational.
	Name string `json:"name"`
	// Weight is the spec's weight (§12.12.7), before renormalisation.
	Weight float64 `json:"weight"`
	// Value is the metric as measured; Normalized maps it to [0, 1], 1
	// best. Both are null when it could not be measured, and Detail says
	// why.
	Value      *float64 `json:"value"`
	Normalized *float64 `json:"normalized"`
	Detail     string   `json:"detail"`
}

// Tenants is the answer of GET /v1/tenants.
type Tenants struct {
	Tenants []Tenant `json:"tenants"`
}

// Tenant is one tenant the database holds.
type Tenant struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at"`
}
