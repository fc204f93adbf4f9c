package decay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/store"
)

// Outcome is how the records of a retrieval served the task (substrate RFC
// §15.6).
type Outcome string

// Outcomes.
const (
	UsedSuccess Outcome = "used_success" // used, and the task succeeded: reinforce
	UsedFailure Outcome = "used_failure" // used, and the task failed: penalise
	Unused      Outcome = "unused"       // retrieved but not used: penalise a little
)

// Outcomes lists every outcome.
var Outcomes = []Outcome{UsedSuccess, UsedFailure, Unused}

// maxScopeLength bounds a retrieval id or idempotency key.
const maxScopeLength = 200

// FeedbackRequest reports an outcome for records. RetrievalID names a
// logged answer of the retrieval API: the outcome applies to exactly the
// records it returned, or to those of RecordIDs, which must be among them.
// Without a retrieval, RecordIDs names the records and Key, when set, is
// an idempotency key. Feedback counts once per (retrieval or key, record);
// without either, every call counts.
type FeedbackRequest struct {
	RetrievalID string      `json:"retrieval_id,omitempty"`
	Key         string      `json:"key,omitempty"`
	RecordIDs   []uuid.UUID `json:"record_ids"`
	Outcome     Outcome     `json:"outcome"`
}

// FeedbackResult says what the feedback did.
type FeedbackResult struct {
	// Applied are the records it changed, as they are now.
	Applied []memory.Record
	// Duplicate had feedback in the same scope already; NotLive have left
	// the active set. Neither changed.
	Duplicate []uuid.UUID
	NotLive   []uuid.UUID
}

func (req FeedbackRequest) check() error {
	var bad []schemas.Violation
	if !slices.Contains(Outcomes, req.Outcome) {
		bad = append(bad, schemas.Violation{Pointer: "/outcome", Message: fmt.Sprintf("%q is not used_success, used_failure or unused", req.Outcome)})
	}
	if req.RetrievalID != "" && req.Key != "" {
		bad = append(bad, schemas.Violation{Pointer: "/key", Message: "give a retrieval_id or a key, not both"})
	}
	if len(req.RetrievalID) > maxScopeLength {
		bad = append(bad, schemas.Violation{Pointer: "/retrieval_id", Message: fmt.Sprintf("is longer than %d characters", maxScopeLength)})
	}
	if len(req.Key) > maxScopeLength {
		bad = append(bad, schemas.Violation{Pointer: "/key", Message: fmt.Sprintf("is longer than %d characters", maxScopeLength)})
	}
	if req.RetrievalID != "" {
		if _, err := uuid.Parse(req.RetrievalID); err != nil {
			bad = append(bad, schemas.Violation{Pointer: "/retrieval_id", Message: "is not a retrieval id (the retrieval_id of a POST /v1/retrieve answer)"})
		}
	} else if len(req.RecordIDs) == 0 {
		bad = append(bad, schemas.Violation{Pointer: "/record_ids", Message: "is required without a retrieval_id: name the records the outcome is about"})
	}
	if len(bad) > 0 {
		return &schemas.ValidationError{Violations: bad}
	}
	return nil
}

// scope is the idempotency scope of the request.
func (req FeedbackRequest) scope() string {
	switch {
	case req.RetrievalID != "":
		return "retrieval:" + req.RetrievalID
	case req.Key != "":
		return "key:" + req.Key
	}
	return "call:" + uuid.NewString()
}

// Feedback reinforces or penalises records by an outcome (substrate RFC
// §15.6), all in one transaction, set-based: a success adds the
// reinforcement gain to a record's current salience (up to [MaxSalience]),
// a failure or non-use takes its penalty away (down to zero), and in every
// case the decay restarts from now. Competence and plan records also count
// the success or failure in their payload's statistics, which is a
// revision. Unknown records (or another tenant's) refuse the whole call;
// records that left the active set, and records that already had feedback
// in this scope, are left as they are.
func (d *Decayer) Feedback(ctx context.Context, tenant string, req FeedbackRequest, ch revise.Change) (FeedbackResult, error) {
	if err := req.check(); err != nil {
		return FeedbackResult{}, err
	}
	if req.RetrievalID != "" {
		ids, err := d.retrieved(ctx, tenant, req)
		if err != nil {
			return FeedbackResult{}, err
		}
		req.RecordIDs = ids
	}
	cfg := d.settings.Config()
	now := d.clock()
	fb := revise.Feedback{Scope: req.scope(), RecordIDs: req.RecordIDs, Outcome: string(req.Outcome)}
	var res revise.FeedbackResult
	retracted := 0
	err := d.writer.InTx(ctx, func(ctx context.Context, tx *revise.Tx) error {
		todo, r, err := tx.FeedbackTargets(ctx, tenant, fb, now)
		if err != nil || len(todo) == 0 {
			res = r
			return err
		}
		reinf := make([]revise.Reinforcement, len(todo))
		for i, rec := range todo {
			reinf[i] = revise.Reinforcement{ID: rec.ID, Salience: reinforce(rec, cfg.Profiles[rec.Type], req.Outcome, now)}
			if req.Outcome == Unused || (rec.Type != memory.Competence && rec.Type != memory.PlanGraph) {
				continue
			}
			field, value, err := countOutcome(rec, req.Outcome, now)
			if err != nil {
				return err
			}
			reinf[i].Field, reinf[i].Value = field, value
			if rec.Type == memory.Competence {
				// Its confidence follows its uses, as consolidation's does.
				var perf memory.Performance
				if json.Unmarshal(value, &perf) == nil {
					c := memory.LearnedConfidence(perf.Successes, perf.Failures)
					reinf[i].Confidence = &c
				}
			}
		}
		r.Applied, err = tx.Reinforce(ctx, tenant, todo, reinf, now, ch)
		res = r
		if err != nil || req.Outcome != UsedFailure {
			return err
		}
		retracted, err = d.retractFailing(ctx, tx, tenant, r.Applied, ch)
		return err
	})
	if err != nil {
		return FeedbackResult{}, err
	}
	d.metrics.feedback.WithLabelValues(string(req.Outcome)).Add(float64(len(res.Applied)))
	d.metrics.retracted.Add(float64(retracted))
	return FeedbackResult{Applied: res.Applied, Duplicate: res.Duplicate, NotLive: res.NotLive}, nil
}

// Observed reinforces a learned record a consolidation pass saw used in
// later episodes, as feedback would have (substrate RFC §11: salience
// follows usefulness, however a use is known): each success observed
// adds the reinforcement gain, each failure takes the failure penalty,
// and its decay restarts now. The record is rec as the pass left it; its
// salience changes in place, no revision.
func (d *Decayer) Observed(ctx context.Context, tx *revise.Tx, tenant string, rec memory.Record, successes, failures int, ch revise.Change) error {
	if successes <= 0 && failures <= 0 {
		return nil
	}
	cfg := d.settings.Config()
	now := d.clock()
	sal := Current(rec, now)
	for range failures {
		sal = max(0, sal-cfg.Profiles[rec.Type].FailurePenalty)
	}
	for range successes {
		sal = max(sal, min(MaxSalience, sal+gainOf(rec, cfg.Profiles[rec.Type])))
	}
	_, err := tx.Reinforce(ctx, tenant, []memory.Record{rec}, []revise.Reinforcement{{ID: rec.ID, Salience: sal}}, now, ch)
	return err
}

// retractFailing retracts the procedures among recs (as feedback left
// them) whose uses now call for it by the retraction rule — the rule
// consolidation applies to the uses it observes, so that a procedure is
// given up the same way however its failures were reported (substrate
// RFC §8).
func (d *Decayer) retractFailing(ctx context.Context, tx *revise.Tx, tenant string, recs []memory.Record, ch revise.Change) (int, error) {
	n := 0
	for _, rec := range recs {
		if rec.Type != memory.Competence || rec.Status != memory.Active {
			continue
		}
		var p memory.CompetencePayload
		if err := json.Unmarshal(rec.Payload, &p); err != nil || p.Performance == nil {
			continue
		}
		why := d.retraction.Verdict(*p.Performance)
		if why == "" {
			continue
		}
		if _, err := tx.Retract(ctx, tenant, rec.ID, rec.Version, revise.Change{Actor: ch.Actor, Rationale: why + " (reported by feedback)", Evidence: ch.Evidence}); err != nil {
			return n, fmt.Errorf("retract procedure %s: %w", rec.ID, err)
		}
		n++
	}
	return n, nil
}

// reinforce is rec's salience after an outcome at now.
func reinforce(rec memory.Record, p Profile, o Outcome, now time.Time) float64 {
	cur := Current(rec, now)
	switch o {
	case UsedSuccess:
		return max(cur, min(MaxSalience, cur+gainOf(rec, p)))
	case UsedFailure:
		return max(0, cur-p.FailurePenalty)
	case Unused:
		return max(0, cur-p.UnusedPenalty)
	}
	return cur
}

// gainOf is rec's reinforcement gain: its own, or its type's.
func gainOf(rec memory.Record, p Profile) float64 {
	if g := rec.Lifecycle.Decay.ReinforcementGain; g != nil {
		return *g
	}
	return p.ReinforcementGain
}

// countOutcome returns the payload field of rec's statistics with a success
// or failure counted: a procedure's performance (§15A.9), a plan's metrics
// and failure rate (§15A.10). The statistics' other fields are kept.
func countOutcome(rec memory.Record, o Outcome, now time.Time) (string, json.RawMessage, error) {
	var payload struct {
		Performance json.RawMessage `json:"performance"`
		Metrics     json.RawMessage `json:"metrics"`
	}
	if err := json.Unmarshal(rec.Payload, &payload); err != nil {
		return "", nil, fmt.Errorf("decode payload of %s: %w", rec.ID, err)
	}
	key, raw := "performance", payload.Performance
	if rec.Type == memory.PlanGraph {
		key, raw = "metrics", payload.Metrics
	}
	stats := map[string]any{}
	if len(raw) > 0 && string(raw) != "null" {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&stats); err != nil {
			return "", nil, fmt.Errorf("decode %s of %s: %w", key, rec.ID, err)
		}
	}
	count := func(name string) int64 {
		n, _ := stats[name].(json.Number)
		v, _ := n.Int64()
		return max(v, 0)
	}
	successes, failures := count("successes"), count("failures")
	at := now.UTC().Format(time.RFC3339Nano)
	if o == UsedSuccess {
		successes++
		if rec.Type == memory.Competence {
			stats["last_success_at"] = at
		}
	} else {
		failures++
		if rec.Type == memory.Competence {
			stats["last_failure_at"] = at
		}
	}
	stats["successes"], stats["failures"] = successes, failures
	if rec.Type == memory.Competence {
		// The recent uses the retraction rule judges, as consolidation
		// counts the uses it observes (memory.Performance.Use).
		recent, _ := stats["recent"].(string)
		mark := "f"
		if o == UsedSuccess {
			mark = "s"
		}
		recent += mark
		if n := len(recent); n > memory.MaxRecent {
			recent = recent[n-memory.MaxRecent:]
		}
		stats["recent"] = recent
	}
	if rec.Type == memory.PlanGraph {
		stats["failure_rate"] = float64(failures) / float64(successes+failures)
	}
	b, err := json.Marshal(stats)
	if err != nil {
		return "", nil, fmt.Errorf("encode %s: %w", key, err)
	}
	return key, b, nil
}

// retrieved returns the records feedback on a logged retrieval is about:
// those it returned, or the ones the request names, which must be among
// them.
func (d *Decayer) retrieved(ctx context.Context, tenant string, req FeedbackRequest) ([]uuid.UUID, error) {
	r, err := store.GetRetrieval(ctx, d.db, tenant, uuid.MustParse(req.RetrievalID))
	if errors.Is(err, store.ErrNotFound) {
		return nil, &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: "/retrieval_id", Message: "no such retrieval"}}}
	}
	if err != nil {
		return nil, err
	}
	if len(req.RecordIDs) == 0 {
		return r.RecordIDs, nil
	}
	var bad []schemas.Violation
	for i, id := range req.RecordIDs {
		if !slices.Contains(r.RecordIDs, id) {
			bad = append(bad, schemas.Violation{Pointer: fmt.Sprintf("/record_ids/%d", i), Message: "was not returned by the retrieval"})
		}
	}
	if len(bad) > 0 {
		return nil, &schemas.ValidationError{Violations: bad}
	}
	return req.RecordIDs, nil
}
