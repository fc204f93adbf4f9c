package access

import (
	"slices"
	"strings"

	"github.com/engram-dev/engram/memory"
)

// Principal is who a request's key speaks for: its tenant and role, and
// the attributes ABAC rules and read visibility look at (write-path RFC
// §12.8.2, §12.8.5).
type Principal struct {
	// Tenant is the key's tenant; empty for an operator key.
	Tenant string `json:"tenant,omitempty"`
	// Key is the key's name, never its secret.
	Key  string `json:"key"`
	Role Role   `json:"role"`
	// Agent is the agent the key belongs to: an executor's own session is
	// this agent's records.
	Agent string `json:"agent_id,omitempty"`
	// Domains are the domains whose records the key may read: a record
	// tagged domain:X is visible only when X is among them. Empty means
	// every domain.
	Domains []string `json:"domains,omitempty"`
	// Clearance is the most sensitive classification the key may read;
	// empty means hyper, every classification.
	Clearance memory.Sensitivity `json:"clearance,omitempty"`
	// Session is the session the request's writes count against
	// (X-Engram-Session), for the write budget.
	Session string `json:"session,omitempty"`
}

// Ceiling is the key's clearance, hyper when it names none.
func (p Principal) Ceiling() memory.Sensitivity {
	if p.Clearance == "" {
		return memory.Hyper
	}
	return p.Clearance
}

// BudgetAgent is who a write budget counts against: the key's agent, or
// the key itself when it names none.
func (p Principal) BudgetAgent() string {
	if p.Agent != "" {
		return p.Agent
	}
	return "key:" + p.Key
}

// DomainPrefix marks a record's domain tags: a record tagged
// "domain:medical" is in domain medical.
const DomainPrefix = "domain:"

// DomainsOf are the domains a record's tags put it in.
func DomainsOf(tags []string) []string {
	var ds []string
	for _, t := range tags {
		if d, ok := strings.CutPrefix(t, DomainPrefix); ok && d != "" {
			ds = append(ds, d)
		}
	}
	return ds
}

// Target is what a decision looks at of a record: its layer, owner and
// classification attributes.
type Target struct {
	Layer       memory.Type
	Agent       string // the agent the record came from (agent_id)
	Tags        []string
	Sensitivity memory.Sensitivity
	Scope       string
}

// TargetOf is rec's target.
func TargetOf(rec memory.Record) Target {
	return Target{Layer: rec.Type, Agent: rec.AgentID, Tags: rec.Tags, Sensitivity: rec.Sensitivity, Scope: rec.Scope}
}

// inDomains reports whether every domain of t is one of p's.
func (p Principal) inDomains(t Target) (string, bool) {
	if len(p.Domains) == 0 {
		return "", true
	}
	for _, d := range DomainsOf(t.Tags) {
		if !slices.Contains(p.Domains, d) {
			return d, false
		}
	}
	return "", true
}
