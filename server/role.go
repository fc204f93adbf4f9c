package server

import (
	"cmp"
	"net/http"
	"slices"

	"github.com/engram-dev/engram/access"
	"github.com/engram-dev/engram/memory"
)

// Role is what a key may call (write-path RFC §12.8.2; see [access.Role]).
// Each route names the roles it admits; a key of another role is refused
// with 403 before the handler runs, so the refusal tells it nothing about
// any tenant. Within a tenant's routes, what each role may do to each
// layer is decided per record by package access.
type Role = access.Role

const (
	// RoleTenant is the old spelling of a tenant key configured without a
	// role: it is read as [DefaultRole].
	RoleTenant Role = "tenant"
	// RoleExecutor, RoleVerifier, RoleOrchestrator and RoleCurator are a
	// tenant's roles (see package access).
	RoleExecutor     = access.Executor
	RoleVerifier     = access.Verifier
	RoleOrchestrator = access.Orchestrator
	RoleCurator      = access.Curator
	// RoleOperator runs the daemon: it lists and runs the periodic jobs,
	// which work across every tenant, reads the write path's metrics,
	// which count every tenant's writes, and manages keys. It reads and
	// writes no tenant's memory.
	RoleOperator = access.Operator
)

// DefaultRole and DefaultClearance are what a tenant key configured
// without a role gets: least privilege (write-path RFC §12.8.2). An
// orchestrator is the narrowest role whose key does an agent's work for
// any of its tenant's agents — events, working memory, facts, recall,
// feedback — with no agent_id to name; it writes no procedures or plans,
// pins nothing, purges nothing and governs nothing (rollback,
// quarantine), which are a curator's, a person's. Its clearance stops
// below the high and hyper records that encryption at rest seals. Keys
// made before this were curators with clearance hyper: a key keeps that
// only by naming role curator (engramd warns of every key without one).
const (
	DefaultRole      = RoleOrchestrator
	DefaultClearance = memory.Medium
)

// normalRole is the role and clearance a configured key has: a tenant key
// with no role, or "tenant", has [DefaultRole], and [DefaultClearance]
// unless it names one.
func normalRole(r Role, clearance memory.Sensitivity) (Role, memory.Sensitivity) {
	if r == "" || r == RoleTenant {
		return DefaultRole, cmp.Or(clearance, DefaultClearance)
	}
	return r, clearance
}

// Unroled reports whether a configured key names no role, and so has
// [DefaultRole] and [DefaultClearance].
func Unroled(k Key) bool { return k.Role == "" || k.Role == RoleTenant }

// The roles routes admit.
var (
	tenantRoles   = []Role{RoleExecutor, RoleVerifier, RoleOrchestrator, RoleCurator}
	operatorRoles = []Role{RoleOperator}
	anyRole       = []Role{RoleExecutor, RoleVerifier, RoleOrchestrator, RoleCurator, RoleOperator}
	// reviewerRoles read the review queue and the staged events: every
	// tenant role but the executor's, whose reads are its own session.
	reviewerRoles = []Role{RoleVerifier, RoleOrchestrator, RoleCurator}
	// curatorRoles are a tenant's people: for what only a curator may
	// call, route by route (hard deletion across layers, say).
	curatorRoles = []Role{RoleCurator}
)

// forbidden is the refusal of a key whose role is not among roles, saying
// which key to use instead.
func forbidden(roles []Role) *Problem {
	if slices.Contains(roles, RoleOperator) {
		return problem(http.StatusForbidden, "forbidden", "Forbidden",
			"this operation works across every tenant and needs an operator key (api_keys with role: operator)")
	}
	if !slices.Contains(roles, RoleExecutor) {
		return problem(http.StatusForbidden, "forbidden", "Forbidden",
			"this operation needs a tenant's key of role verifier, orchestrator or curator: an operator key reads no tenant's memory, and an executor reads its own session")
	}
	return problem(http.StatusForbidden, "forbidden", "Forbidden",
		"an operator key reads and writes no tenant's memory: call this with a tenant's key")
}
