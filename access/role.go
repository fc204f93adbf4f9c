package access

import (
	"slices"

	"github.com/engram-dev/engram/memory"
)

// Role is what a key is for (write-path RFC §12.8.2).
type Role string

// Roles. The four tenant roles act inside one tenant; an operator key has
// no tenant.
const (
	// Executor is an agent doing tasks: it reads its own session (its
	// working memory and episodes) and the shared layers (facts,
	// procedures, plans), and writes its own session only.
	Executor Role = "executor"
	// Verifier is an agent checking others' work: it reads every layer and
	// writes only validation annotations (feedback and review decisions).
	Verifier Role = "verifier"
	// Orchestrator coordinates agents: it reads every layer, writes
	// episodes and working memory, annotates, and soft-deletes.
	Orchestrator Role = "orchestrator"
	// Curator is a person who owns a tenant's memory: everything in it,
	// hard delete (purge) and governance (rollback, quarantine) included.
	Curator Role = "curator"
	// Operator runs the daemon: jobs and statistics across every tenant,
	// and keys. It reads and writes no tenant's memory.
	Operator Role = "operator"
)

// TenantRoles are the roles whose keys belong to one tenant.
var TenantRoles = []Role{Executor, Verifier, Orchestrator, Curator}

// Roles are every role, in order of reach.
var Roles = []Role{Executor, Verifier, Orchestrator, Curator, Operator}

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return slices.Contains(Roles, r) }

// Op is an operation on a record (write-path RFC §12.8.2: read, write,
// delete, admin), with write split in three — reporting the outcome of
// using a record (feedback), and a validation annotation (a review
// decision, the one write a verifier makes) — and delete in two: soft
// (status deleted, restorable) and hard (purge).
type Op string

// Operations.
const (
	OpRead     Op = "read"
	OpWrite    Op = "write"    // create, revise, append, merge
	OpFeedback Op = "feedback" // the outcome of using a record
	OpAnnotate Op = "annotate" // review decisions
	OpDelete   Op = "delete"   // soft delete, expire, restore
	OpPurge    Op = "purge"    // hard delete
	OpAdmin    Op = "admin"    // rollback, reactivate, quarantine, release
)

// Ops are every operation.
var Ops = []Op{OpRead, OpWrite, OpFeedback, OpAnnotate, OpDelete, OpPurge, OpAdmin}

// Valid reports whether o is a known operation.
func (o Op) Valid() bool { return slices.Contains(Ops, o) }

// Grant is how far a role may apply an operation to a layer.
type Grant int

// Grants.
const (
	None Grant = iota // never
	Own               // only records of the key's own agent (agent_id)
	All               // every record of the tenant
)

// shared are the layers every agent of a tenant learns from: what
// consolidation made of everyone's experience. Executors must recall
// procedures, plans and facts — that is the product.
var shared = []memory.Type{memory.Semantic, memory.Competence, memory.PlanGraph}

// session are the layers an agent's own session writes.
var session = []memory.Type{memory.Episodic, memory.Working}

// agentOwn are the layers an executor writes and deletes for its own
// agent: its session, and the facts it states (attributed to it, and
// through the same fact gates as anyone's).
var agentOwn = []memory.Type{memory.Episodic, memory.Working, memory.Semantic}

// Permits is the RBAC matrix of write-path RFC §12.8.2, as engram reads it:
//
//	role          read                   write                  feedback    annotate  delete                 purge  admin
//	executor      own session + shared    own session + own facts as it reads  —         own session + own facts  —      —
//	verifier      all                    —                      all         all       —                      —      —
//	orchestrator  all                    episodic+working+facts all         all       all                    —      —
//	curator       all                    all                    all         all       all                    all    all
//	operator      —                      —                      —           —         —                      —      —
//
// "Own session" is the key's agent's episodes and working memory; "own
// facts" its agent's semantic records. The spec's table gives an executor
// its session only and no delete; engram widens it so that an agent's own
// key does the basic work of the agent protocols (MCP, OpenIntent,
// OpenWOP) on its own entries: remember, recall, report how a recalled
// record served, forget. Procedures and plans stay consolidation's and a
// curator's to write.
func Permits(r Role, layer memory.Type, op Op) Grant {
	switch r {
	case Executor:
		switch {
		case (op == OpRead || op == OpFeedback) && slices.Contains(shared, layer):
			return All
		case (op == OpRead || op == OpFeedback) && slices.Contains(session, layer):
			return Own
		case (op == OpWrite || op == OpDelete) && slices.Contains(agentOwn, layer):
			return Own
		}
	case Verifier:
		if op == OpRead || op == OpFeedback || op == OpAnnotate {
			return All
		}
	case Orchestrator:
		switch op {
		case OpRead, OpFeedback, OpAnnotate, OpDelete:
			return All
		case OpWrite:
			if slices.Contains(agentOwn, layer) {
				return All
			}
		}
	case Curator:
		return All
	}
	return None
}
