package api

// Whoami is the answer of GET /v1/whoami: whom the caller's key speaks
// for. A protocol adapter reads it to bind what it issues to the key's
// tenant, and to act as the key's own agent.
type Whoami struct {
	// Key is the key's name, as audit entries name it.
	Key string `json:"key"`
	// Tenant is the key's tenant; empty for an operator key.
	Tenant string `json:"tenant,omitempty"`
	// Role is executor, verifier, orchestrator, curator or operator.
	Role string `json:"role"`
	// AgentID is the key's agent, when it names one (an executor's does).
	AgentID string `json:"agent_id,omitempty"`
}
