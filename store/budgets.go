package store

import (
	"context"
	"fmt"
	"time"

	"github.com/engram-dev/engram/internal/pg"
)

const chargeBudgetSQL = `
INSERT INTO write_budgets AS b (tenant_id, agent_id, session_id, window_start, writes)
VALUES ($1, $2, $3, $4, GREATEST(0, $5))
ON CONFLICT (tenant_id, agent_id, session_id) DO UPDATE SET
	window_start = CASE WHEN b.window_start <= $4 - $6::interval THEN $4 ELSE b.window_start END,
	writes       = GREATEST(0, CASE WHEN b.window_start <= $4 - $6::interval THEN $5 ELSE b.writes + $5 END)
RETURNING writes, window_start`

// ChargeBudget adds n writes to an agent's session in its budget window
// (write-path RFC §12.11.2), starting a new window at now when the last
// one (window long) has passed, and returns the window's writes, these
// included, and when it started. Run in the transaction of the writes it
// counts, the charge commits or rolls back with them.
func ChargeBudget(ctx context.Context, db pg.DBTX, tenant, agent, session string, n int, now time.Time, window time.Duration) (writes int64, start time.Time, err error) {
	err = db.QueryRow(ctx, chargeBudgetSQL, tenant, agent, session, now, n, window).Scan(&writes, &start)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("charge write budget: %w", err)
	}
	return writes, start, nil
}
