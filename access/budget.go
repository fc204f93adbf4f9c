package access

import (
	"fmt"
	"time"
)

// Budgets are the write budgets of write-path RFC §12.11.2 (unchecked
// growth): |writes(a, session)| ≤ B_write(a.role). A session is the
// X-Engram-Session a request names (or none); its writes are counted per
// tenant, agent and session within a window, after which the count starts
// again — a session that never ends is still bounded per window.
type Budgets struct {
	// Writes is the budget per role: revisions and staged events an agent
	// may write in one session window. A role not named takes its
	// default ([DefaultBudgets]); 0 or less means unlimited.
	Writes map[Role]int `yaml:"writes"`
	// Window is a session's budget window; [DefaultBudgetWindow] when
	// zero.
	Window time.Duration `yaml:"window"`
}

// DefaultBudgetWindow is a budget's default window.
const DefaultBudgetWindow = time.Hour

// DefaultBudgets are the default budgets: an executor streams its events
// and working memory (10 000 writes an hour is ~3 a second, sustained), an
// orchestrator coordinates many, a verifier annotates; a curator (a
// person) and the system's own jobs are not budgeted.
func DefaultBudgets() Budgets {
	return Budgets{
		Writes: map[Role]int{Executor: 10_000, Verifier: 5_000, Orchestrator: 50_000, Curator: 0},
		Window: DefaultBudgetWindow,
	}
}

// Limit is the budget of role; 0 means unlimited.
func (b Budgets) Limit(role Role) int {
	if n, ok := b.Writes[role]; ok {
		return max(n, 0)
	}
	return DefaultBudgets().Writes[role]
}

// WindowOrDefault is the window in force.
func (b Budgets) WindowOrDefault() time.Duration {
	if b.Window <= 0 {
		return DefaultBudgetWindow
	}
	return b.Window
}

// Validate names the bad field.
func (b Budgets) Validate() error {
	for r := range b.Writes {
		if !r.Valid() || r == Operator {
			return fmt.Errorf("writes.%s: not a tenant role (executor, verifier, orchestrator, curator)", r)
		}
	}
	if b.Window < 0 {
		return fmt.Errorf("window: must not be negative")
	}
	return nil
}
