// Package access decides who may do what to which memory (write-path RFC
// §12.8.2, §12.8.5, §12.11.2): a key's [Principal] (its tenant, role and
// attributes), the role-based permission matrix per memory layer and
// [Op], the operator's attribute-based [Rule]s from the policy file, read
// visibility, and the per-session write budgets of each role.
//
//	authorized(a, m, op) = RBAC(a.role, m.layer, op) ∧ ABAC(a.attributes, m.attributes, op)
//	visible(a, m)        = authorized(a, m, read) ∧ classification(m) ≤ clearance(a) ∧ domain(m) ⊆ domains(a)
//
// The package does no I/O: [Decide] and [Visible] are pure functions of the
// principal, the record's attributes ([Target]) and the rules in force, and
// every answer names the rule that decided it, so a refusal can say why
// without showing the record. The write path (package revise) asks before
// every revision it audits; the HTTP server asks on every read and on the
// writes that bypass the write path (staged events).
//
// Failure cases: a refusal is a [*DeniedError] (HTTP 403, naming the rule),
// a write over budget an [*OverBudgetError] (HTTP 429, naming the budget).
package access
