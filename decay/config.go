package decay

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/engram-dev/engram/memory"
)

// Defaults of the decay configuration.
const (
	// DefaultPruneThreshold: a record whose salience falls below it is
	// expired by the next sweep.
	DefaultPruneThreshold = 0.05
	// DefaultPurgeGrace is how long an expired record stays restorable.
	DefaultPurgeGrace = 7 * 24 * time.Hour
	// DefaultBatchSize is how many records a sweep reads and writes at once.
	DefaultBatchSize = 5000

	DefaultReinforcementGain = memory.DefaultReinforcementGain
	DefaultFailurePenalty    = 0.2
	DefaultUnusedPenalty     = 0.05
)

// MaxSalience is as high as reinforcement takes a record's salience. A
// record created with more keeps it until it decays.
const MaxSalience = memory.MaxSalience

// Config is how memory fades and is forgotten, the `decay` section of
// engramd's configuration file. Every field has a default; a file or a
// preview request overrides only what it names.
type Config struct {
	// Profiles is the decay profile of each memory type; records that name
	// no profile of their own follow their type's.
	Profiles map[memory.Type]Profile `json:"profiles" yaml:"profiles"`
	// PruneThreshold: records whose salience falls below it are expired.
	PruneThreshold float64 `json:"prune_threshold" yaml:"prune_threshold"`
	// PurgeGrace is how long an expired record stays restorable before the
	// purge deletes it for good.
	PurgeGrace Duration `json:"purge_grace" yaml:"purge_grace"`
	// BatchSize is how many records a sweep reads and writes at once.
	BatchSize int `json:"batch_size" yaml:"batch_size"`
}

// Profile is a memory type's decay profile (substrate RFC §15A.3, §15A.7)
// and how feedback moves the salience of its records (§15.6).
type Profile struct {
	// Curve is exponential, linear or custom; see [Retention].
	Curve memory.Curve `json:"curve" yaml:"curve"`
	// HalfLife: an exponential curve keeps half of the salience above the
	// floor after it, a linear one reaches the floor after twice it.
	HalfLife Duration `json:"half_life" yaml:"half_life"`
	// Floor is the salience decay never takes a record below.
	Floor float64 `json:"floor" yaml:"floor"`
	// MaxAge, when set, expires a record not reinforced for that long.
	MaxAge Duration `json:"max_age,omitempty" yaml:"max_age,omitempty"`
	// Points are a custom curve's share of salience kept at each age.
	Points []Point `json:"points,omitempty" yaml:"points,omitempty"`
	// ReinforcementGain is what a successful use adds, unless the record
	// names its own gain.
	ReinforcementGain float64 `json:"reinforcement_gain" yaml:"reinforcement_gain"`
	// FailurePenalty and UnusedPenalty are what a use that failed, and a
	// retrieval that went unused, take away.
	FailurePenalty float64 `json:"failure_penalty" yaml:"failure_penalty"`
	UnusedPenalty  float64 `json:"unused_penalty" yaml:"unused_penalty"`
	// DeletionPolicy is what new records of the type get when they name
	// none: auto_prune, manual_only or never.
	DeletionPolicy memory.DeletionPolicy `json:"deletion_policy" yaml:"deletion_policy"`
}

// Point is one point of a custom curve: the share of salience (above the
// floor) a record keeps at an age since its last reinforcement.
type Point struct {
	Age      Duration `json:"age" yaml:"age"`
	Salience float64  `json:"salience" yaml:"salience"`
}

// DefaultProfile is the built-in profile of a type: the half-lives of
// [memory.DefaultDecay] (episodic memory fades in days, facts in months,
// procedures and plans in between), no floor, no maximum age.
func DefaultProfile(t memory.Type) Profile {
	return Profile{
		Curve:             memory.Exponential,
		HalfLife:          Duration(time.Duration(memory.DefaultDecay(t).HalfLifeSeconds) * time.Second),
		ReinforcementGain: DefaultReinforcementGain,
		FailurePenalty:    DefaultFailurePenalty,
		UnusedPenalty:     DefaultUnusedPenalty,
		DeletionPolicy:    memory.AutoPrune,
	}
}

// DefaultConfig returns the configuration with every default set.
func DefaultConfig() Config {
	c := Config{
		Profiles:       make(map[memory.Type]Profile, len(memory.Types)),
		PruneThreshold: DefaultPruneThreshold,
		PurgeGrace:     Duration(DefaultPurgeGrace),
		BatchSize:      DefaultBatchSize,
	}
	for _, t := range memory.Types {
		c.Profiles[t] = DefaultProfile(t)
	}
	return c
}

// Decay is the profile as a record carries it. The gain is left out: a
// record that inherits its type's profile takes the configured gain at the
// time of the feedback.
func (p Profile) Decay() memory.Decay {
	d := memory.Decay{
		Curve:           p.Curve,
		HalfLifeSeconds: int64(time.Duration(p.HalfLife) / time.Second),
		MinSalience:     p.Floor,
		MaxAgeSeconds:   int64(time.Duration(p.MaxAge) / time.Second),
	}
	for _, pt := range p.Points {
		d.Points = append(d.Points, memory.DecayPoint{AgeSeconds: int64(time.Duration(pt.Age) / time.Second), Salience: pt.Salience})
	}
	return d
}

// clone returns a copy of c that shares nothing with it.
func (c Config) clone() Config {
	c.Profiles = maps.Clone(c.Profiles)
	for t, p := range c.Profiles {
		p.Points = slices.Clone(p.Points)
		c.Profiles[t] = p
	}
	return c
}

// Validate checks every field and names the first bad one, as a
// *[ConfigError].
func (c Config) Validate() error {
	switch {
	case !(c.PruneThreshold >= 0 && c.PruneThreshold < 1):
		return errorAt(fmt.Sprintf("%g is outside [0, 1)", c.PruneThreshold), "prune_threshold")
	case c.PurgeGrace <= 0:
		return errorAt("must be positive", "purge_grace")
	case c.BatchSize < 1 || c.BatchSize > 100_000:
		return errorAt(fmt.Sprintf("%d is outside 1..100000", c.BatchSize), "batch_size")
	}
	for _, t := range memory.Types {
		p, ok := c.Profiles[t]
		if !ok {
			return errorAt("is missing", "profiles", string(t))
		}
		if err := p.validate("profiles", string(t)); err != nil {
			return err
		}
	}
	for t := range c.Profiles {
		if !t.Valid() {
			return errorAt("is not a memory type: "+typeList, "profiles", string(t))
		}
	}
	return nil
}

const typeList = "episodic, working, semantic, competence or plan_graph"

func (p Profile) validate(path ...string) error {
	at := func(msg string, field ...string) error { return errorAt(msg, append(slices.Clone(path), field...)...) }
	switch p.Curve {
	case memory.Exponential, memory.Linear, memory.Custom:
	default:
		return at(fmt.Sprintf("%q is not exponential, linear or custom", p.Curve), "curve")
	}
	switch {
	case p.HalfLife <= 0:
		return at("must be positive", "half_life")
	case time.Duration(p.HalfLife) < time.Second:
		return at("must be at least 1s", "half_life")
	case !(p.Floor >= 0 && p.Floor <= 1):
		return at(fmt.Sprintf("%g is outside [0, 1]", p.Floor), "floor")
	case p.MaxAge < 0:
		return at("must not be negative", "max_age")
	case p.MaxAge > 0 && time.Duration(p.MaxAge) < time.Second:
		return at("must be at least 1s", "max_age")
	case p.Curve == memory.Custom && len(p.Points) == 0:
		return at("a custom curve needs at least one point", "points")
	case p.Curve != memory.Custom && len(p.Points) > 0:
		return at("only a custom curve has points", "points")
	}
	for name, v := range map[string]float64{
		"reinforcement_gain": p.ReinforcementGain, "failure_penalty": p.FailurePenalty, "unused_penalty": p.UnusedPenalty,
	} {
		if !(v >= 0 && v <= 1) {
			return at(fmt.Sprintf("%g is outside [0, 1]", v), name)
		}
	}
	for i, pt := range p.Points {
		idx := strconv.Itoa(i)
		switch {
		case pt.Age < 0:
			return at("must not be negative", "points", idx, "age")
		case i > 0 && pt.Age <= p.Points[i-1].Age:
			return at(fmt.Sprintf("must be greater than points[%d].age: points are in order of age", i-1), "points", idx, "age")
		case !(pt.Salience >= 0 && pt.Salience <= 1):
			return at(fmt.Sprintf("%g is outside [0, 1]", pt.Salience), "points", idx, "salience")
		case i > 0 && pt.Salience > p.Points[i-1].Salience:
			return at(fmt.Sprintf("must not be above points[%d].salience: decay never raises salience (§15A.7)", i-1), "points", idx, "salience")
		case pt.Age == 0 && pt.Salience != 1:
			return at("must be 1 at age 0: a curve starts from the whole salience", "points", idx, "salience")
		}
	}
	switch p.DeletionPolicy {
	case memory.AutoPrune, memory.ManualOnly, memory.Never:
	default:
		return at(fmt.Sprintf("%q is not auto_prune, manual_only or never", p.DeletionPolicy), "deletion_policy")
	}
	return nil
}

// UnmarshalYAML overlays the mapping n on c: fields n does not name keep
// their value, and a profile names only the fields it changes. Every error
// is a *[ConfigError] naming the field.
func (c *Config) UnmarshalYAML(n *yaml.Node) error {
	next := c.clone()
	if next.Profiles == nil {
		next.Profiles = DefaultConfig().Profiles
	}
	err := eachField(n, nil, func(key string, v *yaml.Node, path []string) error {
		switch key {
		case "profiles":
			return eachField(v, path, func(name string, v *yaml.Node, path []string) error {
				t := memory.Type(name)
				if !t.Valid() {
					return errorAt("is not a memory type: "+typeList, path...)
				}
				p, ok := next.Profiles[t]
				if !ok {
					p = DefaultProfile(t)
				}
				if err := p.overlay(v, path); err != nil {
					return err
				}
				next.Profiles[t] = p
				return nil
			})
		case "prune_threshold":
			return decodeScalar(v, &next.PruneThreshold, "a number", path)
		case "purge_grace":
			return decodeDuration(v, &next.PurgeGrace, path)
		case "batch_size":
			return decodeScalar(v, &next.BatchSize, "a whole number", path)
		}
		return errorAt("is not a field of the decay configuration", path...)
	})
	if err != nil {
		return err
	}
	*c = next
	return nil
}

func (p *Profile) overlay(n *yaml.Node, path []string) error {
	return eachField(n, path, func(key string, v *yaml.Node, path []string) error {
		switch key {
		case "curve":
			return decodeScalar(v, &p.Curve, "a string", path)
		case "half_life":
			return decodeDuration(v, &p.HalfLife, path)
		case "floor":
			return decodeScalar(v, &p.Floor, "a number", path)
		case "max_age":
			return decodeDuration(v, &p.MaxAge, path)
		case "reinforcement_gain":
			return decodeScalar(v, &p.ReinforcementGain, "a number", path)
		case "failure_penalty":
			return decodeScalar(v, &p.FailurePenalty, "a number", path)
		case "unused_penalty":
			return decodeScalar(v, &p.UnusedPenalty, "a number", path)
		case "deletion_policy":
			return decodeScalar(v, &p.DeletionPolicy, "a string", path)
		case "points":
			if v.Kind != yaml.SequenceNode {
				return errorAt("must be a list of {age, salience}", path...)
			}
			p.Points = make([]Point, len(v.Content))
			for i, item := range v.Content {
				ipath := append(slices.Clone(path), strconv.Itoa(i))
				err := eachField(item, ipath, func(key string, v *yaml.Node, path []string) error {
					switch key {
					case "age":
						return decodeDuration(v, &p.Points[i].Age, path)
					case "salience":
						return decodeScalar(v, &p.Points[i].Salience, "a number", path)
					}
					return errorAt("is not a field of a point: age, salience", path...)
				})
				if err != nil {
					return err
				}
			}
			return nil
		}
		return errorAt("is not a field of a decay profile", path...)
	})
}

// eachField calls f for each key of the mapping n, with its path.
func eachField(n *yaml.Node, path []string, f func(key string, v *yaml.Node, path []string) error) error {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return errorAt("must be a mapping", path...)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := n.Content[i].Value
		if err := f(key, n.Content[i+1], append(slices.Clone(path), key)); err != nil {
			return err
		}
	}
	return nil
}

func decodeScalar[T any](n *yaml.Node, dst *T, what string, path []string) error {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return errorAt("must be "+what, path...)
	}
	var v T
	if err := n.Decode(&v); err != nil {
		return errorAt("must be "+what, path...)
	}
	if f, ok := any(v).(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return errorAt("must be a finite number", path...)
	}
	*dst = v
	return nil
}

func decodeDuration(n *yaml.Node, dst *Duration, path []string) error {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return errorAt("must be a duration such as 90d or 36h", path...)
	}
	d, err := ParseDuration(n.Value)
	if err != nil {
		return errorAt(err.Error(), path...)
	}
	*dst = Duration(d)
	return nil
}

// ParseConfig reads a decay configuration, YAML or JSON, over the defaults,
// and validates it. Every error is a *[ConfigError] naming the field.
func ParseConfig(doc []byte) (Config, error) {
	c := DefaultConfig()
	var n yaml.Node
	if err := yaml.Unmarshal(doc, &n); err != nil {
		return Config{}, errorAt("is not YAML or JSON: " + err.Error())
	}
	err := error(nil)
	if len(n.Content) > 0 {
		err = c.UnmarshalYAML(&n)
	}
	if err == nil {
		err = c.Validate()
	}
	if ce, ok := err.(*ConfigError); ok {
		ce.Line = lineOf(&n, ce.Path)
	}
	if err != nil {
		return Config{}, err
	}
	return c, nil
}

// lineOf is the line of the node at path under n (a document), or of the
// deepest of its parents there is (a missing field's mapping); 0 when
// there is none.
func lineOf(n *yaml.Node, path []string) int {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	line := 0
	for _, key := range path {
		if n.Kind == yaml.DocumentNode || n.Line == 0 {
			return line
		}
		line = n.Line
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == key {
					line, next = n.Content[i].Line, n.Content[i+1]
				}
			}
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(key); err == nil && i >= 0 && i < len(n.Content) {
				next = n.Content[i]
				line = next.Line
			}
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}

// YAML is c as engramd's configuration file writes its decay section.
func (c Config) YAML() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("encode decay configuration: %w", err)
	}
	return b.Bytes(), enc.Close()
}

// Duration is a span of time written as a Go duration ("36h", "90m") or in
// days ("90d", "1d12h").
type Duration time.Duration

// ParseDuration parses a Go duration, optionally led by a number of days:
// "90d", "1d12h", "36h". "0" is zero.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	bad := fmt.Errorf("%q is not a duration such as 90d or 36h", s)
	switch s {
	case "0":
		return 0, nil
	case "", "-":
		return 0, bad
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var d time.Duration
	if days, rest, ok := strings.Cut(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err != nil || n < 0 || n > 100*365 {
			return 0, bad
		}
		d = time.Duration(n * float64(24*time.Hour))
		s = rest
	}
	if s != "" {
		r, err := time.ParseDuration(s)
		if err != nil || r < 0 {
			return 0, bad
		}
		d += r
	}
	if neg {
		d = -d
	}
	return d, nil
}

// String writes whole days as days: "90d", "1d12h0m0s", "36m0s".
func (d Duration) String() string {
	td := time.Duration(d)
	day := 24 * time.Hour
	if td > 0 && td >= day {
		days, rest := td/day, td%day
		if rest == 0 {
			return strconv.FormatInt(int64(days), 10) + "d"
		}
		return strconv.FormatInt(int64(days), 10) + "d" + rest.String()
	}
	return td.String()
}

// MarshalText implements [encoding.TextMarshaler].
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements [encoding.TextUnmarshaler].
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	*d = Duration(v)
	return err
}
