package retrieve

import (
	"fmt"
	"maps"
	"slices"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
)

// LayerName names a layer of the answer.
type LayerName = api.LayerName

// The layers, in the order of substrate RFC §15.8: the thread's working
// memory, facts, procedures, plans, and episodes where the layers above
// leave the budget unspent.
const (
	LayerWorking    = api.LayerWorking
	LayerSemantic   = api.LayerSemantic
	LayerCompetence = api.LayerCompetence
	LayerPlan       = api.LayerPlan
	LayerEpisodic   = api.LayerEpisodic
)

// Layers lists the layers in answer order.
var Layers = []LayerName{LayerWorking, LayerSemantic, LayerCompetence, LayerPlan, LayerEpisodic}

// recordType is the record type layer l holds.
func recordType(l LayerName) memory.Type {
	switch l {
	case LayerWorking:
		return memory.Working
	case LayerSemantic:
		return memory.Semantic
	case LayerCompetence:
		return memory.Competence
	case LayerPlan:
		return memory.PlanGraph
	}
	return memory.Episodic
}

// Gating is what trust gating does to a record the caller may see but
// whose sensitivity is at the limit of the caller's clearance (substrate
// RFC §13, §15.9). The stored record never changes.
type Gating = api.Gating

// Gatings.
const (
	Return    = api.GatingReturn    // the record as stored
	Summarise = api.GatingSummarise // structure kept, content replaced by [WITHHELD]
	Redact    = api.GatingRedact    // secrets and personal data replaced, as at write (SR-1)
	Withhold  = api.GatingWithhold  // left out, and counted as withheld
)

// Weights are how the ranking combines its signals. Relevance is
// lexical·BM25 (normalised by the layer's best) + vector·similarity; the
// others scale it: a factor of (1 − w + w·x) for each signal x in [0, 1].
type Weights struct {
	Lexical    float64 `yaml:"lexical" json:"lexical"`
	Vector     float64 `yaml:"vector" json:"vector"`
	Salience   float64 `yaml:"salience" json:"salience"`
	Confidence float64 `yaml:"confidence" json:"confidence"`
	Provenance float64 `yaml:"provenance" json:"provenance"`
}

// TrustConfig decides how the trust context gates an answer.
type TrustConfig struct {
	// DefaultClearance is the clearance of a request that names none.
	DefaultClearance memory.Sensitivity `yaml:"default_clearance"`
	// UnauthenticatedClearance caps the clearance when the person at the
	// agent is not authenticated.
	UnauthenticatedClearance memory.Sensitivity `yaml:"unauthenticated_clearance"`
	// Environments cap the clearance where an answer is shown: a shared
	// screen shows less than a private terminal.
	Environments map[string]memory.Sensitivity `yaml:"environments"`
	// AtLimit is what happens to a record whose sensitivity equals the
	// caller's clearance, by sensitivity. Records below the clearance are
	// returned; records above it never are.
	AtLimit map[memory.Sensitivity]Gating `yaml:"at_limit"`
}

// Config is the retrieval section of the configuration (yaml retrieve).
type Config struct {
	Weights Weights `yaml:"weights"`
	// Candidates is how many records each half of a layer's search (lexical
	// and vector) brings to the ranking.
	Candidates int `yaml:"candidates"`
	// CommonTermShare: a query term held by more than this share of a
	// tenant's passages (records, and episodes' timeline entries) still scores, but brings candidates of its own only
	// when the rarer terms bring too few, and then only as many as 200
	// times Candidates; the vector half's features bring candidates in
	// order of rarity up to 70 times Candidates (1: every term and feature
	// always does, an exact search).
	CommonTermShare float64 `yaml:"common_term_share"`
	// DisambiguationMargin: when the best of several matching procedures
	// or plans does not beat the next by this share of its score, the
	// answer says it needs disambiguation (substrate RFC §15A.11).
	DisambiguationMargin float64 `yaml:"disambiguation_margin"`
	// Items and Tokens are the default budget of an answer; Layers the
	// default items per layer.
	Items  int               `yaml:"items"`
	Tokens int               `yaml:"tokens"`
	Layers map[LayerName]int `yaml:"layers"`
	Trust  TrustConfig       `yaml:"trust"`
	// DenseIndex decides when a dense model's vectors (an OpenAI-compatible
	// embedder) are searched on their HNSW index rather than ranked
	// exactly.
	DenseIndex DenseIndexConfig `yaml:"dense_index"`
}

// DenseIndexConfig is when and how a layer's search walks the HNSW index
// of a dense model's vectors (embedding.EnsureIndex builds it). Searches
// use generic plans, which cannot tell a large tenant from a small one, so
// the choice is made here, per tenant and record type, from the counts the
// retrieval_stats job keeps.
type DenseIndexConfig struct {
	// MinRecords: a tenant with at least this many live records of a type
	// searches that type's vectors on the index; a smaller one (or one
	// not yet counted) ranks them exactly, which is exact and, below
	// about this size, as fast.
	MinRecords int `yaml:"min_records"`
	// EfSearch is hnsw.ef_search, the candidates the walk keeps (1..1000):
	// recall against exact search rises with it, and so does the time.
	EfSearch int `yaml:"ef_search"`
	// MaxScanTuples is hnsw.max_scan_tuples: how many vectors an iterative
	// scan visits at most when the tenant, type and sensitivity filters
	// leave too few of the nearest.
	MaxScanTuples int `yaml:"max_scan_tuples"`
}

// Defaults of the [DenseIndexConfig].
const (
	DefaultDenseMinRecords    = 10_000
	DefaultDenseEfSearch      = 200
	DefaultDenseMaxScanTuples = 20_000
)

// DefaultConfig returns the retrieval defaults.
func DefaultConfig() Config {
	return Config{
		Weights:              Weights{Lexical: 0.6, Vector: 0.4, Salience: 0.3, Confidence: 0.3, Provenance: 0.2},
		Candidates:           40,
		CommonTermShare:      0.05,
		DisambiguationMargin: 0.1,
		Items:                20,
		Tokens:               4000,
		Layers: map[LayerName]int{
			LayerWorking: 1, LayerSemantic: 6, LayerCompetence: 3, LayerPlan: 2, LayerEpisodic: 3,
		},
		Trust: TrustConfig{
			DefaultClearance:         memory.Medium,
			UnauthenticatedClearance: memory.Public,
			Environments:             map[string]memory.Sensitivity{"shared_screen": memory.Low, "ci": memory.Medium},
			AtLimit: map[memory.Sensitivity]Gating{
				memory.Public: Return, memory.Low: Return, memory.Medium: Return,
				memory.High: Summarise, memory.Hyper: Summarise,
			},
		},
		DenseIndex: DenseIndexConfig{MinRecords: DefaultDenseMinRecords, EfSearch: DefaultDenseEfSearch, MaxScanTuples: DefaultDenseMaxScanTuples},
	}
}

// ConfigError names a bad field of the retrieve section.
type ConfigError struct {
	Field   string
	Message string
}

func (e *ConfigError) Error() string { return "retrieve." + e.Field + ": " + e.Message }

// Validate checks the configuration, naming the first bad field.
func (c Config) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Field: field, Message: fmt.Sprintf(format, args...)}
	}
	w := c.Weights
	for _, f := range []struct {
		name string
		v    float64
	}{{"lexical", w.Lexical}, {"vector", w.Vector}, {"salience", w.Salience}, {"confidence", w.Confidence}, {"provenance", w.Provenance}} {
		if f.v < 0 || f.v > 1 {
			return bad("weights."+f.name, "%g is outside [0, 1]", f.v)
		}
	}
	if w.Lexical+w.Vector == 0 {
		return bad("weights", "lexical and vector cannot both be 0")
	}
	switch {
	case c.Candidates < 1 || c.Candidates > 1000:
		return bad("candidates", "%d is outside 1..1000", c.Candidates)
	case c.CommonTermShare <= 0 || c.CommonTermShare > 1:
		return bad("common_term_share", "%g is outside (0, 1]", c.CommonTermShare)
	case c.DisambiguationMargin < 0 || c.DisambiguationMargin >= 1:
		return bad("disambiguation_margin", "%g is outside [0, 1)", c.DisambiguationMargin)
	case c.Items < 1 || c.Items > MaxItems:
		return bad("items", "%d is outside 1..%d", c.Items, MaxItems)
	case c.Tokens < 1 || c.Tokens > MaxTokens:
		return bad("tokens", "%d is outside 1..%d", c.Tokens, MaxTokens)
	}
	switch d := c.DenseIndex; {
	case d.MinRecords < 1:
		return bad("dense_index.min_records", "%d must be at least 1", d.MinRecords)
	case d.EfSearch < 1 || d.EfSearch > 1000:
		return bad("dense_index.ef_search", "%d is outside 1..1000", d.EfSearch)
	case d.MaxScanTuples < 1 || d.MaxScanTuples > 10_000_000:
		return bad("dense_index.max_scan_tuples", "%d is outside 1..10000000", d.MaxScanTuples)
	}
	for _, l := range slices.Sorted(maps.Keys(c.Layers)) {
		if !slices.Contains(Layers, l) {
			return bad("layers."+string(l), "is not a layer (working, semantic, competence, plan, episodic)")
		}
		if n := c.Layers[l]; n < 1 || n > MaxLayerItems {
			return bad("layers."+string(l), "%d is outside 1..%d", n, MaxLayerItems)
		}
	}
	t := c.Trust
	if !t.DefaultClearance.Valid() {
		return bad("trust.default_clearance", "%q is not a sensitivity level", t.DefaultClearance)
	}
	if !t.UnauthenticatedClearance.Valid() {
		return bad("trust.unauthenticated_clearance", "%q is not a sensitivity level", t.UnauthenticatedClearance)
	}
	for _, env := range slices.Sorted(maps.Keys(t.Environments)) {
		if !t.Environments[env].Valid() {
			return bad("trust.environments."+env, "%q is not a sensitivity level", t.Environments[env])
		}
	}
	for _, s := range slices.Sorted(maps.Keys(t.AtLimit)) {
		if !s.Valid() {
			return bad("trust.at_limit."+string(s), "is not a sensitivity level")
		}
		switch t.AtLimit[s] {
		case Return, Summarise, Redact, Withhold:
		default:
			return bad("trust.at_limit."+string(s), "%q is not return, summarise, redact or withhold", t.AtLimit[s])
		}
	}
	return nil
}
