package mcpserver

import (
	"cmp"
	"log/slog"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-dev/engram/client"
)

// HTTPConfig configures [NewHTTPHandler].
type HTTPConfig struct {
	// HTTPClient reaches engramd's API: inside engramd,
	// client.InProcess(engramd's handler). Required.
	HTTPClient *http.Client
	// URL is the API's base URL for the clients; with an in-process
	// HTTPClient any URL serves, and empty is http://engramd.
	URL string
	// Version is the server's version in the handshake.
	Version string
	// Logger logs the SDK's activity; nil logs nothing.
	Logger *slog.Logger
	// MaxBodyBytes caps a request body; 0 is the SDK's default (4 MiB).
	MaxBodyBytes int64
}

// NewHTTPHandler serves MCP's streamable HTTP transport: each request is
// answered by a server of [New] whose client calls the API with the
// request's own bearer key (and its X-Engram-Actor, else [DefaultAgent],
// and its X-Engram-Session),
// so roles, tenant, redaction and gates are the caller's. It does not
// check the key: the API does, on every call, and engramd refuses a
// missing or unknown key before this handler runs.
//
// The transport is stateless: no session outlives its request. A
// stateful session would be bound to the server, and so to the key, of
// the request that opened it, and a later request carrying the session id
// with another key would act with the first; stateless, every request is
// served with its own key, and engramd holds nothing between requests (as
// the adapter rules require). The tools and resources need nothing a
// session gives: they send no requests or notifications to the client.
// Answers are application/json rather than an event stream, for the same
// reason.
func NewHTTPHandler(cfg HTTPConfig) http.Handler {
	cache := mcp.NewSchemaCache()
	base := cmp.Or(cfg.URL, "http://engramd")
	return mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		key, ok := BearerKey(r)
		if !ok {
			return nil // 400; engramd answers 401 before this
		}
		actor := strings.TrimSpace(r.Header.Get(client.ActorHeader))
		c, err := client.New(client.Config{
			URL: base, Key: key, Actor: cmp.Or(actor, DefaultAgent), Session: strings.TrimSpace(r.Header.Get(client.SessionHeader)),
			HTTPClient: cfg.HTTPClient, UserAgent: "engram-mcp",
		})
		if err != nil {
			return nil
		}
		return New(c, Options{Version: cfg.Version, Logger: cfg.Logger, SchemaCache: cache})
	}, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		Logger:              cfg.Logger,
		MaxRequestBodyBytes: cfg.MaxBodyBytes,
		// DNS rebinding protection refuses a localhost connection whose
		// Host is another name, which is every engramd behind a reverse
		// proxy on the same machine. Rebinding attacks a server that trusts
		// whoever reaches it; this one answers only a bearer key, which a
		// rebinding page does not hold.
		DisableLocalhostProtection: true,
	})
}

// BearerKey is the key of the request's Authorization: Bearer header.
func BearerKey(r *http.Request) (string, bool) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	token = strings.TrimSpace(token)
	return token, ok && token != ""
}
