package access

import (
	"fmt"
	"strings"

	"github.com/engram-dev/engram/memory"
)

// Reasons a decision gives, the label of engram_access_denials_total.
const (
	ReasonRole      = "role"      // the role's matrix does not grant it
	ReasonRule      = "rule"      // an operator's ABAC rule
	ReasonClearance = "clearance" // the record is above the key's clearance
	ReasonDomain    = "domain"    // the record is in a domain the key lacks
	ReasonBudget    = "budget"    // the write budget is spent
)

// Decision is the answer to "may p do op to t": allowed or not, and the
// rule that decided (a matrix cell, an operator's rule by its name, the
// clearance or the domain check).
type Decision struct {
	Allowed bool
	// Rule names what decided: "role:executor:write:semantic",
	// "role:executor:write:own", an ABAC rule's name, "clearance:medium"
	// or "domain:medical"; empty when allowed with no rule in the way.
	Rule string
	// Reason is one of the Reason constants.
	Reason string
	// Detail says why in a sentence, naming no record content.
	Detail string
}

// Err is the decision as an error: nil when allowed, else a
// [*DeniedError].
func (d Decision) Err() error {
	if d.Allowed {
		return nil
	}
	return &DeniedError{Rule: d.Rule, Reason: d.Reason, Detail: d.Detail}
}

var allowed = Decision{Allowed: true}

// Decide is authorized(p, t, op) (write-path RFC §12.8.2): the role's
// matrix cell for the record's layer and op, then the operator's rules in
// file order — a matching deny refuses, whatever allows it; allow rules that govern p and op
// confine it to the records they select.
func Decide(p Principal, op Op, t Target, rules []Rule) Decision {
	switch Permits(p.Role, t.Layer, op) {
	case None:
		return Decision{Rule: fmt.Sprintf("role:%s:%s:%s", p.Role, op, t.Layer), Reason: ReasonRole,
			Detail: fmt.Sprintf("%s key may not %s %s memory", withArticle(string(p.Role)), op, t.Layer)}
	case Own:
		if p.Agent == "" || t.Agent != p.Agent {
			return Decision{Rule: fmt.Sprintf("role:%s:%s:own", p.Role, op), Reason: ReasonRole,
				Detail: fmt.Sprintf("%s key may %s only its own agent's %s memory", withArticle(string(p.Role)), op, t.Layer)}
		}
	}
	var confining *Rule
	let := false
	for i := range rules {
		r := &rules[i]
		if !r.governs(p, op) {
			continue
		}
		sel := r.selects(p, t)
		switch {
		case r.Effect == Deny && sel:
			return Decision{Rule: r.Name, Reason: ReasonRule, Detail: fmt.Sprintf("the access rule %q denies %s", r.Name, op)}
		case r.Effect == Allow && sel:
			let = true
		case r.Effect == Allow && confining == nil:
			confining = r
		}
	}
	if confining != nil && !let {
		return Decision{Rule: confining.Name, Reason: ReasonRule,
			Detail: fmt.Sprintf("the access rule %q allows %s only on the records it selects", confining.Name, op)}
	}
	return allowed
}

// Visible is visible(p, t) (write-path RFC §12.8.5): authorized to read,
// the record's classification at most the key's clearance, and every
// domain of the record one of the key's.
func Visible(p Principal, t Target, rules []Rule) Decision {
	if d := Decide(p, OpRead, t, rules); !d.Allowed {
		return d
	}
	return Clear(p, t)
}

// Clear is the classification half of [Visible]: clearance and domains.
// A write to an existing record needs it too: a key does not revise what
// it may not see.
func Clear(p Principal, t Target) Decision {
	if c := p.Ceiling(); t.Sensitivity.Rank() > c.Rank() {
		return Decision{Rule: "clearance:" + string(c), Reason: ReasonClearance,
			Detail: fmt.Sprintf("the record is classified above this key's clearance (%s)", c)}
	}
	if d, ok := p.inDomains(t); !ok {
		return Decision{Rule: "domain:" + d, Reason: ReasonDomain,
			Detail: fmt.Sprintf("the record is in domain %q, which this key's domains do not include", d)}
	}
	return allowed
}

// Hides reports whether a listing for p must check each record with
// [Visible] beyond what [Principal.Filter] already selects: some rule
// governs p's reads.
func Hides(p Principal, rules []Rule) bool {
	for _, r := range rules {
		if r.governs(p, OpRead) {
			return true
		}
	}
	return false
}

// Filter is what a listing for p selects in SQL (see store.Visibility):
// the layers it may read at all, those it reads only for its own agent,
// its clearance and its domains. ABAC rules are checked record by record
// after ([Hides]).
func (p Principal) Filter() (layers, own []memory.Type, ceiling memory.Sensitivity, domains []string) {
	for _, l := range memory.Types {
		switch Permits(p.Role, l, OpRead) {
		case All:
			layers = append(layers, l)
		case Own:
			own = append(own, l)
		}
	}
	return layers, own, p.Ceiling(), p.Domains
}

// withArticle is word after its indefinite article: "an executor", "a
// verifier".
func withArticle(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an " + word
	}
	return "a " + word
}
