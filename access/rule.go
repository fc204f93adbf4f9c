package access

import (
	"fmt"
	"slices"
	"strings"

	"github.com/engram-dev/engram/memory"
)

// Effects of a [Rule].
const (
	Allow = "allow"
	Deny  = "deny"
)

// Rule is an operator's attribute-based rule (write-path RFC §12.8.2,
// ABAC), from the access section of the policy file. It applies to a
// request when its principal and ops match; then:
//
//   - a deny rule refuses the operation on every record its record match
//     selects;
//   - an allow rule confines the operation to the records its record match
//     selects: a principal some allow rule applies to may do the
//     operation only on records one of them selects.
//
// Rules only narrow: none grants what the role's matrix ([Permits]) does
// not. The spec's example, "agents of domain medical write only records
// tagged domain:medical":
//
//	access:
//	  - name: medical-writes-medical
//	    effect: allow
//	    ops: [write]
//	    principal: {domains: [medical]}
//	    record: {tags: ["domain:medical"]}
type Rule struct {
	Name   string `yaml:"name" json:"name"`
	Effect string `yaml:"effect" json:"effect"`
	// Ops are the operations the rule governs; empty means every one.
	Ops       []Op           `yaml:"ops" json:"ops,omitempty"`
	Principal PrincipalMatch `yaml:"principal" json:"principal,omitzero"`
	Record    RecordMatch    `yaml:"record" json:"record,omitzero"`
}

// PrincipalMatch selects keys. Every field given must match; an empty
// match selects every key.
type PrincipalMatch struct {
	Roles  []Role   `yaml:"roles" json:"roles,omitempty"`
	Agents []string `yaml:"agents" json:"agents,omitempty"`
	// Domains selects keys with any of these domains.
	Domains []string `yaml:"domains" json:"domains,omitempty"`
}

// RecordMatch selects records. Every field given must match; an empty
// match selects every record.
type RecordMatch struct {
	Types []memory.Type `yaml:"types" json:"types,omitempty"`
	// Tags: the record has every one of them.
	Tags []string `yaml:"tags" json:"tags,omitempty"`
	// MinSensitivity: the record is at least this sensitive.
	MinSensitivity memory.Sensitivity `yaml:"min_sensitivity" json:"min_sensitivity,omitempty"`
	// Scopes: the record's scope is one of these.
	Scopes []string `yaml:"scopes" json:"scopes,omitempty"`
	// OwnAgent: the record came from the key's own agent.
	OwnAgent bool `yaml:"own_agent" json:"own_agent,omitempty"`
}

// Validate reports the first problem with rules, naming the rule and field
// ("access[1] (name).ops: …").
func Validate(rules []Rule) error {
	names := map[string]bool{}
	for i, r := range rules {
		at := fmt.Sprintf("access[%d]", i)
		if strings.TrimSpace(r.Name) == "" {
			return fmt.Errorf("%s.name: is required: a refusal names its rule", at)
		}
		at = fmt.Sprintf("access[%d] (%s)", i, r.Name)
		if names[r.Name] {
			return fmt.Errorf("%s.name: repeats an earlier rule's name", at)
		}
		names[r.Name] = true
		if r.Effect != Allow && r.Effect != Deny {
			return fmt.Errorf("%s.effect: %q is not allow or deny", at, r.Effect)
		}
		for _, op := range r.Ops {
			if !op.Valid() {
				return fmt.Errorf("%s.ops: %q is not read, write, feedback, annotate, delete, purge or admin", at, op)
			}
		}
		for _, role := range r.Principal.Roles {
			if !role.Valid() {
				return fmt.Errorf("%s.principal.roles: %q is not executor, verifier, orchestrator, curator or operator", at, role)
			}
		}
		for _, t := range r.Record.Types {
			if !t.Valid() {
				return fmt.Errorf("%s.record.types: %q is not episodic, working, semantic, competence or plan_graph", at, t)
			}
		}
		if s := r.Record.MinSensitivity; s != "" && !s.Valid() {
			return fmt.Errorf("%s.record.min_sensitivity: %q is not public, low, medium, high or hyper", at, s)
		}
	}
	return nil
}

// governs reports whether r applies to p doing op.
func (r Rule) governs(p Principal, op Op) bool {
	if len(r.Ops) > 0 && !slices.Contains(r.Ops, op) {
		return false
	}
	m := r.Principal
	if len(m.Roles) > 0 && !slices.Contains(m.Roles, p.Role) {
		return false
	}
	if len(m.Agents) > 0 && !slices.Contains(m.Agents, p.Agent) {
		return false
	}
	if len(m.Domains) > 0 && !slices.ContainsFunc(m.Domains, func(d string) bool { return slices.Contains(p.Domains, d) }) {
		return false
	}
	return true
}

// selects reports whether r's record match selects t for p.
func (r Rule) selects(p Principal, t Target) bool {
	m := r.Record
	if len(m.Types) > 0 && !slices.Contains(m.Types, t.Layer) {
		return false
	}
	for _, tag := range m.Tags {
		if !slices.Contains(t.Tags, tag) {
			return false
		}
	}
	if m.MinSensitivity != "" && t.Sensitivity.Rank() < m.MinSensitivity.Rank() {
		return false
	}
	if len(m.Scopes) > 0 && !slices.Contains(m.Scopes, t.Scope) {
		return false
	}
	if m.OwnAgent && (p.Agent == "" || t.Agent != p.Agent) {
		return false
	}
	return true
}
