package main

import (
	"cmp"
	"context"
	"errors"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-dev/engram/mcpserver"
)

// mcpCommand serves `engram mcp`: engram's MCP server (package mcpserver)
// over stdio, for desktop and CLI agents (issue 15, part 1). It speaks
// JSON-RPC on standard input and output and calls engramd's API with the
// configured URL, key and actor, like every other command; it writes
// nothing else to standard output. It returns when the client closes its
// end, once every request it sent is answered, or when the process is
// interrupted.
func mcpCommand(c *cli, ctx context.Context, args []string) error {
	fs := c.flags("mcp")
	if _, err := parse(fs, args, 0, "[--url URL] [--api-key KEY] [--actor NAME]"); err != nil {
		return err
	}
	// The API gives remembered events that name no agent the key's own
	// agent, else this actor.
	c.actor = cmp.Or(c.actor, mcpserver.DefaultAgent)
	cl, err := c.client()
	if err != nil {
		return err
	}
	srv := mcpserver.New(cl, mcpserver.Options{Version: "cli"})
	err = srv.Run(ctx, mcpserver.NewStdioTransport(c.stdin, c.stdout))
	if errors.Is(err, context.Canceled) || errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
