package server

import (
	"net/http"
	"slices"
)

// Role is what a key may call. Each route names the roles it admits; a key
// of another role is refused with 403 before the handler runs, so the
// refusal tells it nothing about any tenant.
//
// Two roles for now: a later issue splits [RoleTenant] into the roles of a
// tenant's agents (executor, verifier, orchestrator, curator).
type Role string

const (
	// RoleTenant reads and writes its own tenant's memory, and nothing of
	// any other tenant's.
	RoleTenant Role = "tenant"
	// RoleOperator runs the daemon: it lists and runs the periodic jobs,
	// which work across every tenant, and reads the write path's metrics,
	// which count every tenant's writes. It reads and writes no tenant's
	// memory.
	RoleOperator Role = "operator"
)

// The roles routes admit.
var (
	tenantRoles   = []Role{RoleTenant}
	operatorRoles = []Role{RoleOperator}
	anyRole       = []Role{RoleTenant, RoleOperator}
)

// forbidden is the refusal of a key whose role is not among roles, saying
// which key to use instead.
func forbidden(roles []Role) *Problem {
	if slices.Contains(roles, RoleOperator) {
		return problem(http.StatusForbidden, "forbidden", "Forbidden",
			"this operation works across every tenant and needs an operator key (api_keys with role: operator)")
	}
	return problem(http.StatusForbidden, "forbidden", "Forbidden",
		"an operator key reads and writes no tenant's memory: call this with a tenant's key")
}
