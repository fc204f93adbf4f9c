package main

import (
	"context"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
)

// withAutovacuum runs fn with the server's autovacuum on, as a production
// PostgreSQL has it: without it, tables that grow from empty during a run
// are never analysed, and the planner keeps estimating them at a row —
// plans that read a whole tenant for each write. A server that has it off
// (a CI configuration, say) gets it on for the run and back off after,
// with a line saying so; with asIs, the server is left as it is and the
// report says which it was.
func withAutovacuum(ctx context.Context, url string, asIs bool, log io.Writer, fn func(autovacuum string) error) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", url, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var setting string
	if err := conn.QueryRow(ctx, "SHOW autovacuum").Scan(&setting); err != nil {
		return err
	}
	if setting == "on" || asIs {
		return fn(setting)
	}
	set := func(ctx context.Context, stmt string) error {
		// ALTER SYSTEM takes effect on a reload; both outside a transaction.
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
		_, err := conn.Exec(ctx, "SELECT pg_reload_conf()")
		return err
	}
	if err := set(ctx, "ALTER SYSTEM SET autovacuum = on"); err != nil {
		return fmt.Errorf("turn autovacuum on for the run (or pass --autovacuum-as-is): %w", err)
	}
	fmt.Fprintln(log, "bench: the server's autovacuum is off; on for this run, as in production, and back off after")
	defer func() {
		if err := set(context.WithoutCancel(ctx), "ALTER SYSTEM RESET autovacuum"); err != nil {
			fmt.Fprintln(log, "bench: could not turn autovacuum back off:", err)
		}
	}()
	return fn("on (turned on for the run)")
}
