package access

import (
	"fmt"
	"time"
)

// DeniedError is a refusal: the key may not do this. It names the rule
// that decided and never the record's content.
type DeniedError struct {
	Rule   string
	Reason string
	Detail string
	// Pointer is the JSON pointer of the field of the request that asked
	// for what is denied, when one did (a pinned record); empty otherwise.
	Pointer string
}

func (e *DeniedError) Error() string { return "access denied by " + e.Rule + ": " + e.Detail }

// OverBudgetError is a write refused because its agent's session has
// spent its write budget (write-path RFC §12.11.2).
type OverBudgetError struct {
	// Budget names the budget: "write:executor".
	Budget  string
	Agent   string
	Session string
	Limit   int
	// RetryAfter is when the budget's window ends and it is whole again.
	RetryAfter time.Duration
}

func (e *OverBudgetError) Error() string {
	writes := "writes"
	if e.Limit == 1 {
		writes = "write"
	}
	return fmt.Sprintf("write budget %s spent: %d %s per session window for agent %q", e.Budget, e.Limit, writes, e.Agent)
}
