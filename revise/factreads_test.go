package revise_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
)

// factAbout is a fact of agent-1 about subject, derived from episode.
func factAbout(subject, object string, conds map[string]any, confidence float64, episode uuid.UUID, sources ...memory.Source) memory.Record {
	validity := map[string]any{"mode": "global"}
	if conds != nil {
		validity = map[string]any{"mode": "conditional", "conditions": conds}
	}
	p, _ := json.Marshal(map[string]any{"kind": "semantic", "subject": subject, "predicate": "build_tool", "object": object, "validity": validity})
	return memory.Record{Type: memory.Semantic, Confidence: confidence, Payload: p, AgentID: "agent-1",
		Provenance: memory.Provenance{Sources: sources}, Relations: []memory.Relation{{Predicate: memory.DerivedFrom, TargetID: episode}}}
}

// A batch of facts observed together (Tx.ObserveFacts, the policy
// plane's way) is decided exactly as the same facts observed one at a
// time (Tx.ObserveFact), under every contradiction policy: the same
// outcome or refusal for each, and the same memory after — although the
// batch reads what its gates need once, ahead, and its own writes (a
// fact created, merged, superseded, contested) change what the later
// facts of the same key must see.
func TestObserveFactsDecidesAsOneAtATime(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{revise.PolicyReview, revise.PolicySupersede, revise.PolicyContest, revise.PolicyFork, revise.PolicyEvidence} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			var outcomes [2][]string
			var memories [2][]string
			for run := range 2 {
				b := setup(t, func(g *revise.Gates) {
					g.Contradiction.Policy = policy
					g.Reputation.MinWrites = 4 // the agent is judged within the batch
				})
				ep, err := b.w.Create(b.ctx, "acme", memory.Record{Type: memory.Episodic, Confidence: 1,
					Payload: json.RawMessage(`{"kind":"episodic","timeline":[]}`)}, b.ch)
				require.NoError(t, err)
				// In memory before the batch: a fact the batch absorbs and
				// contradicts.
				b.admit(t, factAbout("s4", "gradle", nil, 0.7, ep.ID, src("tool_call", "call://0")))

				batch := []memory.Record{
					factAbout("s1", "make", nil, 0.6, ep.ID, src("tool_call", "call://a")),
					factAbout("s1", "make", nil, 0.6, ep.ID, src("tool_call", "call://a")),   // absorbed
					factAbout("s1", "make", nil, 0.6, ep.ID, src("tool_call", "call://b")),   // merged
					factAbout("s1", "ninja", nil, 0.5, ep.ID, src("observation", "obs://c")), // contradicts, weaker
					factAbout("s2", "bazel", map[string]any{"os": "linux"}, 0.8, ep.ID, src("tool_call", "call://d")),
					factAbout("s2", "bazel", map[string]any{"os": "mac"}, 0.8, ep.ID, src("tool_call", "call://e")), // disjoint
					factAbout("s1", "ninja", nil, 1, ep.ID, src("human", "human://f"), src("human", "human://g"), src("outcome", "out://h")),
					factAbout("s3", "x", nil, 0.9, ep.ID, src(revise.SourceReasoning, "thought://i")), // refused: self evidence
					factAbout("s2", "bazel", map[string]any{"os": "linux"}, 0.8, ep.ID, src("tool_call", "call://j")),
					factAbout("s4", "gradle", nil, 0.7, ep.ID, src("tool_call", "call://0")), // absorbed
					factAbout("s4", "maven", nil, 0.9, ep.ID, src("human", "human://k"), src("human", "human://l")),
					factAbout("s1", "make", nil, 0.6, ep.ID, src("event", "evt://m")),
					factAbout("s4", "maven", nil, 0.9, ep.ID, src("human", "human://n")),
					factAbout("s5", "cargo", nil, 0.7, ep.ID, src("record", "record://"+ep.ID.String())),
				}
				err = b.w.InTx(b.ctx, func(ctx context.Context, tx *revise.Tx) error {
					outcomes[run] = outcomes[run][:0]
					note := func(a revise.Admission, err error) {
						var re *revise.RejectedError
						switch {
						case err == nil:
							outcomes[run] = append(outcomes[run], string(a.Outcome))
						case errors.As(err, &re):
							outcomes[run] = append(outcomes[run], "refused by "+re.Gate+": "+re.Reason)
						default:
							outcomes[run] = append(outcomes[run], "error: "+err.Error())
						}
					}
					if run == 0 {
						for _, rec := range batch {
							note(tx.ObserveFact(ctx, "acme", rec, b.ch))
						}
						return nil
					}
					obs := make([]revise.Observation, len(batch))
					for i, rec := range batch {
						obs[i] = revise.Observation{Record: rec, Change: b.ch}
					}
					as, refused, err := tx.ObserveFacts(ctx, "acme", obs)
					if err != nil {
						return err
					}
					for i := range as {
						note(as[i], refused[i])
					}
					return nil
				})
				require.NoError(t, err)
				rows, err := b.pool.Query(b.ctx, `
SELECT subject || ' ' || (payload ->> 'object') || ' ' || coalesce(payload -> 'validity' ->> 'conditions', '') || ' ' || status || ' v' || version
	|| ' ' || round(confidence::numeric, 3) || ' ' || jsonb_array_length(provenance -> 'sources')
FROM records WHERE tenant_id = 'acme' AND type = 'semantic' ORDER BY 1`)
				require.NoError(t, err)
				for rows.Next() {
					var s string
					require.NoError(t, rows.Scan(&s))
					memories[run] = append(memories[run], s)
				}
				require.NoError(t, rows.Err())
				var reviews, audits, reputation string
				require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*)::text FROM reviews WHERE tenant_id = 'acme'`).Scan(&reviews))
				require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT string_agg(action || '=' || n, ',' ORDER BY action) FROM (
					SELECT action, count(*) AS n FROM audit_log WHERE tenant_id = 'acme' GROUP BY action) a`).Scan(&audits))
				require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT format('%s/%s/%s/%s', writes, accepted, rejected, contradictions)
					FROM agent_reputation WHERE tenant_id = 'acme' AND agent_id = 'agent-1'`).Scan(&reputation))
				memories[run] = append(memories[run], "reviews "+reviews, "audit "+audits, "reputation "+reputation)
			}
			require.Len(t, outcomes[1], 14)
			require.Equal(t, outcomes[0], outcomes[1], "each fact's outcome")
			require.Equal(t, memories[0], memories[1], "memory after the batch")
			t.Log(fmt.Sprint(outcomes[1]))
		})
	}
}
