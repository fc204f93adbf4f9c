package retrieve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/pgvector/pgvector-go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/embedding"
	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/policy"
	"github.com/engram-dev/engram/seal"
	"github.com/engram-dev/engram/store"
	"github.com/engram-dev/engram/view"
)

// Result is a layered answer (substrate RFC §15.8): structured records,
// never a blob of text.
type Result = api.RetrieveResult

// Usage is how much of the budget an answer spent.
type Usage = api.BudgetUsage

// Layer is one layer of the answer, best first.
type Layer = api.Layer

// Item is one record of the answer, as trust gating shows it, with its
// score and why it matched.
type Item = api.Item

// Why explains an item's score.
type Why = api.Why

// Settings holds the retrieval configuration in force; a reload swaps it.
type Settings struct{ cfg atomic.Pointer[Config] }

// NewSettings returns settings holding cfg, if it is valid.
func NewSettings(cfg Config) (*Settings, error) {
	s := &Settings{}
	return s, s.Set(cfg)
}

// Set puts cfg in force, if it is valid; otherwise the old one stays.
func (s *Settings) Set(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	s.cfg.Store(&cfg)
	return nil
}

// Config returns the configuration in force.
func (s *Settings) Config() Config { return *s.cfg.Load() }

// Retriever answers retrieval requests from the store.
type Retriever struct {
	sealer   *seal.Sealer
	db       pg.DBTX
	embedder embedding.Embedder
	settings *Settings
	redactor func() *policy.Redactor
	logger   *slog.Logger
	metrics  *metrics
	now      func() time.Time
	// past reports a record past its retention, never returned.
	past func(memory.Record, time.Time) bool
	// denseIndex is the HNSW index of the embedder's dense vectors, when
	// it has one (hasDenseIndex); sizes the tenants' counts that choose
	// it.
	denseIndex    store.DenseIndex
	hasDenseIndex bool
	sizes         tenantSizes
	signatures    signatures
	// authority is what a source of evidence is worth, the write path's
	// table (003 §12.4.6).
	authority memory.Authority
	// inFlight counts the retrievals under way and lastDone is when the
	// last one ended (Unix ns), for Busy.
	inFlight atomic.Int64
	lastDone atomic.Int64
}

// busyAfter is how long after its last retrieval a retriever still counts
// as busy: an agent retrieving task after task leaves gaps between them
// too short for a batch of other work to fit in.
const busyAfter = 20 * time.Millisecond

// Busy reports whether a retrieval is under way or ended within
// busyAfter. Work that competes for the same cores and can wait gives way
// to it: engramd's policy plane classifies in smaller batches, after a
// bounded wait (ingest.Worker.YieldTo).
func (r *Retriever) Busy() bool {
	return r.inFlight.Load() > 0 || time.Since(time.Unix(0, r.lastDone.Load())) < busyAfter
}

// Option configures a [Retriever].
type Option func(*Retriever)

// WithEmbedder sets the embedder of query vectors; without one, retrieval
// is lexical only.
func WithEmbedder(e embedding.Embedder) Option { return func(r *Retriever) { r.embedder = e } }

// WithRedactor sets where gating's redact takes its redactor from: the
// policy in force, read once per answer, so that the operator's literals
// and a reloaded policy apply at read time as they do at write time
// (SR-1). Without it, the built-in secret and personal-data detectors
// alone redact.
func WithRedactor(rd func() *policy.Redactor) Option { return func(r *Retriever) { r.redactor = rd } }

// WithRetention sets what tells a record past its retention (write-path
// RFC §12.10.4): such a record is never returned, even before the
// retention job has expired or deleted it.
func WithRetention(past func(rec memory.Record, now time.Time) bool) Option {
	return func(r *Retriever) { r.past = past }
}

// WithSealer sets the sealer retrieval opens sealed payloads with
// (substrate RFC §15.9); without one, a sealed payload found is an error.
func WithSealer(s *seal.Sealer) Option { return func(r *Retriever) { r.sealer = s } }

// WithAuthority sets the authority table ranking weighs a record's
// provenance by: the write path's configured one (revise.Writer.Authority),
// so that ranking and the gates agree on what a source is worth (003
// §12.4.6). Without it, [memory.DefaultAuthority], the write path's
// default.
func WithAuthority(a memory.Authority) Option { return func(r *Retriever) { r.authority = a.Clone() } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(r *Retriever) { r.logger = l } }

// WithRegistry registers the retrieval metrics.
func WithRegistry(reg prometheus.Registerer) Option {
	return func(r *Retriever) { r.metrics = newMetrics(reg) }
}

// WithClock sets the time retrieval reads salience and validity at.
func WithClock(now func() time.Time) Option { return func(r *Retriever) { r.now = now } }

// New returns a retriever over st with the settings in force.
func New(db pg.DBTX, settings *Settings, opts ...Option) *Retriever {
	r := &Retriever{db: db, settings: settings, logger: slog.New(slog.DiscardHandler), now: time.Now, authority: memory.DefaultAuthority()}
	for _, o := range opts {
		o(r)
	}
	if r.redactor == nil {
		builtin, _ := policy.NewRedactor(nil)
		r.redactor = func() *policy.Redactor { return builtin }
	}
	if r.metrics == nil {
		r.metrics = newMetrics(nil)
	}
	r.denseIndex, r.hasDenseIndex = embedding.DenseIndexOf(r.embedder)
	return r
}

// Retrieve answers req for a tenant: layer by layer, hybrid-ranked,
// trust-gated, within budget, and logged under a new retrieval id.
func (r *Retriever) Retrieve(ctx context.Context, tenant string, req Request) (Result, error) {
	return r.RetrieveFor(ctx, tenant, req, Reader{})
}

// Reader is who retrieves, as access control sees it (write-path RFC
// §12.8.5): the viewer of the read door — its key's clearance ceiling caps
// the request's trust context, and a record it may not read is left out
// before ranking, not counted as withheld: the answer does not say it
// exists. The zero value (the system) restricts nothing.
type Reader struct {
	Viewer view.Viewer
	// DB is where the searches read: a streaming replica within the
	// staleness budget (write-path RFC §12.9.6); nil is the retriever's own
	// database. The retrieval log is written there, always.
	DB pg.DBTX
}

// RetrieveFor is [Retriever.Retrieve] for a reader whose key limits what
// it may read.
func (r *Retriever) RetrieveFor(ctx context.Context, tenant string, req Request, reader Reader) (Result, error) {
	start := time.Now()
	r.inFlight.Add(1)
	defer func() {
		r.lastDone.Store(time.Now().UnixNano())
		r.inFlight.Add(-1)
	}()
	if err := check(req); err != nil {
		return Result{}, err
	}
	cfg, rd := r.settings.Config(), r.redactor()
	now := r.now().UTC()
	id, err := uuid.NewV7()
	if err != nil {
		return Result{}, fmt.Errorf("retrieval id: %w", err)
	}
	res := Result{RetrievalID: id, Clearance: clearance(cfg.Trust, req.Trust)}
	if ceiling := reader.Viewer.Ceiling(); ceiling != "" {
		res.Clearance = minSensitivity(res.Clearance, ceiling)
	}
	budget := budgetOf(cfg, req.Budget)
	res.Budget = Usage{ItemsLimit: budget.items, TokensLimit: budget.tokens}

	queries, sparse, dense, note := r.searches(ctx, cfg, tenant, req.Task, res.Clearance, now)
	if note != "" {
		res.Notes = append(res.Notes, note)
	}
	db := r.db
	if reader.DB != nil {
		db = reader.DB
	}
	found, err := store.Search(ctx, db, tenant, queries)
	if err != nil && (sparse != nil || dense != nil) && ctx.Err() == nil {
		// The vector index is advisory (§15.3): without it, answer
		// lexically and say so.
		r.logger.Warn("vector search failed; answering lexically", slog.String("error", err.Error()))
		res.Notes = append(res.Notes, "vector search unavailable: the vector index could not be read")
		for i := range queries {
			queries[i].Model, queries[i].Sparse, queries[i].Dense, queries[i].DenseScan = "", nil, nil, nil
		}
		sparse, dense = nil, nil
		found, err = store.Search(ctx, db, tenant, queries)
	}
	if err == nil {
		err = r.open(ctx, tenant, found)
	}
	if err != nil {
		return Result{}, err
	}
	for i, q := range queries {
		r.metrics.layerDuration.WithLabelValues(string(layerOf(q.Type))).Observe(found[i].Elapsed.Seconds())
	}
	res.LexicalOnly = sparse == nil && dense == nil

	var returned []uuid.UUID
	for i, q := range queries {
		layer := layerOf(q.Type)
		ranked := r.rank(cfg, layer, req.Task, found[i].Hits, !res.LexicalOnly, now)
		ranked = slices.DeleteFunc(ranked, func(c candidate) bool { return reader.Viewer.May(c.rec) != nil })
		out := Layer{Name: layer}
		if layer == LayerCompetence || layer == LayerPlan {
			out.NeedsDisambiguation, out.SeparatingKeys = disambiguate(ranked, cfg.DisambiguationMargin, req.Task.Conditions)
		}
		res.Withheld += found[i].Withheld
		limit := budget.layers[layer]
		for _, c := range ranked {
			if r.past != nil && r.past(c.rec, now) {
				// Past its retention: gone for every reader, whatever the
				// retention job has done yet (§12.10.4).
				continue
			}
			if len(out.Items) >= limit || res.Budget.Items >= budget.items {
				out.Omitted++
				continue
			}
			item, ok, err := r.gate(cfg, rd, res.Clearance, c)
			if err != nil {
				return Result{}, err
			}
			if !ok {
				res.Withheld++
				continue
			}
			if res.Budget.Tokens+item.Tokens > budget.tokens {
				out.Omitted++
				continue
			}
			out.Items = append(out.Items, item)
			res.Budget.Items++
			res.Budget.Tokens += item.Tokens
			returned = append(returned, item.Record.ID)
		}
		if out.Items == nil {
			out.Items = []Item{}
		}
		res.Layers = append(res.Layers, out)
	}

	err = store.LogRetrieval(ctx, r.db, tenant, store.Retrieval{
		ID: id, At: now, AgentID: req.Task.AgentID, ThreadID: req.Task.ThreadID,
		RecordIDs: returned, Withheld: res.Withheld, LexicalOnly: res.LexicalOnly,
	})
	if err != nil {
		return Result{}, err
	}
	r.metrics.observe(res, time.Since(start))
	return res, nil
}

// searches are the searches Retrieve issues for a task: one per layer,
// with the task's vector, and for a large tenant's dense vectors the walk
// of their index (denseScans). note says why there is no vector, if so.
func (r *Retriever) searches(ctx context.Context, cfg Config, tenant string, t Task, c memory.Sensitivity, now time.Time) (
	qs []store.SearchQuery, sparse *pgvector.SparseVector, dense *pgvector.Vector, note string,
) {
	text := queryText(t)
	qs = r.queries(cfg, t, text, c, now)
	model, sparse, dense, note := r.queryVector(ctx, text)
	for i := range qs {
		if qs[i].Type != memory.Working {
			qs[i].Model, qs[i].Sparse, qs[i].Dense = model, sparse, dense
		}
	}
	r.denseScans(ctx, cfg, tenant, qs)
	return qs, sparse, dense, note
}

// queryText is what a task is searched by: its text, intent, signals and
// tools together, any of whose terms may match.
func queryText(t Task) string {
	parts := append([]string{t.Text, strings.ReplaceAll(t.Intent, "_", " ")}, t.Signals...)
	parts = append(parts, t.Tools...)
	return strings.Join(parts, " ")
}

// queries is one search per layer, in answer order: the thread's working
// memory (when the task names a thread), then the searched layers.
func (r *Retriever) queries(cfg Config, t Task, text string, c memory.Sensitivity, now time.Time) []store.SearchQuery {
	var scope *string
	if t.Scope != "" {
		scope = &t.Scope
	}
	var qs []store.SearchQuery
	for _, l := range Layers {
		if l == LayerWorking {
			if t.ThreadID != "" {
				qs = append(qs, store.SearchQuery{Type: memory.Working, ThreadID: t.ThreadID, MaxSensitivity: c})
			}
			continue
		}
		qs = append(qs, store.SearchQuery{
			Type: recordType(l), Text: text, Conditions: t.Conditions, Scope: scope, AgentID: t.AgentID, ThreadID: t.ThreadID,
			MaxSensitivity: c, At: now, Limit: cfg.Candidates, CommonTermShare: cfg.CommonTermShare,
		})
	}
	return qs
}

// queryVector embeds the task's text. An embedder that fails (an endpoint
// down) leaves retrieval lexical, with a note saying so.
func (r *Retriever) queryVector(ctx context.Context, text string) (model string, sparse *pgvector.SparseVector, dense *pgvector.Vector, note string) {
	if r.embedder == nil {
		return "", nil, nil, "vector search off: no embedder configured"
	}
	if strings.TrimSpace(text) == "" {
		return "", nil, nil, ""
	}
	start := time.Now()
	vs, err := r.embedder.Embed(ctx, []string{text})
	r.metrics.embed.Observe(time.Since(start).Seconds())
	if err != nil || len(vs) != 1 {
		if err == nil {
			err = errors.New("no vector returned")
		}
		r.logger.Warn("embed the task; answering lexically", slog.String("model", r.embedder.Model()), slog.String("error", err.Error()))
		return "", nil, nil, "vector search unavailable: the embedder failed (" + r.embedder.Model() + ")"
	}
	return r.embedder.Model(), vs[0].Sparse, vs[0].Dense, ""
}

// layerOf is the layer a record type answers in.
func layerOf(t memory.Type) LayerName {
	switch t {
	case memory.Working:
		return LayerWorking
	case memory.Semantic:
		return LayerSemantic
	case memory.Competence:
		return LayerCompetence
	case memory.PlanGraph:
		return LayerPlan
	}
	return LayerEpisodic
}

// budget is a request's budget with the defaults filled in.
type budget struct {
	items, tokens int
	layers        map[LayerName]int
}

func budgetOf(cfg Config, b Budget) budget {
	out := budget{items: cfg.Items, tokens: cfg.Tokens, layers: map[LayerName]int{}}
	if b.Items != nil {
		out.items = *b.Items
	}
	if b.Tokens != nil {
		out.tokens = *b.Tokens
	}
	for _, l := range Layers {
		out.layers[l] = cfg.Layers[l]
		if out.layers[l] == 0 {
			out.layers[l] = DefaultConfig().Layers[l]
		}
		if n, ok := b.Layers[l]; ok {
			out.layers[l] = n
		}
	}
	return out
}

// clearance is the clearance an answer is gated at (substrate RFC §13):
// the request's (or the default), lowered for an unauthenticated caller and
// by the environment it will be shown in.
func clearance(cfg TrustConfig, t Trust) memory.Sensitivity {
	c := t.Clearance
	if c == "" {
		c = cfg.DefaultClearance
	}
	if t.Authenticated != nil && !*t.Authenticated {
		c = minSensitivity(c, cfg.UnauthenticatedClearance)
	}
	if cap, ok := cfg.Environments[t.Environment]; ok && t.Environment != "" {
		c = minSensitivity(c, cap)
	}
	return c
}

func minSensitivity(a, b memory.Sensitivity) memory.Sensitivity {
	if a.Rank() <= b.Rank() {
		return a
	}
	return b
}

// tokens estimates a record's size in tokens: about four bytes of payload
// JSON each, plus the envelope.
func tokens(rec memory.Record) int { return len(rec.Payload)/4 + 16 }

// open opens the sealed payloads of what search found: retrieval's one
// place of decryption. Search itself matched sealed records by their
// metadata and tags only (see the README, "Encryption at rest"); ranking,
// gating and redaction then work on the plaintext, in memory.
func (r *Retriever) open(ctx context.Context, tenant string, found []store.SearchResult) error {
	for i := range found {
		for j := range found[i].Hits {
			if err := r.sealer.OpenRecord(ctx, tenant, &found[i].Hits[j].Record); err != nil {
				return err
			}
		}
	}
	return nil
}
