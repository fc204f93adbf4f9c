package retrieve

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/policy"
)

// Withheld is what summarising puts in place of content.
const Withheld = "[WITHHELD]"

// structural are the payload keys summarising keeps: what a record is and
// how it is shaped, not what it says (substrate RFC §13: "structure kept").
var structural = []string{
	"kind", "subject", "predicate", "mode", "skill_name", "plan_id", "version", "intent",
	"id", "op", "from", "to", "event_kind", "t", "ref", "state", "thread_id",
	"successes", "failures", "failure_rate", "last_success_at", "last_failure_at", "start", "end",
}

// gate applies trust gating to a candidate the caller's clearance allows
// (the store returned nothing above it): a record at the limit of the
// clearance is returned, summarised, redacted or withheld as configured
// (substrate RFC §13, §15.9). The stored record never changes: gating works
// on a copy, and redacts with rd, the policy's. ok is false when the record
// is withheld.
func (r *Retriever) gate(cfg Config, rd *policy.Redactor, c memory.Sensitivity, cand candidate) (Item, bool, error) {
	if cand.rec.Sensitivity.Rank() > c.Rank() {
		// The store never returns these; refuse rather than trust it.
		return Item{}, false, nil
	}
	action := Return
	if cand.rec.Sensitivity == c {
		if a, ok := cfg.Trust.AtLimit[c]; ok {
			action = a
		}
	}
	rec := cand.rec
	rec.Salience = cand.why.Salience
	rec.Relations = nil
	switch action {
	case Withhold:
		return Item{}, false, nil
	case Summarise:
		p, err := summarise(rec.Payload)
		if err != nil {
			return Item{}, false, err
		}
		rec.Payload, rec.Tags, rec.Provenance = p, []string{}, memory.Provenance{Sources: []memory.Source{}}
	case Redact:
		var v any
		if err := json.Unmarshal(rec.Payload, &v); err != nil {
			return Item{}, false, fmt.Errorf("decode payload of %s: %w", rec.ID, err)
		}
		v, _ = rd.Value(v)
		p, err := json.Marshal(v)
		if err != nil {
			return Item{}, false, fmt.Errorf("encode payload of %s: %w", rec.ID, err)
		}
		rec.Payload = p
		rec.Tags, _ = rd.Strings(rec.Tags)
	}
	if rec.Tags == nil {
		rec.Tags = []string{}
	}
	return Item{Record: rec, Score: cand.score, Gating: action, Tokens: tokens(rec), Why: cand.why}, true, nil
}

// summarise replaces every string and object key's value in a payload
// with [Withheld], except the structural keys; numbers and booleans stay.
func summarise(payload json.RawMessage) (json.RawMessage, error) {
	var v any
	if err := json.Unmarshal(payload, &v); err != nil {
		return nil, fmt.Errorf("decode payload: %w", err)
	}
	return json.Marshal(summariseValue(v, false))
}

func summariseValue(v any, keep bool) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = summariseValue(x, slices.Contains(structural, k))
		}
		return t
	case []any:
		for i, x := range t {
			t[i] = summariseValue(x, keep)
		}
		return t
	case string:
		if keep {
			return t
		}
		return Withheld
	}
	return v
}
