package revise_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

type bundle struct {
	ctx  context.Context
	pool *pgxpool.Pool
	w    *revise.Writer
	ch   revise.Change
}

const signingKey = "a-provenance-signing-key-of-32-bytes-or-more"

// setup is a migrated schema with tenant acme and the write path over it,
// its gates configured by edit.
func setup(t *testing.T, edit ...func(*revise.Gates)) *bundle {
	t.Helper()
	db := pgtest.NewSchema(t)
	ctx := context.Background()
	require.NoError(t, store.EnsureTenant(ctx, db.Pool, "acme"))
	g := revise.Gates{Provenance: revise.ProvenanceConfig{Keys: []revise.SigningKey{{ID: "k1", Secret: signingKey}}, Active: "k1"}}
	for _, e := range edit {
		e(&g)
	}
	require.NoError(t, g.Validate())
	return &bundle{ctx: ctx, pool: db.Pool, w: revise.New(db.Pool, revise.Config{Gates: g}), ch: revise.Change{Actor: "test"}}
}

func fact(object string, conds map[string]any, confidence float64, sources ...memory.Source) memory.Record {
	validity := map[string]any{"mode": "global"}
	if conds != nil {
		validity = map[string]any{"mode": "conditional", "conditions": conds}
	}
	p, _ := json.Marshal(map[string]any{"kind": "semantic", "subject": "repo", "predicate": "build_tool", "object": object, "validity": validity})
	return memory.Record{Type: memory.Semantic, Confidence: confidence, Payload: p, Provenance: memory.Provenance{Sources: sources}}
}

func src(kind, ref string) memory.Source { return memory.Source{Kind: kind, Ref: ref} }

func (b *bundle) admit(t *testing.T, rec memory.Record) revise.Admission {
	t.Helper()
	a, err := b.w.Admit(b.ctx, "acme", rec, b.ch)
	require.NoError(t, err)
	return a
}

func (b *bundle) rejected(t *testing.T, rec memory.Record, gate, reason string) *revise.RejectedError {
	t.Helper()
	_, err := b.w.Admit(b.ctx, "acme", rec, b.ch)
	var re *revise.RejectedError
	require.ErrorAs(t, err, &re)
	require.Equal(t, gate, re.Gate)
	require.Equal(t, reason, re.Reason)
	return re
}

func (b *bundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(b.ctx, sql, args...).Scan(&n))
	return n
}

// The evidence gate accepts evidence from outside the agent, refuses a
// fact or procedure resting on the agent's own reasoning only
// (write-path RFC §12.11.3) or citing a record that is not the tenant's,
// and, with the diversity rule on, one with no external source
// (§12.11.4).
func TestEvidenceGate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.admit(t, fact("make", nil, 0.8, src("tool_call", "call://1"), src(revise.SourceReasoning, "thought://1")))
	require.Equal(t, revise.Created, a.Outcome)

	b.rejected(t, fact("bazel", map[string]any{"os": "mac"}, 0.9, src(revise.SourceReasoning, "thought://2")), revise.GateEvidence, revise.ReasonSelfEvidence)
	re := b.rejected(t, fact("bazel", map[string]any{"os": "bsd"}, 0.9, src(revise.SourceRecord, "record://"+uuid.NewString())),
		revise.GateEvidence, revise.ReasonUnknownEvidence)
	require.Len(t, re.RecordIDs, 1)

	strict := setup(t, func(g *revise.Gates) { g.Evidence.RequireExternal = true })
	strict.rejected(t, fact("ninja", nil, 0.9, src(revise.SourceRecord, "record://"+a.Record.ID.String())), revise.GateEvidence, revise.ReasonNoExternal)

	// Evidence below the layer's minimum authority defers to review.
	picky := setup(t, func(g *revise.Gates) { g.Evidence.MinAuthority = map[memory.Type]float64{memory.Semantic: 0.7} })
	require.Equal(t, revise.Queued, picky.admit(t, fact("make", nil, 0.9, src("event", "evt://1"))).Outcome)
	require.Equal(t, revise.Created, picky.admit(t, fact("make", map[string]any{"os": "linux"}, 0.9, src("tool_call", "call://1"))).Outcome)
	require.Zero(t, b.count(t, `SELECT count(*) FROM records WHERE status = 'active' AND payload ->> 'object' <> 'make'`), "a refusal writes nothing")
}

// The contradiction gate under the policy review, an operator's choice
// (§12.2.4): a contradicting fact no more credible than the one in force
// is refused; a more credible one goes to review as a draft, out of the
// active set, with a proposal to supersede; a refinement of a broader fact, or a fact of disjoint conditions, is no
// contradiction. The policies supersede and contest decide instead.
func TestContradictionGate(t *testing.T) {
	t.Parallel()
	b := setup(t, func(g *revise.Gates) { g.Contradiction.Policy = revise.PolicyReview })
	inForce := b.admit(t, fact("make", nil, 0.8, src("tool_call", "call://1"))).Record

	re := b.rejected(t, fact("bazel", nil, 0.8, src("event", "evt://2")), revise.GateContradiction, string(revise.ReasonContradiction))
	require.Equal(t, []uuid.UUID{inForce.ID}, re.RecordIDs)

	a := b.admit(t, fact("bazel", nil, 1, src("human", "person://ops")))
	require.Equal(t, revise.Queued, a.Outcome)
	require.Equal(t, memory.Draft, a.Record.Status)
	require.NotEmpty(t, a.Reasons)
	page, err := store.List(b.ctx, b.pool, "acme", store.Filter{})
	require.NoError(t, err)
	require.Len(t, page.Records, 1, "the draft is not in the active set")

	require.Equal(t, revise.Created, b.admit(t, fact("bazel", map[string]any{"os": "mac"}, 0.5)).Outcome, "a refinement")

	sup := setup(t, func(g *revise.Gates) { g.Contradiction.Scopes = map[string]string{"": revise.PolicySupersede} })
	old := sup.admit(t, fact("make", nil, 0.9)).Record
	a = sup.admit(t, fact("bazel", nil, 0.1))
	require.Equal(t, []uuid.UUID{old.ID}, a.Replaced)
	old, err = store.Get(sup.ctx, sup.pool, "acme", old.ID)
	require.NoError(t, err)
	require.Equal(t, memory.Superseded, old.Status)

	con := setup(t, func(g *revise.Gates) { g.Contradiction.Policy = revise.PolicyContest })
	old = con.admit(t, fact("make", map[string]any{"os": "linux"}, 0.9)).Record
	a = con.admit(t, fact("bazel", map[string]any{"os": "linux"}, 0.1))
	require.Equal(t, revise.Contested, a.Outcome)
	require.Equal(t, memory.Contested, a.Record.Status)
	require.Equal(t, []uuid.UUID{old.ID}, a.Contested)
}

// The dedup gate (§12.3): the same content again is absorbed and the
// answer is the record in force; the same fact with new evidence merges
// into it as its next version; a procedure with the same triggers and
// another recipe is a new record.
func TestDedupGate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.admit(t, fact("make", nil, 0.7, src("event", "evt://1"))).Record
	a := b.admit(t, fact("make", nil, 0.7, src("event", "evt://1")))
	require.Equal(t, revise.Absorbed, a.Outcome)
	require.Equal(t, first.ID, a.Record.ID)
	require.Equal(t, 1, a.Record.Version)

	a = b.admit(t, fact("  MAKE ", nil, 0.9, src("tool_call", "call://2")))
	require.Equal(t, revise.Merged, a.Outcome, "a structural duplicate with more evidence")
	require.Equal(t, first.ID, a.Record.ID)
	require.Equal(t, 2, a.Record.Version)
	require.InDelta(t, 1-0.4*0.2, a.Record.Confidence, 1e-9, "above the 0.9 stated: an event and a tool call (substrate RFC §7)")
	require.Len(t, a.Record.Provenance.Sources, 2)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM records WHERE type = 'semantic'`))

	proc := func(step string) memory.Record {
		p, _ := json.Marshal(map[string]any{"kind": "competence", "skill_name": "fix", "triggers": []any{map[string]any{"signal": "ld: cache mismatch"}},
			"recipe": []any{map[string]any{"step": step}}})
		return memory.Record{Type: memory.Competence, Confidence: 0.6, Payload: p}
	}
	p1 := b.admit(t, proc("clear the cache")).Record
	require.Equal(t, p1.ID, b.admit(t, proc("clear the cache")).Record.ID)
	// The same skill and triggers with another recipe: a conflict,
	// deferred to a reviewer with a proposal to replace the one in force.
	a = b.admit(t, proc("relink"))
	require.Equal(t, revise.Queued, a.Outcome)
	require.Equal(t, p1.ID, a.Review.Proposal.Supersedes)

	off := setup(t, func(g *revise.Gates) { g.Dedup.Off = true })
	x := off.admit(t, proc("clear the cache")).Record
	require.NotEqual(t, x.ID, off.admit(t, proc("clear the cache")).Record.ID, "dedup off")
}

// The provenance gate (§12.4): every admitted record is stamped and
// signed; the audit finds a stamp altered after the fact, once; evidence
// that leads back to the record being revised is circular reinforcement
// (§12.11.4) and refused.
func TestProvenanceGate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.admit(t, fact("make", nil, 0.8, src("tool_call", "call://1"))).Record
	var stamp revise.Stamp
	var raw []byte
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT stamp FROM provenance WHERE record_id = $1`, a.ID).Scan(&raw))
	require.NoError(t, json.Unmarshal(raw, &stamp))
	require.Equal(t, "test", stamp.Actor)
	require.Equal(t, 0.8, stamp.EvidenceAuthority)
	require.Equal(t, revise.ApprovalNotRequired, stamp.Approval)
	require.InDelta(t, 0.15*0.8+0.30*0.8+0.25*0.8, stamp.AdjustedConfidence, 1e-9)

	res, err := b.w.AuditProvenance(b.ctx, store.Key{}, 100, nil)
	require.NoError(t, err)
	require.Equal(t, revise.ProvenanceAudit{Checked: 1, Valid: 1}, res)

	_, err = b.pool.Exec(b.ctx, `UPDATE provenance SET stamp = jsonb_set(stamp, '{actor}', '"mallory"') WHERE record_id = $1`, a.ID)
	require.NoError(t, err)
	res, err = b.w.AuditProvenance(b.ctx, store.Key{}, 100, nil)
	require.NoError(t, err)
	require.Equal(t, revise.ProvenanceAudit{Checked: 1, Tampered: 1, NewlyTampered: 1}, res)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_log WHERE record_id = $1 AND action = 'provenance_tampered'`, a.ID))
	res, err = b.w.AuditProvenance(b.ctx, store.Key{}, 100, nil)
	require.NoError(t, err)
	require.Equal(t, 0, res.NewlyTampered, "reported once")

	// B rests on A; superseding A with a fact resting on B is circular.
	bp, _ := json.Marshal(map[string]any{"kind": "semantic", "subject": "repo", "predicate": "ci", "object": "github", "validity": map[string]any{"mode": "global"}})
	derived := b.admit(t, memory.Record{Type: memory.Semantic, Confidence: 0.7, Payload: bp,
		Provenance: memory.Provenance{Sources: []memory.Source{src(revise.SourceRecord, "record://"+a.ID.String()), src("event", "evt://9")}}}).Record
	_, _, err = b.w.Supersede(b.ctx, "acme", a.ID, 0, fact("cmake", nil, 0.9, src(revise.SourceRecord, "record://"+derived.ID.String())), b.ch)
	var re *revise.RejectedError
	require.ErrorAs(t, err, &re)
	require.Equal(t, revise.ReasonProvenanceCycle, re.Reason)
	got, err := store.Get(b.ctx, b.pool, "acme", a.ID)
	require.NoError(t, err)
	require.Equal(t, memory.Active, got.Status, "nothing changed")
}

// The approval gate (§12.6.2): with it on, a write whose risk reaches the
// review threshold is queued as a draft with its risk and factors; one
// below it is created.
func TestApprovalGate(t *testing.T) {
	t.Parallel()
	b := setup(t, func(g *revise.Gates) { g.Approval.Enabled = true })
	a := b.admit(t, fact("make", nil, 0.3))
	require.Equal(t, revise.Queued, a.Outcome)
	require.NotNil(t, a.Risk)
	require.GreaterOrEqual(t, a.Risk.Score, 0.3)
	require.Equal(t, 0.8, a.Risk.Factors["layer"])

	low := setup(t, func(g *revise.Gates) {
		g.Approval.Enabled = true
		g.Approval.Review, g.Approval.Block = ptr(0.9), ptr(0.95)
	})
	a = low.admit(t, fact("make", nil, 0.9, src("human", "person://ops")))
	require.Equal(t, revise.Created, a.Outcome)
	require.Equal(t, revise.TierAuto, a.Risk.Tier)

	// Episodes are not held for approval.
	ep, _ := json.Marshal(map[string]any{"kind": "episodic", "timeline": []any{}})
	require.Equal(t, revise.Created, b.admit(t, memory.Record{Type: memory.Episodic, Payload: ep}).Outcome)
}

func ptr[T any](v T) *T { return &v }

// A bad gate configuration is refused with the field named.
func TestGatesValidate(t *testing.T) {
	t.Parallel()
	for want, g := range map[string]revise.Gates{
		"write_path.evidence.authority.rumour":     {Evidence: revise.EvidenceConfig{Authority: map[string]float64{"rumour": 0.1}}},
		"write_path.contradiction.policy":          {Contradiction: revise.ContradictionConfig{Policy: "ignore"}},
		"write_path.contradiction.scopes.prod":     {Contradiction: revise.ContradictionConfig{Scopes: map[string]string{"prod": "x"}}},
		"write_path.approval.weights":              {Approval: revise.ApprovalGateConfig{Weights: &revise.RiskWeights{Layer: 1, Novelty: 1}}},
		"write_path.provenance.keys[0].secret":     {Provenance: revise.ProvenanceConfig{Keys: []revise.SigningKey{{ID: "k", Secret: "short"}}, Active: "k"}},
		"write_path.provenance.active":             {Provenance: revise.ProvenanceConfig{Keys: []revise.SigningKey{{ID: "k", Secret: signingKey}}, Active: "j"}},
		"write_path.evidence.weights":              {Evidence: revise.EvidenceConfig{Weights: &revise.ConfidenceWeights{Agent: 1, Approved: 1}}},
		"write_path.approval: thresholds must sat": {Approval: revise.ApprovalGateConfig{Review: ptr(0.8), Block: ptr(0.2)}},
		"write_path.contradiction.evidence_ratio":  {Contradiction: revise.ContradictionConfig{Policy: revise.PolicyEvidence, EvidenceRatio: ptr(1.0)}},
	} {
		err := g.Validate()
		require.Error(t, err, want)
		require.Contains(t, err.Error(), want)
	}
	require.NoError(t, revise.DefaultGates().Validate())
	require.NoError(t, revise.Gates{Contradiction: revise.ContradictionConfig{Policy: revise.PolicyEvidence,
		Scopes: map[string]string{"prod": revise.PolicyEvidence}, EvidenceRatio: ptr(1.5)}}.Validate())
}

// An agent whose writes keep being refused, or whose facts fail those who
// use them, falls below the reputation threshold, and from then on every
// fact it writes goes to review (write-path RFC §12.11.5); another agent's
// do not.
func TestLowReputationSendsWritesToReview(t *testing.T) {
	t.Parallel()
	b := setup(t, func(g *revise.Gates) { g.Reputation.MinWrites = 4 })
	by := func(agent string, r memory.Record) memory.Record { r.AgentID = agent; return r }
	b.admit(t, by("honest", fact("make", nil, 0.9, src("human", "person://lead"))))
	for _, obj := range []string{"bazel", "ninja", "scons", "gradle"} {
		_, err := b.w.Admit(b.ctx, "acme", by("liar", fact(obj, nil, 0.5, src("event", "evt://x"))), b.ch)
		var re *revise.RejectedError
		require.ErrorAs(t, err, &re, obj)
	}
	rep, err := store.GetReputation(b.ctx, b.pool, "acme", "liar")
	require.NoError(t, err)
	require.Equal(t, store.Reputation{AgentID: "liar", Writes: 4, Rejected: 4, Contradictions: 4, UpdatedAt: rep.UpdatedAt}, rep)
	score, judged := revise.ReputationConfig{MinWrites: 4}.Score(rep)
	require.True(t, judged)
	require.Zero(t, score)

	other := func(agent, subject string) memory.Record {
		p, _ := json.Marshal(map[string]any{"kind": "semantic", "subject": subject, "predicate": "owner", "object": "ops", "validity": map[string]any{"mode": "global"}})
		return memory.Record{Type: memory.Semantic, Confidence: 0.9, AgentID: agent, Payload: p, Provenance: memory.Provenance{Sources: []memory.Source{src("human", "person://x")}}}
	}
	a := b.admit(t, other("liar", "billing"))
	require.Equal(t, revise.Queued, a.Outcome)
	require.Contains(t, a.Reasons[0], "reputation of 0.00, below 0.50")
	require.Equal(t, revise.Created, b.admit(t, other("honest", "search")).Outcome)

	// Feedback counts too: failures of the honest agent's facts.
	rec := b.admit(t, other("honest", "payments")).Record
	for i := range 6 {
		err := b.w.InTx(b.ctx, func(ctx context.Context, tx *revise.Tx) error {
			_, _, err := tx.FeedbackTargets(ctx, "acme", revise.Feedback{Scope: uuid.NewString(), RecordIDs: []uuid.UUID{rec.ID}, Outcome: revise.OutcomeFailure}, rec.CreatedAt)
			return err
		})
		require.NoError(t, err, i)
	}
	rep, err = store.GetReputation(b.ctx, b.pool, "acme", "honest")
	require.NoError(t, err)
	require.Equal(t, int64(6), rep.Failures)
	require.Equal(t, revise.Created, b.admit(t, other("honest", "inventory")).Outcome, "three writes: not judged yet")
	require.Equal(t, revise.Queued, b.admit(t, other("honest", "ledger")).Outcome)
}

// A write in the approval gate's sync tier waits for a reviewer; with no
// decision by its deadline it is refused, fail-closed (write-path RFC
// §12.6.5), and its draft retracted.
func TestSyncApprovalRefusesAtItsDeadline(t *testing.T) {
	t.Parallel()
	b := setup(t, func(g *revise.Gates) {
		g.Approval.Enabled = true
		g.Approval.Review, g.Approval.Block = ptr(0.1), ptr(0.2)
		g.Reviews.SyncMaxWait = 300 * time.Millisecond
	})
	_, err := b.w.Admit(b.ctx, "acme", fact("make", nil, 0.3), b.ch)
	var te *revise.ApprovalTimeoutError
	require.ErrorAs(t, err, &te)
	got, err := store.Get(b.ctx, b.pool, "acme", te.RecordID)
	require.NoError(t, err)
	require.Equal(t, memory.Retracted, got.Status)
	require.Zero(t, b.count(t, `SELECT count(*) FROM records WHERE status IN ('active', 'contested', 'draft')`))
}

// The authority table the gates weigh evidence by is the one retrieval is
// handed (write-path RFC §12.4.6): the configured kinds over the defaults,
// the configured unstated authority, and a copy the caller cannot change.
func TestGatesAuthorityIsTheConfiguredTable(t *testing.T) {
	t.Parallel()
	require.Equal(t, memory.DefaultAuthority(), revise.DefaultGates().Authority())
	g := revise.Gates{Evidence: revise.EvidenceConfig{Authority: map[string]float64{"event": 0.7}, Unstated: ptr(0.4)}}
	a := g.Authority()
	require.Equal(t, 0.7, a.Of("event"))
	require.Equal(t, 1.0, a.Of("human"), "kinds it does not name keep their default")
	require.Equal(t, 0.4, a.Best(nil))
	a.Kinds["event"] = 0
	require.Equal(t, 0.7, g.Authority().Of("event"))
	require.Equal(t, 0.7, revise.New(nil, revise.Config{Gates: g}).Authority().Of("event"))
}
