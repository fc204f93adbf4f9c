package policy

import (
	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
)

// ClassifierVersion names the built-in classifier in decisions and
// provenance.
const ClassifierVersion = "rules-v1"

// Decision is how the policy plane classifies one event (substrate RFC
// §15.5: type, sensitivity, initial confidence, decay curve, scope and
// visibility), and which operator rules decided it.
type Decision = api.PolicyDecision

// Classify decides what ev becomes. found is the sensitivity that
// redaction implied for the event's content ("" when it found nothing):
// the decision is never less sensitive than that, whatever a rule says.
func (p *Policy) Classify(ev memory.Event, found memory.Sensitivity) Decision {
	d := classify(ev)
	for _, r := range p.file.Rules {
		if !r.Match.matches(ev) {
			continue
		}
		d.Rules = append(d.Rules, r.Name)
		if r.Drop {
			d.Drop = true
			continue
		}
		s := r.Set
		if s.Type != "" && (s.Type == memory.Episodic || ev.Kind == memory.FactEvent) {
			d.Type = s.Type
		}
		if s.Sensitivity != "" {
			d.Sensitivity = s.Sensitivity
		}
		if s.Confidence != nil {
			d.Confidence = *s.Confidence
		}
		if s.Scope != "" {
			d.Scope = s.Scope
		}
		if s.Visibility != "" {
			d.Visibility = s.Visibility
		}
		if s.Decay != nil {
			dc := *s.Decay
			d.Decay = &dc
		}
	}
	if found != "" {
		// Redaction found secrets or personal data: a rule may raise the
		// sensitivity further but never below what was found (SR-1).
		d.Sensitivity = d.Sensitivity.Max(found)
	}
	return d
}

// classify is the built-in, rule-based classifier.
func classify(ev memory.Event) Decision {
	d := Decision{
		Type:        memory.Episodic,
		Sensitivity: memory.Low,
		Confidence:  1, // an event is a first-hand observation of what happened
		Scope:       ev.Scope,
		Visibility:  VisibilityTenant,
		Classifier:  ClassifierVersion,
	}
	switch ev.Kind {
	case memory.FactEvent:
		d.Type = memory.Semantic
		d.Confidence = 0.7 // asserted by an agent, not yet corroborated
		if ev.Fact != nil && ev.Fact.Confidence != nil {
			d.Confidence = *ev.Fact.Confidence
		}
	case memory.UserInput:
		// What a user types is theirs: not for other agents by default.
		d.Sensitivity = memory.Medium
	}
	return d
}
