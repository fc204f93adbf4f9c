package store

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
)

// ExplainSearch returns the plans PostgreSQL chooses for the statements
// [Search] runs for q, as it runs them: generic plans, and for a
// [DenseScan] the walk of the dense index first, with its settings. It
// executes nothing, and is for diagnostics and for the tests that prove
// which index a search reads.
func ExplainSearch(ctx context.Context, db pg.DBTX, tenant string, q SearchQuery) ([]string, error) {
	if !q.Type.Valid() {
		return nil, fmt.Errorf("explain search: unknown type %q", q.Type)
	}
	if !utf8.ValidString(tenant) || strings.ContainsRune(tenant, 0) {
		return nil, fmt.Errorf("explain search: tenant is not valid text")
	}
	stmts, err := searchStatements(tenant, []SearchQuery{q})
	if err != nil {
		return nil, err
	}
	st := stmts[0]
	tx, err := db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("explain search: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var plans []string
	if st.near != nil {
		if _, err := tx.Exec(ctx, "SAVEPOINT engram_explain"); err != nil {
			return nil, fmt.Errorf("explain search: %w", err)
		}
		if _, err := tx.Exec(ctx, denseScanSettingsSQL, st.near.ef, st.near.maxTuples); err != nil {
			return nil, fmt.Errorf("explain search: %w", err)
		}
		for _, sql := range st.near.sqls {
			plan, err := explainGeneric(ctx, tx, sql, len(st.near.args), tenant)
			if err != nil {
				return nil, err
			}
			plans = append(plans, plan)
		}
		if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT engram_explain"); err != nil {
			return nil, fmt.Errorf("explain search: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
		return nil, fmt.Errorf("explain search: %w", err)
	}
	plan, err := explainGeneric(ctx, tx, st.sql, len(st.args), tenant)
	if err != nil {
		return nil, err
	}
	return append(plans, plan), nil
}

// explainGeneric returns the generic plan of sql, a statement of n
// parameters whose first is the tenant: prepared, then explained with the
// tenant (partition pruning needs it) and every other parameter NULL,
// which a generic plan does not look at. The tenant is written as a quoted
// literal, the only value that goes into the text.
func explainGeneric(ctx context.Context, tx pgx.Tx, sql string, n int, tenant string) (string, error) {
	conn := tx.Conn().PgConn()
	if _, err := conn.Exec(ctx, "PREPARE engram_explain AS "+sql).ReadAll(); err != nil {
		return "", fmt.Errorf("explain search: prepare: %w", err)
	}
	args := make([]string, n)
	args[0] = quoteLiteral(tenant)
	for i := 1; i < n; i++ {
		args[i] = "NULL"
	}
	res, err := conn.Exec(ctx, "EXPLAIN EXECUTE engram_explain("+strings.Join(args, ", ")+")").ReadAll()
	if err != nil {
		return "", fmt.Errorf("explain search: %w", err)
	}
	if _, err := conn.Exec(ctx, "DEALLOCATE engram_explain").ReadAll(); err != nil {
		return "", fmt.Errorf("explain search: deallocate: %w", err)
	}
	var b strings.Builder
	for _, r := range res {
		for _, row := range r.Rows {
			b.Write(row[0])
			b.WriteByte('\n')
		}
	}
	return b.String(), nil
}
