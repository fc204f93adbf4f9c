// Command engram-eval runs the simulated agent world of package eval
// against real engramd processes: the proof that agents using engram get
// better with experience (issue 12).
//
//	engram-eval run  [flags]   the full protocol, three agents, a Markdown report, an SVG chart and its data (curve.json)
//	engram-eval demo [flags]   a short world, the learning curve live, then what engram learned
//
// `make eval` and `make demo` run them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `engram-eval runs a simulated agent world against engramd and measures whether
agents using engram get better with experience.

Usage:
  engram-eval run [FLAGS]    the full protocol: acquisition with drift, a frozen deployment phase,
                             the engram agent against two controls (no memory; raw episodes);
                             writes a Markdown report, an SVG chart and its data (curve.json)
  engram-eval demo [FLAGS]   a short world against one engramd, the learning curve as it runs,
                             then one learned procedure and one plan graph
  engram-eval help

Run 'engram-eval run -h' or 'engram-eval demo -h' for the flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "engram-eval:", err)
		}
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("a command is needed: run or demo")
	}
	switch args[0] {
	case "run":
		return runEval(ctx, args[1:], getenv, stdout, stderr)
	case "demo":
		return runDemo(ctx, args[1:], getenv, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}
