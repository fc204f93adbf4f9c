package memory

import "slices"

// Type is a record's memory type (substrate RFC §15A.1). Each type has its own
// payload schema and lifecycle rules.
type Type string

// The five memory types.
const (
	Episodic   Type = "episodic"   // what happened: append-only timelines (§5)
	Working    Type = "working"    // what we are doing now: freely edited (§6)
	Semantic   Type = "semantic"   // what is true: revisable facts (§7)
	Competence Type = "competence" // how to do it: learned procedures (§8)
	PlanGraph  Type = "plan_graph" // what solved it: reusable solution graphs (§9)
)

// Types lists every memory type in retrieval-layer order (§15.8).
var Types = []Type{Working, Semantic, Competence, PlanGraph, Episodic}

// Valid reports whether t is one of the five types.
func (t Type) Valid() bool { return slices.Contains(Types, t) }

// Revisable reports whether records of this type may be superseded, forked,
// contested, retracted or merged: all but episodic (§15B).
func (t Type) Revisable() bool { return t.Valid() && t != Episodic }

// ARecord names a record of type t with its article, for messages: "an
// episodic record", "a semantic record".
func (t Type) ARecord() string {
	if t == Episodic {
		return "an episodic record"
	}
	return "a " + string(t) + " record"
}

// Sensitivity is a record's sensitivity class (§15A.1), ordered from
// [Public] to [Hyper].
type Sensitivity string

// Sensitivity classes, least sensitive first.
const (
	Public Sensitivity = "public"
	Low    Sensitivity = "low"
	Medium Sensitivity = "medium"
	High   Sensitivity = "high"
	Hyper  Sensitivity = "hyper"
)

// Sensitivities lists the classes in increasing order.
var Sensitivities = []Sensitivity{Public, Low, Medium, High, Hyper}

// Rank is the class's position in [Sensitivities], or -1 when s is unknown.
func (s Sensitivity) Rank() int { return slices.Index(Sensitivities, s) }

// Valid reports whether s is a known class.
func (s Sensitivity) Valid() bool { return s.Rank() >= 0 }

// Max returns the more sensitive of s and o.
func (s Sensitivity) Max(o Sensitivity) Sensitivity {
	if o.Rank() > s.Rank() {
		return o
	}
	return s
}

// Status is where a record stands in its revision life.
type Status string

// Record statuses. Active and contested records form the active set; the
// others are kept for history, audit and point-in-time reads.
const (
	Active     Status = "active"
	Contested  Status = "contested"  // uncertain until resolved (§7)
	Superseded Status = "superseded" // replaced, or forked into conditional variants
	Retracted  Status = "retracted"
	Merged     Status = "merged" // folded into another record
	Deleted    Status = "deleted"
	Expired    Status = "expired" // pruned by decay, restorable until purged
	// Draft records wait for a reviewer's approval (write-path RFC §12.6);
	// quarantined ones are held for investigation (§12.11.5).
	Draft       Status = "draft"
	Quarantined Status = "quarantined"
)

// Statuses lists every status.
var Statuses = []Status{Active, Contested, Superseded, Retracted, Merged, Deleted, Expired, Draft, Quarantined}

// Valid reports whether s is a known status.
func (s Status) Valid() bool { return slices.Contains(Statuses, s) }

// Live reports whether a record with this status is in the active set.
func (s Status) Live() bool { return s == Active || s == Contested }

// Curve is the shape of a decay profile (§15A.3).
type Curve string

// Decay curves.
const (
	Exponential Curve = "exponential"
	Linear      Curve = "linear"
	Custom      Curve = "custom"
)

// DeletionPolicy says who may delete a record (§15A.3).
type DeletionPolicy string

// Deletion policies.
const (
	AutoPrune  DeletionPolicy = "auto_prune"
	ManualOnly DeletionPolicy = "manual_only"
	Never      DeletionPolicy = "never"
)

// Predicate names a relation between two records (§15A.5, §15.4): a free
// string ("e.g., supports, contradicts, derived_from, supersedes"). engram
// reads and writes the ones below; any other is kept as an edge.
type Predicate string

// Relation predicates engram knows.
const (
	Supports    Predicate = "supports"
	Contradicts Predicate = "contradicts"
	DerivedFrom Predicate = "derived_from"
	Supersedes  Predicate = "supersedes"
	ForkedFrom  Predicate = "forked_from"
	MergedInto  Predicate = "merged_into"
)

// Predicates lists the relation predicates engram knows.
var Predicates = []Predicate{Supports, Contradicts, DerivedFrom, Supersedes, ForkedFrom, MergedInto}

// Valid reports whether p is a predicate engram knows.
func (p Predicate) Valid() bool { return slices.Contains(Predicates, p) }

// FlagKind names why a record is flagged for re-validation.
type FlagKind string

// Flag kinds.
const (
	// DerivedFromQuarantined: the record derives, directly or through other
	// records, from a record under quarantine (write-path RFC §12.11.5:
	// "all dependent items are flagged for re-validation").
	DerivedFromQuarantined FlagKind = "derived_from_quarantined"
)

// FlagKinds lists every flag kind.
var FlagKinds = []FlagKind{DerivedFromQuarantined}

// Valid reports whether k is a known flag kind.
func (k FlagKind) Valid() bool { return slices.Contains(FlagKinds, k) }
