package openintent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/client"
	"github.com/engram-dev/engram/memory"
)

// Defaults of [Config].
const (
	// DefaultEpisodicCapacity is each agent's episodic capacity (RFC-0015
	// §2.2).
	DefaultEpisodicCapacity = 1000
	// DefaultWorkingCapacity is each task's working-memory limit (§9.4,
	// max_working_memory_per_task of §6.6).
	DefaultWorkingCapacity = 100
)

// Config configures a [Handler].
type Config struct {
	// HTTPClient serves the /v1 requests the handler makes: inside engramd,
	// client.InProcess over its own API handler.
	HTTPClient *http.Client
	// URL is the base URL of those requests; empty is http://engramd,
	// which an in-process client never dials.
	URL string
	// EpisodicCapacity is each agent's episodic capacity; 0 is
	// [DefaultEpisodicCapacity].
	EpisodicCapacity int
	// WorkingCapacity is each task's working-memory limit (an entry with
	// no task counts against its agent's); 0 is [DefaultWorkingCapacity].
	WorkingCapacity int
	// Now is the clock expiry is judged by; nil is time.Now.
	Now func() time.Time
}

// Handler serves OpenIntent RFC-0015 memory under /api/v1/. It keeps no
// state: every request is a few calls of engramd's /v1 API made with the
// caller's own key.
type Handler struct {
	cfg Config
	mux *http.ServeMux
}

// Routes are the patterns a [Handler] serves, each documented in engramd's
// OpenAPI document.
var Routes = []string{
	"POST /api/v1/memory",
	"GET /api/v1/memory",
	"GET /api/v1/memory/{id}",
	"PATCH /api/v1/memory/{id}",
	"DELETE /api/v1/memory/{id}",
	"GET /api/v1/memory/events/{id}",
	"POST /api/v1/memory/batch",
	"DELETE /api/v1/memory/batch",
	"GET /api/v1/memory/namespaces",
	"GET /api/v1/memory/namespaces/{namespace}",
	"PATCH /api/v1/memory/namespaces/{namespace}",
	"GET /api/v1/agents/{agent_id}/memory",
	"GET /api/v1/agents/{agent_id}/memory/summary",
	"POST /api/v1/tasks/{task_id}/memory/archive",
}

// New returns a handler for cfg.
func New(cfg Config) *Handler {
	cfg.URL = cmp.Or(cfg.URL, "http://engramd")
	cfg.EpisodicCapacity = cmp.Or(cfg.EpisodicCapacity, DefaultEpisodicCapacity)
	cfg.WorkingCapacity = cmp.Or(cfg.WorkingCapacity, DefaultWorkingCapacity)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	h := &Handler{cfg: cfg, mux: http.NewServeMux()}
	handlers := map[string]func(*call) error{
		"POST /api/v1/memory":                          h.create,
		"GET /api/v1/memory":                           h.query,
		"GET /api/v1/memory/{id}":                      h.get,
		"PATCH /api/v1/memory/{id}":                    h.update,
		"DELETE /api/v1/memory/{id}":                   h.delete,
		"GET /api/v1/memory/events/{id}":               h.events,
		"POST /api/v1/memory/batch":                    h.batchUpsert,
		"DELETE /api/v1/memory/batch":                  h.batchDelete,
		"GET /api/v1/memory/namespaces":                h.namespaces,
		"GET /api/v1/memory/namespaces/{namespace}":    h.namespace,
		"PATCH /api/v1/memory/namespaces/{namespace}":  h.setNamespace,
		"GET /api/v1/agents/{agent_id}/memory":         h.list,
		"GET /api/v1/agents/{agent_id}/memory/summary": h.summary,
		"POST /api/v1/tasks/{task_id}/memory/archive":  h.archive,
	}
	for _, pattern := range Routes {
		fn := handlers[pattern]
		h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) { h.serve(w, r, fn) })
	}
	h.mux.HandleFunc(DiscoveryRoute, h.discovery)
	return h
}

// ServeHTTP implements [http.Handler].
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := h.mux.Handler(r); pattern == "" {
		writeError(w, &Error{Status: http.StatusNotFound, Code: "NOT_FOUND", Message: "no OpenIntent memory route has this method and path"})
		return
	}
	h.mux.ServeHTTP(w, r)
}

// call is one request: the caller's client of the /v1 API and its agent.
type call struct {
	w     http.ResponseWriter
	r     *http.Request
	ctx   context.Context
	c     *client.Client
	agent string // X-Agent-ID
}

// serve authenticates a request by its key, X-API-Key (as the SDK sends
// it) or a bearer token, and runs fn with a client that calls /v1 with it.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, fn func(*call) error) {
	key := strings.TrimSpace(r.Header.Get("X-API-Key"))
	if key == "" {
		key, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		key = strings.TrimSpace(key)
	}
	if key == "" {
		writeError(w, &Error{Status: http.StatusUnauthorized, Code: "UNAUTHORIZED", Message: "send the API key as X-API-Key"})
		return
	}
	agent := strings.TrimSpace(r.Header.Get("X-Agent-ID"))
	c, err := client.New(client.Config{URL: h.cfg.URL, Key: key, Actor: agent, HTTPClient: h.cfg.HTTPClient,
		UserAgent: "engram-openintent"})
	if err != nil {
		writeError(w, &Error{Status: http.StatusInternalServerError, Code: "INTERNAL", Message: "the adapter is misconfigured"})
		return
	}
	if err := fn(&call{w: w, r: r, ctx: r.Context(), c: c, agent: agent}); err != nil {
		writeError(w, asError(err))
	}
}

// decodeBody reads a JSON object body.
func (cl *call) decodeBody() (map[string]json.RawMessage, error) {
	b, err := io.ReadAll(io.LimitReader(cl.r.Body, 4<<20))
	if err != nil {
		return nil, badRequest("the body could not be read", fieldError{"", err.Error()})
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(b, &body); err != nil || body == nil {
		return nil, badRequest("the body must be a JSON object", fieldError{"", "must be a JSON object"})
	}
	return body, nil
}

// entryID parses an entry id: a record id.
func entryID(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return id, notFound()
	}
	return id, nil
}

// fetch reads an entry by id: a record that is no entry, or an entry past
// its expires_at, is not found (RFC-0015 §9.3).
func (h *Handler) fetch(cl *call, id uuid.UUID) (memory.Record, Entry, stored, error) {
	rec, err := cl.c.GetRecord(cl.ctx, id)
	if err != nil {
		return memory.Record{}, Entry{}, stored{}, err
	}
	e, s, ok := entryOf(*rec)
	if !ok || !live(*rec) || h.expired(*rec) {
		return memory.Record{}, Entry{}, stored{}, notFound()
	}
	return *rec, e, s, nil
}

// live reports whether rec still holds its entry: a deleted record (by a
// key that may not purge it), an expired or archived one, is gone
// (RFC-0015 §9.3: deletion is immediate), though GET /v1/records/{id}
// still reads it until it is purged.
func live(rec memory.Record) bool {
	switch rec.Status {
	case memory.Active, memory.Contested, memory.Draft, memory.Quarantined:
		return true
	}
	return false
}

// expired reports whether rec's expires_at has passed: such an entry is
// never answered, whether or not decay has expired its record yet.
func (h *Handler) expired(rec memory.Record) bool {
	at := rec.Lifecycle.ExpiresAt
	return at != nil && !h.cfg.Now().Before(*at)
}

// ownerOnly refuses a write to a working or episodic entry by another agent
// than its owner (RFC-0015 §2.1, §2.2, §8.2: others read it at most). A
// request that names no agent is its key's to decide.
func (cl *call) ownerOnly(s stored) error {
	if s.MemoryType == TierSemantic || cl.agent == "" || cl.agent == s.AgentID {
		return nil
	}
	return &Error{Status: http.StatusForbidden, Code: "ACCESS_DENIED",
		Message: "only agent " + strconv.Quote(s.AgentID) + " writes its " + s.MemoryType + " memory"}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// apiError is the /v1 problem err carries, if any.
func apiError(err error) (*client.Error, bool) {
	var ce *client.Error
	ok := errors.As(err, &ce)
	return ce, ok
}
