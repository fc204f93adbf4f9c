// Command engram is the command-line client of engramd's HTTP API, for
// operators and agents: read, list and revise memory records, recall what
// memory helps with a task and report how it served. See usage in run.go, or
// run `engram help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		// run has reported the error on stderr.
		os.Exit(exitCode(err))
	}
}
