package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/engram-dev/engram/access"
	"github.com/engram-dev/engram/memory"
)

// What to do with an event in which redaction found a secret.
const (
	OnSecretRedact = "redact" // store it with the secret replaced (the default)
	OnSecretReject = "reject" // refuse it with a secret_leakage problem
)

// Visibilities: who may read the records an event becomes.
const (
	VisibilityTenant = string(memory.VisibilityTenant)
	VisibilityAgent  = string(memory.VisibilityAgent)
	VisibilityThread = string(memory.VisibilityThread)
)

// File is the operator's policy file (YAML). Its rules override the
// built-in classifier (substrate RFC §15.5: "policy rules MUST be able to
// override classifier output").
type File struct {
	Secrets struct {
		// Literals are values that are secret wherever they appear.
		Literals []string `yaml:"literals"`
		// OnSecret is redact (default) or reject.
		OnSecret string `yaml:"on_secret"`
	} `yaml:"secrets"`
	Rules []Rule `yaml:"rules"`
	// Access are the operator's attribute-based access rules (write-path
	// RFC §12.8.2), checked on every read and write after the key's role;
	// see [access.Rule].
	Access []access.Rule `yaml:"access"`
}

// Rule sets classification fields of, or drops, the events it matches.
// Every matching rule applies, in file order, so a later rule overrides an
// earlier one field by field; a drop wins.
type Rule struct {
	Name  string `yaml:"name"`
	Match Match  `yaml:"match"`
	Set   Set    `yaml:"set"`
	Drop  bool   `yaml:"drop"`
}

// Match selects events. Every field given must match; an empty match
// matches every event.
type Match struct {
	Kind        []memory.EventKind `yaml:"kind"`
	Agent       []string           `yaml:"agent"`
	Tool        []string           `yaml:"tool"`
	Tags        []string           `yaml:"tags"`        // the event has all of them
	Environment map[string]string  `yaml:"environment"` // keys with these values
	Content     string             `yaml:"content"`     // a regular expression over the event's text

	content *regexp.Regexp
}

// Set overrides classification fields. Zero fields leave the classifier's
// choice.
type Set struct {
	// Type is episodic (keep a fact in the episode only) or semantic
	// (the default for facts; only fact events can become semantic records).
	Type        memory.Type        `yaml:"type"`
	Sensitivity memory.Sensitivity `yaml:"sensitivity"`
	Confidence  *float64           `yaml:"confidence"`
	Scope       string             `yaml:"scope"`
	Visibility  string             `yaml:"visibility"`
	Decay       *memory.Decay      `yaml:"decay"`
}

// Policy is a validated policy file, ready to classify events. It is
// immutable; reloading builds a new one.
type Policy struct {
	file     File
	redactor *Redactor
	source   string
}

// Default is the policy with no rules: the built-in classifier alone,
// redacting secrets.
func Default() *Policy {
	p, err := Parse(nil, "built-in")
	if err != nil {
		panic(err)
	}
	return p
}

// Load reads and validates the policy file at path.
func Load(path string) (*Policy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read policy: %w", err)
	}
	return Parse(b, path)
}

// Parse validates a policy file's contents. The error names the rule and
// field at fault.
func Parse(b []byte, source string) (*Policy, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("policy %s: %w", source, err)
	}
	// Rules in a later document would be silently ignored.
	for {
		var next yaml.Node
		if err := dec.Decode(&next); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("policy %s: %w", source, err)
		}
		if len(next.Content) > 0 && next.Content[0].Tag != "!!null" {
			return nil, fmt.Errorf("policy %s: a policy file is one YAML document, and this one has more (line %d)", source, next.Content[0].Line)
		}
	}
	if err := f.validate(); err != nil {
		return nil, fmt.Errorf("policy %s: %w", source, err)
	}
	r, err := NewRedactor(f.Secrets.Literals)
	if err != nil {
		return nil, fmt.Errorf("policy %s: secrets.literals: %w", source, err)
	}
	return &Policy{file: f, redactor: r, source: source}, nil
}

func (f *File) validate() error {
	switch f.Secrets.OnSecret {
	case "":
		f.Secrets.OnSecret = OnSecretRedact
	case OnSecretRedact, OnSecretReject:
	default:
		return fmt.Errorf("secrets.on_secret: %q is not redact or reject", f.Secrets.OnSecret)
	}
	if err := access.Validate(f.Access); err != nil {
		return err
	}
	names := map[string]bool{}
	kinds := []memory.EventKind{memory.UserInput, memory.ToolCall, memory.ToolOutput, memory.Observation, memory.ErrorEvent, memory.Outcome, memory.FactEvent}
	for i := range f.Rules {
		r := &f.Rules[i]
		at := fmt.Sprintf("rules[%d]", i)
		if r.Name == "" {
			return fmt.Errorf("%s.name: is required", at)
		}
		at = fmt.Sprintf("rules[%d] (%s)", i, r.Name)
		if names[r.Name] {
			return fmt.Errorf("%s.name: repeats an earlier rule's name", at)
		}
		names[r.Name] = true
		for _, k := range r.Match.Kind {
			if !slices.Contains(kinds, k) {
				return fmt.Errorf("%s.match.kind: %q is not an event kind", at, k)
			}
		}
		if r.Match.Content != "" {
			re, err := regexp.Compile(r.Match.Content)
			if err != nil {
				return fmt.Errorf("%s.match.content: %v", at, err)
			}
			r.Match.content = re
		}
		if r.Drop && r.Set != (Set{}) {
			return fmt.Errorf("%s: a rule either drops or sets, not both", at)
		}
		s := r.Set
		switch s.Type {
		case "", memory.Episodic:
		case memory.Semantic:
			if !slices.Equal(r.Match.Kind, []memory.EventKind{memory.FactEvent}) {
				return fmt.Errorf("%s.set.type: semantic applies only to rules matching kind [fact]", at)
			}
		default:
			return fmt.Errorf("%s.set.type: %q is not episodic or semantic", at, s.Type)
		}
		if s.Sensitivity != "" && !s.Sensitivity.Valid() {
			return fmt.Errorf("%s.set.sensitivity: %q is not public, low, medium, high or hyper", at, s.Sensitivity)
		}
		if s.Confidence != nil && !unit(*s.Confidence) {
			return fmt.Errorf("%s.set.confidence: %v is outside [0, 1]", at, *s.Confidence)
		}
		switch s.Visibility {
		case "", VisibilityTenant, VisibilityAgent, VisibilityThread:
		default:
			return fmt.Errorf("%s.set.visibility: %q is not tenant, agent or thread", at, s.Visibility)
		}
		if d := s.Decay; d != nil {
			switch {
			case d.Curve != memory.Exponential && d.Curve != memory.Linear && d.Curve != memory.Custom:
				return fmt.Errorf("%s.set.decay.curve: %q is not exponential, linear or custom", at, d.Curve)
			case d.HalfLifeSeconds <= 0:
				return fmt.Errorf("%s.set.decay.half_life_seconds: must be positive", at)
			case !unit(d.MinSalience):
				return fmt.Errorf("%s.set.decay.min_salience: %v is outside [0, 1]", at, d.MinSalience)
			case d.ReinforcementGain != nil && !(*d.ReinforcementGain >= 0 && !math.IsInf(*d.ReinforcementGain, 1)):
				return fmt.Errorf("%s.set.decay.reinforcement_gain: %v is not a finite number of at least 0", at, *d.ReinforcementGain)
			}
			for j, pt := range d.Points {
				switch {
				case pt.AgeSeconds < 0:
					return fmt.Errorf("%s.set.decay.points[%d].age_seconds: must not be negative", at, j)
				case !unit(pt.Salience):
					return fmt.Errorf("%s.set.decay.points[%d].salience: %v is outside [0, 1]", at, j, pt.Salience)
				}
			}
		}
	}
	return nil
}

// unit reports whether x is in [0, 1]; NaN is not.
func unit(x float64) bool { return x >= 0 && x <= 1 }

// Source names where the policy came from.
func (p *Policy) Source() string { return p.source }

// RejectSecrets reports whether events with secrets are refused rather
// than redacted.
func (p *Policy) RejectSecrets() bool { return p.file.Secrets.OnSecret == OnSecretReject }

// AccessRules are the policy's access rules, in file order. The slice is
// the policy's own: do not change it.
func (p *Policy) AccessRules() []access.Rule { return p.file.Access }

// Redactor is the policy's redactor: the built-in detectors plus the
// operator's literal secrets.
func (p *Policy) Redactor() *Redactor { return p.redactor }

// matches reports whether m selects ev.
func (m *Match) matches(ev memory.Event) bool {
	if len(m.Kind) > 0 && !slices.Contains(m.Kind, ev.Kind) {
		return false
	}
	if len(m.Agent) > 0 && !slices.Contains(m.Agent, ev.AgentID) {
		return false
	}
	if len(m.Tool) > 0 && !slices.ContainsFunc(m.Tool, func(t string) bool { return t == toolName(ev) }) {
		return false
	}
	for _, t := range m.Tags {
		if !slices.Contains(ev.Tags, t) {
			return false
		}
	}
	for k, v := range m.Environment {
		if fmt.Sprint(ev.Environment[k]) != v || ev.Environment[k] == nil {
			return false
		}
	}
	if m.content != nil && !m.content.MatchString(contentOf(ev)) {
		return false
	}
	return true
}

func toolName(ev memory.Event) string {
	switch {
	case ev.Tool != nil:
		return ev.Tool.Name
	case ev.Error != nil:
		return ev.Error.Tool
	}
	return ""
}

// contentOf is the text a content pattern is matched against: the event's
// text, error message, tool arguments and result, or fact.
func contentOf(ev memory.Event) string {
	var b bytes.Buffer
	b.WriteString(ev.Text)
	if ev.Tool != nil {
		b.WriteByte('\n')
		b.Write(ev.Tool.Arguments)
		b.WriteByte('\n')
		b.Write(ev.Tool.Result)
	}
	if ev.Error != nil {
		b.WriteByte('\n')
		b.WriteString(ev.Error.Message)
	}
	if ev.Fact != nil {
		fact, _ := json.Marshal(ev.Fact)
		b.WriteByte('\n')
		b.Write(fact)
	}
	if ev.Outcome != nil {
		b.WriteByte('\n')
		b.WriteString(ev.Outcome.Summary)
	}
	return b.String()
}
