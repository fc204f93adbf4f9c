package memory

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Record is the atomic unit of memory (substrate RFC §4, §15A.2): a typed,
// structured payload with its sensitivity, confidence, salience, lifecycle
// and provenance. Status and Version are engram's revision state: which
// records are in the active set, and how many revisions a record has had.
type Record struct {
	ID          uuid.UUID   `json:"id"`
	Type        Type        `json:"type"`
	Status      Status      `json:"status"`
	Version     int         `json:"version"`
	Sensitivity Sensitivity `json:"sensitivity"`
	Confidence  float64     `json:"confidence"`
	Salience    float64     `json:"salience"`
	Scope       string      `json:"scope,omitempty"`
	Tags        []string    `json:"tags"`
	// Visibility is who may retrieve the record (003 §12.8.5): the whole
	// tenant, or only the agent or thread it came from, AgentID and
	// ThreadID (which name its origin whatever its visibility).
	Visibility Visibility      `json:"visibility,omitempty"`
	AgentID    string          `json:"agent_id,omitempty"`
	ThreadID   string          `json:"thread_id,omitempty"`
	CreatedAt  time.Time       `json:"created_at"`
	UpdatedAt  time.Time       `json:"updated_at"`
	Lifecycle  Lifecycle       `json:"lifecycle"`
	Provenance Provenance      `json:"provenance"`
	Relations  []Relation      `json:"relations,omitempty"`
	Payload    json.RawMessage `json:"payload"`
	// Flags are the record's flags for re-validation, shown where a record
	// is read by id or listed; never written with a record. The canonical
	// schema admits the property (it closes no record's properties).
	Flags []Flag `json:"flags,omitempty"`
	// PersonalData tells the write path that what the record is made from
	// held personal data (the policy's redactor found some): it stores the
	// record with [PIITag], which makes it PII-bearing for retention
	// (write-path RFC §12.10.4). Never stored or shown itself.
	PersonalData bool `json:"-"`
}

// Lifecycle is when a record was last reinforced, how it decays and whether
// it may be deleted (substrate RFC §15A.3, §15A.7).
type Lifecycle struct {
	Decay            Decay          `json:"decay"`
	LastReinforcedAt time.Time      `json:"last_reinforced_at"`
	Pinned           bool           `json:"pinned"`
	DeletionPolicy   DeletionPolicy `json:"deletion_policy,omitempty"`
	ExpiresAt        *time.Time     `json:"expires_at,omitempty"`
}

// Decay is a record's decay profile (substrate RFC §15A.3 and §15A.7).
// MinSalience is the struct variant's floor; ReinforcementGain, when nil,
// falls back to the type's configured default.
type Decay struct {
	Curve             Curve        `json:"curve" yaml:"curve"`
	HalfLifeSeconds   int64        `json:"half_life_seconds" yaml:"half_life_seconds"`
	MinSalience       float64      `json:"min_salience,omitempty" yaml:"min_salience"`
	MaxAgeSeconds     int64        `json:"max_age_seconds,omitempty" yaml:"max_age_seconds"`
	ReinforcementGain *float64     `json:"reinforcement_gain,omitempty" yaml:"reinforcement_gain"`
	Points            []DecayPoint `json:"points,omitempty" yaml:"points"`
}

// DecayPoint is one point of a custom, piecewise-linear decay curve.
type DecayPoint struct {
	AgeSeconds int64   `json:"age_seconds" yaml:"age_seconds"`
	Salience   float64 `json:"salience" yaml:"salience"`
}

// Provenance links a record to the evidence that justifies it (§15A.4).
type Provenance struct {
	Sources   []Source `json:"sources"`
	CreatedBy string   `json:"created_by,omitempty"`
}

// Source is one piece of evidence: an event, artifact, tool call,
// observation, outcome or human statement.
type Source struct {
	Kind      string     `json:"kind"`
	Ref       string     `json:"ref"`
	Hash      string     `json:"hash,omitempty"`
	Timestamp *time.Time `json:"timestamp,omitempty"`
}

// Relation is an edge from a record to another (§15A.5, §15.4).
type Relation struct {
	Predicate Predicate `json:"predicate"`
	TargetID  uuid.UUID `json:"target_id"`
	Weight    *float64  `json:"weight,omitempty"`
}

// Flag marks a record for re-validation because of another record, its
// source (write-path RFC §12.11.5). A flag is no revision: the flagged
// record keeps its status and version.
type Flag struct {
	Kind     FlagKind  `json:"flag"`
	SourceID uuid.UUID `json:"source_id"`
	Reason   string    `json:"reason,omitempty"`
	At       time.Time `json:"at"`
}

// Visibility is who may retrieve a record.
type Visibility string

// Visibilities.
const (
	VisibilityTenant Visibility = "tenant" // every agent of the tenant
	VisibilityAgent  Visibility = "agent"  // only the agent it came from
	VisibilityThread Visibility = "thread" // only within the thread it came from
)

// Valid reports whether v is a visibility.
func (v Visibility) Valid() bool {
	return v == VisibilityTenant || v == VisibilityAgent || v == VisibilityThread
}

// Live reports whether the record is in the active set: active or contested.
func (r Record) Live() bool { return r.Status.Live() }
