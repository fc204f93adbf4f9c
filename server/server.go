// Package server is engramd's HTTP API: routing under /v1, bearer-key
// authentication that puts every request in one tenant (or, for the
// operator's routes, in none), RFC 9457
// problem+json errors, the OpenAPI document, health and Prometheus metrics;
// and the protocol adapters mounted beside the API, each calling it in
// process with its caller's key: the MCP server at /mcp (package mcpserver);
// and the operator console at /console (package console), whose pages call
// the API from the browser with the key signed in with.
package server

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/engram-dev/engram/access"
	"github.com/engram-dev/engram/client"
	"github.com/engram-dev/engram/console"
	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/jobs"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/openintent"
	"github.com/engram-dev/engram/openwop"
	"github.com/engram-dev/engram/policy"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/view"
)

// OpenAPI is the API's OpenAPI 3.1 document, served at /v1/openapi.json.
//
//go:embed openapi.json
var OpenAPI []byte

// Key is one API key the server accepts: a tenant's, resolved to its
// tenant, or an operator's, which has none. Keys kept in the database
// (POST /v1/keys) are accepted as well.
type Key struct {
	// Tenant is the tenant a tenant key reads and writes; empty for an
	// operator key.
	Tenant string
	Name   string
	Secret string
	// Role is what the key may call; empty (or [RoleTenant]) means
	// [DefaultRole], with [DefaultClearance] unless Clearance is set.
	Role Role
	// Agent, Domains and Clearance are the key's attributes (see
	// [access.Principal]); zero values restrict nothing.
	Agent     string
	Domains   []string
	Clearance memory.Sensitivity
}

// Config is what a [Server] needs.
type Config struct {
	// DB is where records are read from.
	DB pg.DBTX
	// Reads sends retrieval, the record listing and the record reads to
	// replicas within the staleness budget; nil reads on DB.
	Reads ReadRouter
	// Writer is the write path every write goes through; nil means one
	// over DB with the default configuration.
	Writer *revise.Writer
	Keys   []Key
	Logger *slog.Logger
	// Ready reports whether the server can serve (the database answers).
	Ready func(ctx context.Context) error
	// Background is the context the server's background work (erasures)
	// runs on, without its cancellation; nil means context.Background().
	Background context.Context
	// MaxBodyBytes caps a request body; 0 means 4 MiB.
	MaxBodyBytes int64
	// Registry receives the server's metrics; nil means a new one.
	Registry *prometheus.Registry
	// Ingest stages events (POST /v1/events); nil serves 503 there.
	Ingest *ingest.Ingester
	// Policy returns the policy in force, the one the ingester redacts
	// events with; the records API, feedback, retrieval and problem
	// responses are redacted with it too. Nil means [policy.Default].
	Policy func() *policy.Policy
	// Decay serves feedback, restore, salience statistics and previews;
	// nil serves 503 there.
	Decay *decay.Decayer
	// Jobs lists and runs the periodic jobs; nil serves 503 there.
	Jobs *jobs.Scheduler
	// Retrieve answers POST /v1/retrieve; nil serves 503 there.
	Retrieve *retrieve.Retriever
	// Now is the time records' current salience is shown at; nil means
	// time.Now.
	Now func() time.Time
	// OpenIntent configures OpenIntent memory (/api/v1/memory): its
	// capacities. Its HTTPClient and Now are the server's own.
	OpenIntent openintent.Config
	// OpenWOP configures the OpenWOP MemoryAdapter mounted under /openwop
	// and /.well-known/openwop: its OnSecret (redact or reject; empty
	// follows the policy). Its client, policy, clock and logger are the
	// server's.
	OpenWOP openwop.Config
	// Console configures the operator console: the evaluation report its
	// Learning page draws (see [console.Config]).
	Console console.Config
	// RequestLogLevel is the level of the request log, a line a request
	// with its method, path (redacted, without its query), status,
	// duration and tenant, never a key or a body; the zero value is info.
	RequestLogLevel slog.Level
	// NoRequestLog turns the request log off.
	NoRequestLog bool
}

// Server serves the engram API.
type Server struct {
	db     pg.DBTX
	writer *revise.Writer
	// reader is the read door: every read of records goes through it.
	reader   *view.Reader
	keys     map[[sha256.Size]byte]principal
	logger   *slog.Logger
	ready    func(context.Context) error
	maxBody  int64
	metrics  *metrics
	ingest   *ingest.Ingester
	policy   func() *policy.Policy
	decay    *decay.Decayer
	jobs     *jobs.Scheduler
	retrieve *retrieve.Retriever
	reads    ReadRouter
	now      func() time.Time
	handler  http.Handler
	// requestLog is the request log's level; nil when it is off.
	requestLog *slog.Level
	// gatherer reads back the metrics of Config.Registry, and started is
	// when the server was made: GET /v1/stats/writes.
	gatherer prometheus.Gatherer
	started  time.Time
	// background is the context of work that outlives its request
	// (erasures), ended by Close; erasing counts that work.
	background     context.Context
	stopBackground context.CancelFunc
	erasing        sync.WaitGroup
}

// principal is who a request's key speaks for: its tenant, name and role,
// and the attributes access decisions read (see [principal.access]).
type principal struct {
	tenant, name string
	role         Role
	agent        string
	domains      []string
	clearance    memory.Sensitivity
	// session is the request's X-Engram-Session: whose write budget its
	// writes count against.
	session string
	// rules are the access rules of the policy in force when the request
	// arrived.
	rules []access.Rule
}

// New returns a server for cfg.
func New(cfg Config) *Server {
	s := &Server{
		db:       cfg.DB,
		writer:   cfg.Writer,
		keys:     make(map[[sha256.Size]byte]principal, len(cfg.Keys)),
		logger:   cfg.Logger,
		ready:    cfg.Ready,
		maxBody:  cfg.MaxBodyBytes,
		ingest:   cfg.Ingest,
		policy:   cfg.Policy,
		decay:    cfg.Decay,
		jobs:     cfg.Jobs,
		retrieve: cfg.Retrieve,
		reads:    cfg.Reads,
		now:      cfg.Now,
	}
	if s.now == nil {
		s.now = time.Now
	}
	if !cfg.NoRequestLog {
		level := cfg.RequestLogLevel
		s.requestLog = &level
	}
	bg := context.Background()
	if cfg.Background != nil {
		bg = context.WithoutCancel(cfg.Background)
	}
	s.background, s.stopBackground = context.WithCancel(bg)
	if s.writer == nil {
		s.writer = revise.New(cfg.DB, revise.Config{Now: cfg.Now})
	}
	s.reader = view.New(cfg.DB, s.writer.Sealer())
	if s.policy == nil {
		p := policy.Default()
		s.policy = func() *policy.Policy { return p }
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.maxBody == 0 {
		s.maxBody = 4 << 20
	}
	for _, k := range cfg.Keys {
		// Keys are held only as hashes, so a heap dump or a debug print of
		// the server does not show them.
		role, clearance := normalRole(k.Role, k.Clearance)
		s.keys[sha256.Sum256([]byte(k.Secret))] = principal{tenant: k.Tenant, name: k.Name, role: role,
			agent: k.Agent, domains: k.Domains, clearance: clearance}
	}
	reg := cfg.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	s.metrics = newMetrics(reg)
	s.gatherer, s.started = reg, s.now()

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", s.handleReady)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /v1/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(OpenAPI)
	})

	// The operator console (issue 16): static assets, which call /v1 with
	// the key the operator signs in with, like any client; and the last
	// evaluation's curves, if configured.
	con := console.Handler(cfg.Console)
	mux.Handle("GET /console", con)
	mux.Handle("GET "+console.Prefix, con)

	for _, rt := range s.routes() {
		mux.Handle(rt.pattern, s.authenticated(rt))
	}
	// OpenIntent RFC-0015 memory (issue 15): a translation onto this
	// API, called in process with each caller's own key.
	oic := cfg.OpenIntent
	oic.HTTPClient = client.InProcess(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }))
	oic.Now = s.now
	oi := openintent.New(oic)
	for _, pattern := range openintent.Routes {
		mux.Handle(pattern, oi)
	}
	// Its discovery document, which the SDK's discover() reads.
	mux.Handle(openintent.DiscoveryRoute, oi)
	// Any other path under /api/v1/ is answered in OpenIntent's error
	// shape, which its SDK reads.
	mux.Handle("/api/v1/", oi)
	// The OpenWOP MemoryAdapter calls the API in this process with its
	// caller's key (issue 15).
	wop := cfg.OpenWOP
	wop.HTTPClient = client.InProcess(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }))
	wop.Policy, wop.Now, wop.Logger = s.policy, s.now, s.logger
	openwop.New(wop).Mount(mux)
	// The MCP server (issue 15): its tools call the routes above in
	// process, with the caller's key.
	mux.Handle("/mcp", s.mcpHandler())
	s.handler = s.observe(problemOnMiss(mux, s))
	return s
}

// route is one authenticated API endpoint, and the roles whose keys may
// call it. A stream's body has no size limit: it is read a bounded line at a
// time.
type route struct {
	pattern string
	handle  func(http.ResponseWriter, *http.Request) error
	roles   []Role
	stream  bool
}

// routes lists the API under /v1; the OpenAPI document describes each one,
// and its x-engram-roles the roles that may call it. A tenant's data is
// served to its tenant's keys only; what works across every tenant (the
// jobs) to operator keys only.
func (s *Server) routes() []route {
	return []route{
		{"POST /v1/records", s.createRecord, tenantRoles, false},
		{"GET /v1/records", s.listRecords, tenantRoles, false},
		{"POST /v1/records:merge", s.mergeRecords, tenantRoles, false},
		// Several revisions in one transaction (substrate RFC §15.7).
		{"POST /v1/records:batch", s.batchRecords, tenantRoles, false},
		{"GET /v1/records/{id}", s.getRecord, tenantRoles, false},
		{"PATCH /v1/records/{id}", s.updateRecord, tenantRoles, false},
		{"DELETE /v1/records/{id}", s.deleteRecord, tenantRoles, false},
		// Custom methods in the style of Google's AIP-136:
		// POST /v1/records/{id}:supersede and the like.
		{"POST /v1/records/{idop}", s.reviseRecord, tenantRoles, false},
		{"GET /v1/records/{id}/history", s.recordHistory, tenantRoles, false},
		{"GET /v1/records/{id}/audit", s.recordAudit, tenantRoles, false},
		{"GET /v1/records/{id}/relations", s.recordRelations, tenantRoles, false},
		{"POST /v1/artifacts", s.putArtifact, tenantRoles, false},
		{"GET /v1/artifacts/{sha256}", s.getArtifact, tenantRoles, false},
		{"POST /v1/events", s.postEvents, tenantRoles, false},
		{"POST /v1/events:stream", s.streamEvents, tenantRoles, true},
		{"GET /v1/candidates", s.listCandidates, reviewerRoles, false},
		{"GET /v1/threads/{thread_id}", s.getThread, tenantRoles, false},
		// The policy is the operator's and explaining it reads no tenant's
		// data.
		{"POST /v1/policy:explain", s.explainPolicy, anyRole, false},
		{"POST /v1/retrieve", s.retrieveMemory, tenantRoles, false},
		{"POST /v1/feedback", s.feedback, tenantRoles, false},
		// Statistics and previews read the caller's tenant only.
		{"GET /v1/stats/salience", s.salienceStats, tenantRoles, false},
		{"POST /v1/decay/preview", s.decayPreview, tenantRoles, false},
		// The health page's metrics (substrate RFC §15.10): a tenant's keys
		// read their tenant's, an operator's the tenant it names; and the
		// tenants an operator may name.
		{"GET /v1/stats/health", s.healthStats, anyRole, false},
		// Whom a key speaks for: its own attributes, read by any key.
		{"GET /v1/whoami", s.whoami, anyRole, false},
		{"GET /v1/tenants", s.listTenants, operatorRoles, false},
		// The review queue (write-path RFC §12.6): a tenant's keys review
		// its drafts, until reviewers get a role of their own.
		{"GET /v1/agents", s.listAgents, tenantRoles, false},
		{"GET /v1/reviews", s.listReviews, reviewerRoles, false},
		{"GET /v1/reviews/{id}", s.getReview, reviewerRoles, false},
		{"POST /v1/reviews/{idop}", s.decideReview, tenantRoles, false},
		// Jobs walk every tenant, and their runs' counts are every
		// tenant's.
		{"GET /v1/jobs", s.listJobs, operatorRoles, false},
		{"POST /v1/jobs/{nameop}", s.runJob, operatorRoles, false},
		// The write path's metrics are this daemon's, over every tenant.
		{"GET /v1/stats/writes", s.writeStats, operatorRoles, false},
		// Leases with fencing tokens (write-path RFC §12.8.3): a tenant's
		// agents lock its records and scopes.
		{"POST /v1/leases", s.acquireLease, tenantRoles, false},
		{"GET /v1/leases/{id}", s.getLease, tenantRoles, false},
		{"DELETE /v1/leases/{id}", s.releaseLease, tenantRoles, false},
		{"POST /v1/leases/{idop}", s.leaseMethod, tenantRoles, false},
		// The compliance report covers every tenant (write-path RFC
		// §12.10.5).
		{"GET /v1/compliance", s.getCompliance, operatorRoles, false},
		// Erasure on demand (write-path RFC §12.10.2) hard-deletes: a
		// curator's keys only (§12.8.2: hard delete is the curator's).
		{"POST /v1/erasures", s.startErasure, curatorRoles, false},
		{"GET /v1/erasures/{id}", s.getErasure, curatorRoles, false},
		// Keys kept in the database (write-path RFC §12.8.2): the
		// operator's, across every tenant.
		{"POST /v1/keys", s.createKey, operatorRoles, false},
		{"GET /v1/keys", s.listKeys, operatorRoles, false},
		{"POST /v1/keys/{nameop}", s.revokeKey, operatorRoles, false},
		// Encryption at rest: the daemon holds the master keys; the
		// operator asks it to re-wrap or re-seal, and no key travels.
		{"GET /v1/encryption", s.encryptionStatus, operatorRoles, false},
		{"POST /v1/encryption:rotate-master", s.rotateMaster, operatorRoles, false},
		{"POST /v1/encryption:rotate-data", s.rotateData, operatorRoles, false},
		// A learned procedure as an Agent Skills SKILL.md (issue 15).
		{"GET /v1/records/{id}/skill.md", s.recordSkill, tenantRoles, false},
	}
}

// ServeHTTP implements [http.Handler].
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	if s.ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.ready(ctx); err != nil {
			s.logger.WarnContext(r.Context(), "not ready", slog.String("error", err.Error()))
			s.writeProblem(w, r, problem(http.StatusServiceUnavailable, "not-ready", "Not ready", "the database does not answer"))
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

type principalKey struct{}

// authenticated resolves the bearer key to its principal, refuses a key
// whose role the route does not admit before reading anything, caps the
// body, refuses parameters and headers PostgreSQL could not store, and
// turns a handler's error into a problem response.
func (s *Server) authenticated(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		token = strings.TrimSpace(token)
		if !ok || token == "" {
			s.writeProblem(w, r, errUnauthorized)
			return
		}
		p, err := s.lookupKey(r.Context(), sha256.Sum256([]byte(token)))
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		noteTenant(r, p)
		p.session = sessionOf(r)
		p.rules = s.policy().AccessRules()
		if !slices.Contains(rt.roles, p.role) {
			s.writeProblem(w, r, forbidden(rt.roles))
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
		if !rt.stream {
			r.Body = http.MaxBytesReader(w, r.Body, s.maxBody)
		}
		if err := checkUnstorable(r); err != nil {
			s.writeProblem(w, r, err)
			return
		}
		key, idempotent, err := idempotencyKeyOf(r, rt)
		switch {
		case err != nil:
		case idempotent:
			err = s.idempotent(w, r, rt, key)
		default:
			err = rt.handle(w, r)
		}
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		if s.reads != nil && r.Method != http.MethodGet && r.Method != http.MethodHead && rt.pattern != retrievePattern {
			// The key's next reads see what it just wrote (write-path
			// RFC §12.9.2, causal): a replica that lacks it is passed over.
			s.reads.Wrote(readerOf(p))
		}
	})
}

// retrievePattern is the one POST that writes nothing a reader reads back
// (its retrieval log is the operator's).
const retrievePattern = "POST /v1/retrieve"

// ReadRouter chooses where a read goes (a streaming replica within the
// staleness budget that has the reader's last write, or the primary) and
// learns of each reader's writes: replicas.Router.
type ReadRouter interface {
	For(reader string) pg.DBTX
	Wrote(reader string)
}

// replicaReader is the read door for a read-only request: over a replica
// within the staleness budget that has the key's last write, or over the
// primary (retrieval, the record listing and the record reads).
func (s *Server) replicaReader(r *http.Request) *view.Reader {
	if s.reads == nil {
		return s.reader
	}
	return s.reader.Over(s.reads.For(readerOf(principalOf(r))))
}

// readerOf names the reader whose writes its reads must see: its key.
func readerOf(p principal) string { return p.tenant + "/" + p.name }

func principalOf(r *http.Request) principal {
	p, _ := r.Context().Value(principalKey{}).(principal)
	return p
}

// viewerOf is who reads memory for the request: its key, under the access
// rules in force when it arrived.
func viewerOf(r *http.Request) view.Viewer {
	p := principalOf(r)
	return view.As(p.access(), p.rules)
}

// change is the audit identity of a request: the key's name, and the agent
// the caller says it acts for (X-Engram-Actor), if any.
func change(r *http.Request, rationale string) revise.Change {
	actor := "key:" + principalOf(r).name
	if a := strings.TrimSpace(r.Header.Get("X-Engram-Actor")); a != "" {
		if len(a) > 200 {
			a = a[:200]
		}
		actor = a + " via " + actor
	}
	p := principalOf(r)
	ap := p.access()
	return revise.Change{Actor: actor, Rationale: rationale, Principal: &ap, Rules: p.rules}
}

// problemOnMiss answers requests no route matches with a problem, 404 or
// 405 with the mux's Allow header, instead of the mux's plain text.
func problemOnMiss(mux *http.ServeMux, s *Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		probe := &headerRecorder{header: http.Header{}}
		h.ServeHTTP(probe, r)
		if probe.status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", probe.header.Get("Allow"))
			s.writeProblem(w, r, errMethod)
			return
		}
		s.writeProblem(w, r, errRouteNotFound)
	})
}

// headerRecorder keeps the status and headers a handler writes, and drops
// its body.
type headerRecorder struct {
	header http.Header
	status int
}

func (h *headerRecorder) Header() http.Header         { return h.header }
func (h *headerRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (h *headerRecorder) WriteHeader(code int)        { h.status = code }

// statusRecorder remembers the status a handler wrote, and the time the
// request shows salience at: when it arrived, or its as_of.
type statusRecorder struct {
	http.ResponseWriter
	status int
	at     time.Time
}

func (w *statusRecorder) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection, to flush a
// stream and read its body while answering it.
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// requestNote is what the request log learns of a request on its way:
// the tenant its key is for, once authenticated.
type requestNote struct{ tenant string }

type requestNoteKey struct{}

// noteTenant tells the request log the tenant of the request's key.
func noteTenant(r *http.Request, p principal) {
	if n, ok := r.Context().Value(requestNoteKey{}).(*requestNote); ok {
		n.tenant = p.tenant
	}
}

// observe logs each request (never its key, query or body) and records
// its duration.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK, at: s.now()}
		if asOf, err := time.Parse(time.RFC3339Nano, r.URL.Query().Get("as_of")); err == nil {
			rec.at = asOf
		}
		note := &requestNote{}
		r = r.WithContext(context.WithValue(r.Context(), requestNoteKey{}, note))
		next.ServeHTTP(rec, r)
		route := r.Pattern
		if route == "" || route == "/" {
			route = "unmatched"
		}
		d := time.Since(start)
		s.metrics.requests.WithLabelValues(route, strconv.Itoa(rec.status)).Observe(d.Seconds())
		if s.requestLog != nil {
			s.logger.LogAttrs(r.Context(), *s.requestLog, "request",
				slog.String("method", r.Method), slog.String("path", redactPath(s.policy().Redactor(), r.URL.Path)),
				slog.Int("status", rec.status), slog.Duration("duration", d), slog.String("tenant", note.tenant))
		}
	})
}

// metrics are the HTTP layer's; revisions are counted by the write path
// (revise.MetricRevisions), whoever made them.
type metrics struct {
	requests *prometheus.HistogramVec
	// denials counts refusals by access control and budgets, by reason
	// (access.Reason*).
	denials *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "engram_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route pattern and status code.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route", "code"}),
	}
	m.denials = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "engram_access_denials_total",
		Help: "Requests refused by access control (403) or a write budget (429), by reason: role, rule, clearance, domain or budget.",
	}, []string{"reason"})
	reg.MustRegister(m.requests, m.denials)
	return m
}
