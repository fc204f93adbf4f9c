package seal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/engram-dev/engram/memory"
)

// clearFacts are the members of a semantic fact's payload kept in the
// clear beside its sealed payload: the fact's identity, which the
// database's one-active-fact index reads (§7). Its object, evidence and
// everything else are sealed.
var clearFacts = []string{"subject", "predicate", "validity"}

// A sealed episode's payload keeps in the clear the references of its
// timeline's entries, as "refs": [{"ref": "evt://…"}], and a sealed entry
// its "ref": references name events, not what they say, and consolidation
// joins them to the staged events it learns from.

// appended are the parts of an episode that grow by entries stored beside
// its payload (episode_entries): the store merges them into the payload it
// reads, sealed or not, and [Sealer.OpenPayload] opens each.
var appended = []string{"timeline", "tool_graph"}

// SealPayload seals a record's payload for tenant: {"kind": …, "sealed":
// …}, and a fact's identity in the clear. A payload already sealed is
// returned as it is.
func (s *Sealer) SealPayload(ctx context.Context, tenant string, typ memory.Type, payload json.RawMessage) (json.RawMessage, error) {
	if IsSealed(payload) {
		return payload, nil
	}
	env, err := s.seal(ctx, tenant, payload)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"kind": typ, "sealed": env}
	if typ == memory.Episodic {
		// The events an episode's timeline points to, by reference only
		// (evt://<id>): consolidation joins them to their staged events.
		var p struct {
			Timeline []struct {
				Ref string `json:"ref"`
			} `json:"timeline"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			return nil, fmt.Errorf("seal payload: %w", err)
		}
		refs := make([]map[string]string, 0, len(p.Timeline))
		for _, e := range p.Timeline {
			if e.Ref != "" {
				refs = append(refs, map[string]string{"ref": e.Ref})
			}
		}
		out["refs"] = refs
	}
	if typ == memory.Semantic {
		var p map[string]json.RawMessage
		if err := json.Unmarshal(payload, &p); err != nil {
			return nil, fmt.Errorf("seal payload: %w", err)
		}
		for _, k := range clearFacts {
			if v, ok := p[k]; ok {
				out[k] = v
			}
		}
	}
	return json.Marshal(out)
}

// OpenPayload returns a record's payload in the clear: its sealed payload
// opened, the entries the store merged into an episode's timeline and tool
// graph after it (sealed or not) appended to its own, and members the
// database added beside a sealed payload (an episode's outcome) kept. A
// payload with nothing sealed is returned as it is.
func (s *Sealer) OpenPayload(ctx context.Context, tenant string, payload json.RawMessage) (json.RawMessage, error) {
	if len(payload) == 0 || payload[0] != '{' || !bytes.Contains(payload, []byte(`"sealed"`)) {
		return payload, nil
	}
	var outer map[string]json.RawMessage
	if err := json.Unmarshal(payload, &outer); err != nil {
		return nil, fmt.Errorf("open payload: %w", err)
	}
	base, opened := outer, false
	if raw, ok := outer["sealed"]; ok {
		opened = true
		var env envelope
		if err := json.Unmarshal(raw, &env); err != nil || env.Key < 1 {
			return nil, errors.New("open payload: malformed sealed value")
		}
		plain, err := s.open(ctx, tenant, env)
		if err != nil {
			return nil, err
		}
		base = nil
		if err := json.Unmarshal(plain, &base); err != nil {
			return nil, fmt.Errorf("open payload: %w", err)
		}
		for k, v := range outer {
			switch {
			case k == "sealed" || k == "refs":
			case slices.Contains(appended, k):
				var mine, added []json.RawMessage
				if b, ok := base[k]; ok {
					if err := json.Unmarshal(b, &mine); err != nil {
						return nil, fmt.Errorf("open payload %s: %w", k, err)
					}
				}
				if err := json.Unmarshal(v, &added); err != nil {
					return nil, fmt.Errorf("open payload %s: %w", k, err)
				}
				if base[k], err = json.Marshal(append(mine, added...)); err != nil {
					return nil, err
				}
			default:
				if _, in := base[k]; !in {
					base[k] = v
				}
			}
		}
	}
	for _, part := range appended {
		var list []json.RawMessage
		if raw, ok := base[part]; !ok || json.Unmarshal(raw, &list) != nil {
			continue
		}
		changed := false
		for i, e := range list {
			if IsSealed(e) {
				plain, err := s.Open(ctx, tenant, e)
				if err != nil {
					return nil, err
				}
				list[i], changed = plain, true
			}
		}
		if changed {
			b, err := json.Marshal(list)
			if err != nil {
				return nil, err
			}
			base[part], opened = b, true
		}
	}
	if !opened {
		return payload, nil // it only mentioned "sealed"
	}
	return json.Marshal(base)
}

// OpenRecords opens the payloads of a tenant's records in place: every
// read path calls it once on what it read, before using a payload.
func (s *Sealer) OpenRecords(ctx context.Context, tenant string, recs []memory.Record) error {
	for i := range recs {
		p, err := s.OpenPayload(ctx, tenant, recs[i].Payload)
		if err != nil {
			return fmt.Errorf("record %s: %w", recs[i].ID, err)
		}
		recs[i].Payload = p
	}
	return nil
}

// OpenRecord opens one record's payload in place.
func (s *Sealer) OpenRecord(ctx context.Context, tenant string, rec *memory.Record) error {
	p, err := s.OpenPayload(ctx, tenant, rec.Payload)
	if err != nil {
		return fmt.Errorf("record %s: %w", rec.ID, err)
	}
	rec.Payload = p
	return nil
}
