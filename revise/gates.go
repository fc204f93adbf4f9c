package revise

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
)

// The gates of the write path (write-path RFC §12.1.2–12.1.5), in order:
// schema, evidence, contradiction, dedup, provenance, approval. Each answers
// accept, reject (a structured reason) or defer (to review); each is timed
// (engram_write_gate_duration_seconds{gate}). A write commits only when
// every gate accepts; a rejection writes nothing; a deferral stores the
// record as a draft, out of retrieval, for a reviewer.
//
// Which gates a write passes depends on its layer (§12.1.4): working memory
// and episodes are checked for schema and stamped with provenance only
// (they record what happened; there is nothing to contradict or approve),
// facts pass every gate, procedures and plans every gate but
// contradiction, which is structural and defined for facts. Revisions that
// resolve a conflict themselves (supersede, fork, contest, merge) pass
// schema, evidence and provenance: they are the resolution the
// contradiction and dedup gates would ask for.

// Gate names, as metrics and rejections name them.
const (
	GateSchema        = "schema"
	GateEvidence      = "evidence"
	GateContradiction = "contradiction"
	GateDedup         = "dedup"
	GateProvenance    = "provenance"
	GateApproval      = "approval"
)

// Source kinds of the write path beyond the canonical schema's (§12.4.3):
// an agent's own reasoning, and another memory record (ref record://<id>).
const (
	SourceReasoning = "reasoning"
	SourceRecord    = "record"
)

// Rejection reasons of the gates (structured, write-path RFC §12.1.5); a
// contradiction is [ReasonContradiction], as a reviewer's.
const (
	ReasonSelfEvidence     = "self_evidence"
	ReasonNoExternal       = "no_external_evidence"
	ReasonUnknownEvidence  = "unknown_evidence"
	ReasonProvenanceCycle  = "provenance_cycle"
	ReasonApprovalTimeout  = "approval_timeout"
	ReasonReviewerRejected = "rejected_by_reviewer"
)

// Contradiction policies: what the contradiction gate does with a fact
// that contradicts a live one (§12.2.4 and the revision policies of
// substrate RFC §7).
const (
	// PolicyReview: defer to review with a supersession proposal when the
	// newcomer's adjusted confidence is higher, reject it when not
	// (§12.2.4). An operator's choice for a scope where a person must
	// decide: substrate RFC §15B asks memory to be created and revised
	// without approval, so it is not the default.
	PolicyReview = "review"
	// PolicySupersede: the newcomer replaces the facts it contradicts.
	PolicySupersede = "supersede"
	// PolicyContest: the newcomer and the facts it contradicts are all
	// contested until resolved.
	PolicyContest = "contest"
	// PolicyFork: a newcomer with other conditions coexists as a
	// conditional variant; one with the same conditions contests.
	PolicyFork = "fork"
	// PolicyEvidence, the default: the evidence decides, with no reviewer
	// (substrate RFC §7's revision rules, §15B's "automatic memory
	// creation without user approval"): a newcomer whose evidence weight is at
	// least [ContradictionConfig.EvidenceRatio] times that of every fact
	// it contradicts supersedes them; one whose weight is at most theirs
	// divided by the ratio is refused with the contradiction report (as
	// review refuses one); in between, the evidence is comparable and they
	// are all contested, until more evidence for one side outweighs the
	// others by the ratio and it supersedes them. Facts with disjoint
	// conditions do not contradict: they coexist as conditional variants
	// (the fork rule). The weight is [Gates.factEvidence]'s.
	PolicyEvidence = "evidence"
)

// DefaultEvidenceRatio is how many times another fact's evidence weight a
// fact's must be to clearly outweigh it under the contradiction policy
// evidence: twice, e.g. two independent observations against one.
const DefaultEvidenceRatio = 2.0

// Gates configures the gates. The zero value of each field is its
// documented default; [DefaultGates] spells them out.
type Gates struct {
	Evidence      EvidenceConfig      `yaml:"evidence"`
	Contradiction ContradictionConfig `yaml:"contradiction"`
	Dedup         DedupConfig         `yaml:"dedup"`
	Provenance    ProvenanceConfig    `yaml:"provenance"`
	Approval      ApprovalGateConfig  `yaml:"approval"`
	// Reviews are the review queue's SLA and sync wait (see
	// [ApprovalConfig]).
	Reviews ApprovalConfig `yaml:"reviews"`
	// Reputation judges agents by their writes (see [ReputationConfig]).
	Reputation ReputationConfig `yaml:"reputation"`
}

// EvidenceConfig configures the evidence gate (§12.2.3, §12.11.3–4).
type EvidenceConfig struct {
	// Authority is each source kind's authority in [0, 1]: by default
	// human 1, outcome 0.9, tool_call and artifact 0.8, observation and
	// event 0.6, record 0.5, reasoning 0.3.
	Authority map[string]float64 `yaml:"authority"`
	// Unstated is the authority of a write that cites no evidence (the
	// writer's own word): 0.5 by default.
	Unstated *float64 `yaml:"unstated"`
	// MinAuthority is, per layer (record type), the mean evidence
	// authority below which a write of facts, procedures or plans goes to
	// review (§12.11.3's α_min). None by default.
	MinAuthority map[memory.Type]float64 `yaml:"min_authority"`
	// RequireExternal refuses facts, procedures and plans none of whose
	// evidence comes from outside memory and the agent (a human, a tool
	// call, an outcome, an artifact, an event or observation): the
	// evidence-diversity rule of §12.11.4. Off by default.
	RequireExternal bool `yaml:"require_external"`
	// Weights are the β of the adjusted confidence (§12.4.4): the agent's
	// confidence, the verification score (here the noisy-or of the
	// evidence's authorities: there is no verifier model), the best
	// evidence's authority and human approval. Default 0.15, 0.30, 0.25,
	// 0.30.
	Weights *ConfidenceWeights `yaml:"weights"`
}

// ConfidenceWeights are the β of §12.4.4; they sum to 1.
type ConfidenceWeights struct {
	Agent     float64 `yaml:"agent"`
	Verified  float64 `yaml:"verified"`
	Authority float64 `yaml:"authority"`
	Approved  float64 `yaml:"approved"`
}

// ContradictionConfig configures the contradiction gate.
type ContradictionConfig struct {
	// Policy is the policy for facts of any scope not in Scopes: evidence
	// (the default), review (§12.2.4), supersede, contest or fork.
	Policy string `yaml:"policy"`
	// Scopes sets the policy per scope.
	Scopes map[string]string `yaml:"scopes"`
	// EvidenceRatio is, for the policy evidence, how many times the other
	// side's evidence weight one side's must be to clearly outweigh it;
	// more than 1, [DefaultEvidenceRatio] by default.
	EvidenceRatio *float64 `yaml:"evidence_ratio"`
}

// DedupConfig configures the dedup gate (§12.3).
type DedupConfig struct {
	// Off turns the gate off: every write is a new record.
	Off bool `yaml:"off"`
}

// ApprovalGateConfig configures the approval gate's risk score (§12.6.2).
type ApprovalGateConfig struct {
	// Enabled sends writes whose risk reaches Review to the review queue.
	// Off by default, so that a new installation writes without waiting
	// for a person; under the contradiction policy review, contradictions
	// (§12.2.4) go to review either way.
	Enabled bool `yaml:"enabled"`
	// Review and Block are the tier thresholds: below Review a write is
	// approved automatically, from Block it waits for a decision when the
	// caller can wait (0.3 and 0.7 by default).
	Review *float64 `yaml:"review"`
	Block  *float64 `yaml:"block"`
	// Weights are the ω of R(w): layer 0.25, contradiction 0.20,
	// evidence 0.15, confidence 0.15, blast radius 0.15, novelty 0.10.
	Weights *RiskWeights `yaml:"weights"`
}

// RiskWeights are the ω of §12.6.2.
type RiskWeights struct {
	Layer         float64 `yaml:"layer"`
	Contradiction float64 `yaml:"contradiction"`
	Evidence      float64 `yaml:"evidence"`
	Confidence    float64 `yaml:"confidence"`
	BlastRadius   float64 `yaml:"blast_radius"`
	Novelty       float64 `yaml:"novelty"`
}

// DefaultGates returns the gates' defaults.
func DefaultGates() Gates {
	authority := memory.DefaultAuthority()
	unstated, review, block, ratio := authority.Unstated, 0.3, 0.7, DefaultEvidenceRatio
	return Gates{
		Evidence: EvidenceConfig{
			Authority: authority.Kinds,
			Unstated:  &unstated,
			Weights:   &ConfidenceWeights{Agent: 0.15, Verified: 0.30, Authority: 0.25, Approved: 0.30},
		},
		Contradiction: ContradictionConfig{Policy: PolicyEvidence, EvidenceRatio: &ratio},
		Approval: ApprovalGateConfig{Review: &review, Block: &block,
			Weights: &RiskWeights{Layer: 0.25, Contradiction: 0.20, Evidence: 0.15, Confidence: 0.15, BlastRadius: 0.15, Novelty: 0.10}},
	}
}

// withDefaults fills what g leaves out from [DefaultGates].
func (g Gates) withDefaults() Gates {
	d := DefaultGates()
	if g.Evidence.Authority == nil {
		g.Evidence.Authority = d.Evidence.Authority
	} else {
		merged := map[string]float64{}
		for k, v := range d.Evidence.Authority {
			merged[k] = v
		}
		for k, v := range g.Evidence.Authority {
			merged[k] = v
		}
		g.Evidence.Authority = merged
	}
	if g.Evidence.Unstated == nil {
		g.Evidence.Unstated = d.Evidence.Unstated
	}
	if g.Evidence.Weights == nil {
		g.Evidence.Weights = d.Evidence.Weights
	}
	if g.Contradiction.Policy == "" {
		g.Contradiction.Policy = d.Contradiction.Policy
	}
	if g.Contradiction.EvidenceRatio == nil {
		g.Contradiction.EvidenceRatio = d.Contradiction.EvidenceRatio
	}
	if g.Approval.Review == nil {
		g.Approval.Review = d.Approval.Review
	}
	if g.Approval.Block == nil {
		g.Approval.Block = d.Approval.Block
	}
	if g.Approval.Weights == nil {
		g.Approval.Weights = d.Approval.Weights
	}
	g.Reputation = g.Reputation.withDefaults()
	return g
}

// GatesError names a bad field of the write_path section.
type GatesError struct{ Field, Problem string }

func (e *GatesError) Error() string { return "write_path." + e.Field + ": " + e.Problem }

// Validate checks g, naming the first bad field.
func (g Gates) Validate() error {
	g = g.withDefaults()
	bad := func(field, format string, args ...any) error {
		return &GatesError{Field: field, Problem: fmt.Sprintf(format, args...)}
	}
	kinds := make([]string, 0, len(g.Evidence.Authority))
	for k := range g.Evidence.Authority {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		if !slices.Contains(sourceKinds, k) {
			return bad("evidence.authority."+k, "is not a source kind (%s)", strings.Join(sourceKinds, ", "))
		}
		if a := g.Evidence.Authority[k]; a < 0 || a > 1 {
			return bad("evidence.authority."+k, "must be in [0, 1]")
		}
	}
	for typ, a := range g.Evidence.MinAuthority {
		if !typ.Valid() {
			return bad("evidence.min_authority."+string(typ), "is not a record type")
		}
		if a < 0 || a > 1 {
			return bad("evidence.min_authority."+string(typ), "must be in [0, 1]")
		}
	}
	if u := *g.Evidence.Unstated; u < 0 || u > 1 {
		return bad("evidence.unstated", "must be in [0, 1]")
	}
	w := g.Evidence.Weights
	if w.Agent < 0 || w.Verified < 0 || w.Authority < 0 || w.Approved < 0 || !near(w.Agent+w.Verified+w.Authority+w.Approved, 1) {
		return bad("evidence.weights", "must be non-negative and sum to 1")
	}
	policies := []string{PolicyReview, PolicySupersede, PolicyContest, PolicyFork, PolicyEvidence}
	if !slices.Contains(policies, g.Contradiction.Policy) {
		return bad("contradiction.policy", "%q is not review, supersede, contest, fork or evidence", g.Contradiction.Policy)
	}
	for scope, p := range g.Contradiction.Scopes {
		if !slices.Contains(policies, p) {
			return bad("contradiction.scopes."+scope, "%q is not review, supersede, contest, fork or evidence", p)
		}
	}
	if r := *g.Contradiction.EvidenceRatio; !(r > 1) || math.IsInf(r, 0) {
		return bad("contradiction.evidence_ratio", "must be a number above 1")
	}
	if r, b := *g.Approval.Review, *g.Approval.Block; r < 0 || b > 1 || r > b {
		return bad("approval", "thresholds must satisfy 0 ≤ review ≤ block ≤ 1")
	}
	rw := g.Approval.Weights
	if rw.Layer < 0 || rw.Contradiction < 0 || rw.Evidence < 0 || rw.Confidence < 0 || rw.BlastRadius < 0 || rw.Novelty < 0 ||
		!near(rw.Layer+rw.Contradiction+rw.Evidence+rw.Confidence+rw.BlastRadius+rw.Novelty, 1) {
		return bad("approval.weights", "must be non-negative and sum to 1")
	}
	if err := g.Reviews.Validate(); err != nil {
		return &GatesError{Field: "reviews." + strings.SplitN(err.Error(), ":", 2)[0], Problem: strings.TrimSpace(strings.SplitN(err.Error(), ":", 2)[1])}
	}
	if err := g.Reputation.validate(); err != nil {
		return err
	}
	return g.Provenance.validate()
}

func near(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }

// Authority is the authority table the gates weigh evidence by: the one
// table retrieval must rank provenance by too (write-path RFC §12.4.6).
func (g Gates) Authority() memory.Authority {
	g = g.withDefaults()
	return memory.Authority{Kinds: g.Evidence.Authority, Unstated: *g.Evidence.Unstated}.Clone()
}

// policyFor is the contradiction policy of a scope.
func (g Gates) policyFor(scope string) string {
	if p, ok := g.Contradiction.Scopes[scope]; ok {
		return p
	}
	return g.Contradiction.Policy
}

// Outcome is what the write path did with an admitted write.
type Outcome string

// Outcomes of [Tx.Admit].
const (
	// Created: a new record, in the active set.
	Created Outcome = "created"
	// Absorbed: a live record holds the same content; it is the answer and
	// nothing was written (dedup, §12.3).
	Absorbed Outcome = "absorbed"
	// Merged: a live record held the same structure; the newcomer's new
	// evidence and tags were folded into it, as its next version.
	Merged Outcome = "merged"
	// Contested: the newcomer contradicts live facts and all are
	// contested now (contradiction policy contest or fork).
	Contested Outcome = "contested"
	// Queued: the record is a draft waiting for a reviewer (§12.6).
	Queued Outcome = "queued"
)

// Admission is the write path's answer to a write.
type Admission struct {
	Record  memory.Record `json:"record"`
	Outcome Outcome       `json:"outcome"`
	// Reasons say why a write was queued or merged, for the caller.
	Reasons []string `json:"reasons,omitempty"`
	// Replaced are the records a write superseded (contradiction policy
	// supersede); Contested those it contests.
	Replaced  []uuid.UUID `json:"replaced,omitempty"`
	Contested []uuid.UUID `json:"contested,omitempty"`
	// Risk is the approval gate's R(w) and its factors.
	Risk *Risk `json:"risk,omitempty"`
	// Review is the review of a queued write.
	Review *Review `json:"review,omitempty"`

	contradicts bool // it contradicts live facts (for the agent's reputation)
}

// RejectedError is a write a gate refused: nothing was written.
type RejectedError struct {
	Gate   string
	Reason string
	Detail string
	// RecordIDs are the records involved (those a fact contradicts, say).
	RecordIDs []uuid.UUID
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("%s gate: %s: %s", e.Gate, e.Reason, e.Detail)
}

func reject(gate, reason string, ids []uuid.UUID, format string, args ...any) *RejectedError {
	return &RejectedError{Gate: gate, Reason: reason, Detail: fmt.Sprintf(format, args...), RecordIDs: ids}
}

// timed runs a gate and observes its duration.
func (w *Writer) timed(gate string, f func() error) error {
	start := time.Now()
	err := f()
	w.metrics.gate.WithLabelValues(gate).Observe(time.Since(start).Seconds())
	return err
}
