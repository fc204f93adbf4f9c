package mcpserver

import (
	"cmp"
	"context"
	"log/slog"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-dev/engram/client"
)

// Name is the server's name in the MCP handshake.
const Name = "engram"

// DefaultAgent is the actor (X-Engram-Actor) of an MCP server's calls
// when its caller names none. The API gives an event that names no agent
// the key's own agent, else the actor: so remember writes an executor's
// events as its own agent, and another key's as this one's.
const DefaultAgent = "mcp"

// Options configures a server made by [New]; every zero value is a
// documented default.
type Options struct {
	// Version is the server's version in the handshake; empty is "dev".
	Version string
	// Logger logs the SDK's activity; nil logs nothing.
	Logger *slog.Logger
	// SchemaCache, shared by servers made per request, saves deriving
	// the tools' schemas again for each; nil derives them.
	SchemaCache *mcp.SchemaCache
}

// instructions tell the agent how the tools fit together.
const instructions = `engram is long-term memory that learns from experience.
Before a task, call recall with what you are about to do (and any error message as a signal): it answers facts, learned procedures, plans and past episodes, each with an id and why it matched.
While you work, call remember with the thread's events (user input, tool calls and outputs, errors, the outcome): engram learns procedures from them.
After the task, call feedback with recall's retrieval_id and how its records served (used_success, used_failure, unused): useful memory is reinforced, the rest fades.
Call propose_fact to store a fact you learned; it goes through engram's write gates and may be queued for review.
Learned procedures are listed by list_procedures and readable as Agent Skills at engram://skills/{id}; any record at engram://records/{id}.`

// New returns an MCP server whose tools and resources call engramd's API
// through c, with c's key and actor (give it [DefaultAgent] when the
// caller names none). The server keeps no state: it may serve one session
// (stdio) or one request (stateless HTTP).
func New(c *client.Client, opts Options) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: Name, Title: "engram memory", Version: cmp.Or(opts.Version, "dev")},
		&mcp.ServerOptions{
			Instructions: instructions,
			Logger:       opts.Logger,
			SchemaCache:  opts.SchemaCache,
			Capabilities: capabilities,
		})
	s.AddReceivingMiddleware(unadvertised)
	h := &handlers{c: c}
	h.addTools(s)
	h.addResources(s)
	return s
}

// capabilities are what the server serves: tools and resources. Neither
// list announces changes: the tools never change, and resources/list asks
// the API each time (and over HTTP no session outlives its request to
// hear of one). No logging (the server sends no log messages), prompts,
// completions or resource subscriptions.
var capabilities = &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Resources: &mcp.ResourceCapabilities{}}

// unadvertisedMethods are the methods of the capabilities the server does
// not advertise, which the SDK would otherwise answer (an empty prompt
// list, a logging level set for nothing).
var unadvertisedMethods = []string{
	"prompts/list", "prompts/get", "logging/setLevel", "completion/complete",
	"resources/subscribe", "resources/unsubscribe", "subscriptions/listen",
}

// unadvertised answers a method of a capability the server does not
// advertise as a method not found, as the protocol asks.
func unadvertised(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if slices.Contains(unadvertisedMethods, method) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: engram serves tools and resources only"}
		}
		return next(ctx, method, req)
	}
}

// handlers serve the tools and resources of one server with its client.
type handlers struct {
	c *client.Client
}
