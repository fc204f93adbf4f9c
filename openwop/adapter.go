package openwop

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/client"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/policy"
)

// What a put does with a secret or personal datum its content or tags
// hold (SR-1, RFC 0004 §D): see [Config.OnSecret].
const (
	OnSecretRedact = "redact"
	OnSecretReject = "reject"
)

// Backend is the memory backend the adapter advertises (RFC 0004 §B, as the
// current spec names the cross-run backend).
const Backend = "long-term"

// DefaultListLimit is the number of entries a list answers when it asks
// for no limit (or 0, which the spec treats alike); MaxListLimit caps a
// larger one.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// maxPutBytes caps a put's body: the content, its tags and their encoding.
const maxPutBytes = 4 * MaxEntryBytes

// Config configures an [Adapter]. In engramd's configuration file it is
// the openwop section, whose one key is on_secret; the server sets the
// rest.
type Config struct {
	// HTTPClient reaches engramd's /v1 API at URL; mounted in engramd it is
	// [client.InProcess] over the API. Required.
	HTTPClient *http.Client `yaml:"-"`
	// URL is the API's base URL; empty is http://engramd, which a client
	// made by client.InProcess ignores.
	URL string `yaml:"-"`
	// OnSecret is what a put does when the policy's redactor finds a secret
	// or personal datum in the content or the tags (SR-1): redact (store it
	// with [REDACTED:<label>] markers) or reject (refuse the write with
	// secret_leakage). Empty follows the policy's secrets.on_secret. A
	// policy that rejects wins: the API refuses such writes itself. yaml
	// openwop.on_secret.
	OnSecret string `yaml:"on_secret"`
	// Policy returns the policy in force, whose redactor a put runs; nil
	// means policy.Default().
	Policy func() *policy.Policy `yaml:"-"`
	// RefKeys are the secrets memoryRefs are signed with (see
	// [RefSigner]): the first signs, each resolves. engramd passes its
	// provenance signing keys, the active one first. Empty, the adapter
	// signs with a random secret of its own, and its refs stop resolving
	// when it is made again (engramd restarts).
	RefKeys []string `yaml:"-"`
	// Now is the clock expiresAt is judged by; nil means time.Now.
	Now    func() time.Time `yaml:"-"`
	Logger *slog.Logger     `yaml:"-"`
}

// Validate names a bad field of c.
func (c Config) Validate() error {
	switch c.OnSecret {
	case "", OnSecretRedact, OnSecretReject:
		return nil
	}
	return fmt.Errorf("openwop.on_secret: %q is not redact or reject", c.OnSecret)
}

// Adapter serves the OpenWOP MemoryAdapter over engramd's /v1 API. It
// keeps no state: every request is translated into calls made with the
// caller's own key.
type Adapter struct {
	cfg  Config
	refs *RefSigner
}

// New returns an adapter for cfg.
func New(cfg Config) *Adapter {
	cfg.URL = cmp.Or(cfg.URL, "http://engramd")
	if cfg.Policy == nil {
		p := policy.Default()
		cfg.Policy = func() *policy.Policy { return p }
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Adapter{cfg: cfg, refs: NewRefSigner(cfg.RefKeys...)}
}

// Route is one endpoint of the adapter; NeedsKey is false for the one
// that needs none, the discovery document.
type Route struct {
	Pattern  string
	NeedsKey bool
}

// Routes are the adapter's endpoints, as [Adapter.Mount] registers them.
var Routes = []Route{
	{"GET /.well-known/openwop", false},
	{"POST /openwop/v1/memory-refs", true},
	{"GET /openwop/v1/memory/{memoryRef}/entries", true},
	{"POST /openwop/v1/memory/{memoryRef}/entries", true},
	{"GET /openwop/v1/memory/{memoryRef}/entries/{id}", true},
	{"DELETE /openwop/v1/memory/{memoryRef}/entries/{id}", true},
}

// Prefixes are the paths under which every answer is the adapter's: an
// unknown path or a method a route does not serve is answered in the
// OpenWOP error envelope too, never in the API's problem+json.
var Prefixes = []string{"/openwop", "/openwop/", "/.well-known/openwop", "/.well-known/openwop/"}

// Mount registers [Routes] on mux, and [Prefixes] for what they miss.
func (a *Adapter) Mount(mux *http.ServeMux) {
	handlers := map[string]func(http.ResponseWriter, *http.Request) error{
		"GET /.well-known/openwop":                           a.wellKnown,
		"POST /openwop/v1/memory-refs":                       a.issueRef,
		"GET /openwop/v1/memory/{memoryRef}/entries":         a.list,
		"POST /openwop/v1/memory/{memoryRef}/entries":        a.put,
		"GET /openwop/v1/memory/{memoryRef}/entries/{id}":    a.get,
		"DELETE /openwop/v1/memory/{memoryRef}/entries/{id}": a.delete,
	}
	// own routes the adapter's patterns alone, so that a miss can tell a
	// wrong method (and the methods the path serves) from a wrong path.
	own := http.NewServeMux()
	for _, rt := range Routes {
		h := handlers[rt.Pattern]
		if h == nil {
			panic("openwop: no handler for " + rt.Pattern)
		}
		own.Handle(rt.Pattern, http.NotFoundHandler())
		mux.Handle(rt.Pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := h(w, r); err != nil {
				e := fromAPI(err)
				if e.Code == CodeInternal {
					a.cfg.Logger.ErrorContext(r.Context(), "openwop call failed", slog.String("route", rt.Pattern), slog.String("error", err.Error()))
				}
				writeError(w, e)
			}
		}))
	}
	miss := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		probe := &allowRecorder{header: http.Header{}}
		h, _ := own.Handler(r)
		h.ServeHTTP(probe, r)
		if probe.status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", probe.header.Get("Allow"))
			// The method is never quoted: a caller may have sent anything.
			writeError(w, &Error{Code: CodeMethodNotAllowed, Message: "this path serves " + probe.header.Get("Allow") + " only",
				Details: map[string]any{"allow": strings.Split(probe.header.Get("Allow"), ", ")}})
			return
		}
		// The path is never quoted: a caller may have pasted anything there.
		writeError(w, &Error{Code: CodeNotFound, Message: "there is no OpenWOP route at this path; see GET /.well-known/openwop"})
	})
	for _, p := range Prefixes {
		mux.Handle(p, miss)
	}
}

// allowRecorder keeps the status and the headers a handler writes, and
// drops its body.
type allowRecorder struct {
	header http.Header
	status int
}

func (h *allowRecorder) Header() http.Header         { return h.header }
func (h *allowRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (h *allowRecorder) WriteHeader(code int)        { h.status = code }

// jsonBody refuses a body declared as anything but JSON
// (application/json, or application/<x>+json) with 415; an undeclared one
// is read as JSON.
func jsonBody(r *http.Request) *Error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")) {
		return nil
	}
	return &Error{Code: CodeUnsupportedMediaType, Message: "the body must be JSON, sent as Content-Type: application/json"}
}

// onSecret is the put's choice in force: reject when the adapter or the
// policy rejects, or when OnSecret is no valid choice (see
// [Config.Validate]): failing closed.
func (a *Adapter) onSecret() string {
	if a.cfg.OnSecret != "" && a.cfg.OnSecret != OnSecretRedact || a.cfg.Policy().RejectSecrets() {
		return OnSecretReject
	}
	return OnSecretRedact
}

// ProtocolVersion is the OpenWOP protocol version the adapter speaks: v1,
// whose schemas (https://openwop.dev/spec/v1/…) it answers in.
const ProtocolVersion = "1.0"

// Capabilities is the discovery document of /.well-known/openwop
// (capabilities.schema.json; RFC 0004 §B as the current schema has it):
// the four fields its root requires, and the memory adapter at the
// document root, agents.memoryBackends and memory. It advertises only what
// is served: engram runs no workflows, so it recognizes no envelope and its
// envelope limits are 0.
type Capabilities struct {
	ProtocolVersion    string         `json:"protocolVersion"`
	SupportedEnvelopes []string       `json:"supportedEnvelopes"`
	SchemaVersions     map[string]int `json:"schemaVersions"`
	Limits             struct {
		ClarificationRounds int `json:"clarificationRounds"`
		SchemaRounds        int `json:"schemaRounds"`
		EnvelopesPerTurn    int `json:"envelopesPerTurn"`
	} `json:"limits"`
	Implementation struct {
		Name string `json:"name"`
	} `json:"implementation"`
	Agents struct {
		MemoryBackends []string `json:"memoryBackends"`
	} `json:"agents"`
	Memory struct {
		Supported         bool `json:"supported"`
		MaxEntrySizeBytes int  `json:"maxEntrySizeBytes"`
		TTLSupported      bool `json:"ttlSupported"`
	} `json:"memory"`
	// Vendor holds engram's host extension (vendor.engram): where the
	// adapter is and how a put treats secrets.
	Vendor struct {
		Engram struct {
			Memory struct {
				MemoryRefs string `json:"memoryRefs"`
				Entries    string `json:"entries"`
				Snapshot   string `json:"snapshotParameter"`
				OnSecret   string `json:"onSecret"`
			} `json:"memory"`
		} `json:"engram"`
	} `json:"vendor"`
}

func (a *Adapter) wellKnown(w http.ResponseWriter, r *http.Request) error {
	c := Capabilities{ProtocolVersion: ProtocolVersion, SupportedEnvelopes: []string{}, SchemaVersions: map[string]int{}}
	c.Implementation.Name = "engram"
	c.Agents.MemoryBackends = []string{Backend}
	c.Memory.Supported = true
	c.Memory.MaxEntrySizeBytes = MaxEntryBytes
	c.Memory.TTLSupported = true
	m := &c.Vendor.Engram.Memory
	m.MemoryRefs = "/openwop/v1/memory-refs"
	m.Entries = "/openwop/v1/memory/{memoryRef}/entries"
	m.Snapshot = "snapshot"
	m.OnSecret = a.onSecret()
	writeJSON(w, http.StatusOK, c)
	return nil
}

// refRequest is the body of POST /openwop/v1/memory-refs.
type refRequest struct {
	AgentID   string `json:"agentId"`
	Namespace string `json:"namespace"`
}

// issueRef serves POST /openwop/v1/memory-refs: the memoryRef of an agent
// (the key's own when the body names none) and a namespace, bound to the
// key's tenant. It reads and writes no memory.
func (a *Adapter) issueRef(w http.ResponseWriter, r *http.Request) error {
	c, err := a.client(r, "")
	if err != nil {
		return err
	}
	if err := a.checkParams(r.URL.Query()); err != nil {
		return err
	}
	if err := jsonBody(r); err != nil {
		return err
	}
	var req refRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return &Error{Code: CodeValidation, Message: `the body must be {"agentId": "…", "namespace": "…"}`}
	}
	who, err := a.whoami(r.Context(), c)
	if err != nil {
		return err
	}
	ref := MemoryRef{Agent: cmp.Or(req.AgentID, who.AgentID), Namespace: cmp.Or(req.Namespace, DefaultNamespace)}
	if ref.Agent == "" {
		return invalid("agentId", "is required: this key names no agent of its own")
	}
	if err := ref.invalid(); err != nil {
		return err
	}
	if err := a.clean(ref); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]string{"memoryRef": a.refs.Issue(who.Tenant, ref)})
	return nil
}

// call is one request's way to the API: its memoryRef and a client with
// the caller's key, acting for the ref's agent.
type call struct {
	ref MemoryRef
	c   *client.Client
}

// client is a client of the API with the request's key, acting for actor
// (none when empty).
func (a *Adapter) client(r *http.Request, actor string) (*client.Client, error) {
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if key = strings.TrimSpace(key); !ok || key == "" {
		return nil, &Error{Code: CodeUnauthenticated, Message: "send the API key as Authorization: Bearer <key>"}
	}
	return client.New(client.Config{URL: a.cfg.URL, Key: key, Actor: actor, HTTPClient: a.cfg.HTTPClient, UserAgent: "engram-openwop"})
}

// whoami is whom the key of c speaks for; an operator key, which has no
// tenant, is refused: it reads and writes no tenant's memory.
func (a *Adapter) whoami(ctx context.Context, c *client.Client) (*api.Whoami, error) {
	who, err := c.Whoami(ctx)
	if err != nil {
		return nil, err
	}
	if who.Tenant == "" {
		return nil, &Error{Code: CodeForbidden, Message: "an operator key reads and writes no tenant's memory: use a key of the tenant"}
	}
	return who, nil
}

// begin authenticates a request on a memoryRef's entries and resolves the
// ref for the key's tenant (§F): one issued to another tenant, or not
// issued here, is not found.
func (a *Adapter) begin(r *http.Request) (call, error) {
	c, err := a.client(r, "")
	if err != nil {
		return call{}, err
	}
	who, err := a.whoami(r.Context(), c)
	if err != nil {
		return call{}, err
	}
	ref, err := a.refs.Resolve(who.Tenant, r.PathValue("memoryRef"))
	if err != nil {
		return call{}, err
	}
	// A ref issued before the operator's policy named its agent or
	// namespace a secret.
	if err := a.clean(ref); err != nil {
		return call{}, err
	}
	c, err = a.client(r, ref.Agent)
	if err != nil {
		return call{}, err
	}
	return call{ref: ref, c: c}, nil
}

// clean refuses a ref whose agent or namespace the redactor would change:
// the API would store its entries under a redacted scope, where the ref
// could not find them.
func (a *Adapter) clean(ref MemoryRef) *Error {
	red := a.cfg.Policy().Redactor()
	for _, f := range [][2]string{{"agentId", ref.Agent}, {"namespace", ref.Namespace}} {
		if _, found := red.String(f[1]); len(found) > 0 {
			return invalid(f[0], "must not look like a secret or personal data ("+found[0].Label+")")
		}
	}
	return nil
}

// snapshotOf reads the snapshot parameter: the run's start (§A).
func snapshotOf(q url.Values) (*time.Time, error) {
	v := q.Get("snapshot")
	if v == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return nil, invalid("snapshot", "must be an RFC 3339 date-time, such as the run's start 2026-01-28T09:00:00Z")
	}
	return &t, nil
}

// checkParams refuses query parameters other than names, quoting a
// parameter's name only when it is safe to (see [Adapter.quotable]).
func (a *Adapter) checkParams(q url.Values, names ...string) error {
	use := "this call takes none"
	if len(names) > 0 {
		use = "use " + strings.Join(names, ", ")
	}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		if slices.Contains(names, k) {
			continue
		}
		if n := a.quotable(k); n != "" {
			return invalid(n, "is not a parameter here; "+use)
		}
		return &Error{Code: CodeValidation, Message: "a query parameter is not one of this call's; " + use}
	}
	return nil
}

// quotable is s when an error message may quote it — a name a caller sent
// that is short and holds nothing the policy's redactor finds — and ""
// otherwise: no message quotes a secret.
func (a *Adapter) quotable(s string) string {
	if len(s) > 64 || !utf8.ValidString(s) {
		return ""
	}
	if _, found := a.cfg.Policy().Redactor().String(s); len(found) > 0 {
		return ""
	}
	return s
}

// list serves list(memoryRef, options): the ref's entries at the snapshot,
// newest first, none expired (§A, §E).
func (a *Adapter) list(w http.ResponseWriter, r *http.Request) error {
	cl, err := a.begin(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	if err := a.checkParams(q, "limit", "tag", "snapshot"); err != nil {
		return err
	}
	var opts listOptions
	if q.Has("limit") {
		n, err := strconv.Atoi(q.Get("limit"))
		if err != nil {
			return invalid("limit", "must be a whole number, 0 or more (MemoryListOptions.limit)")
		}
		opts.Limit = &n
	}
	if q.Has("tag") {
		tag := q.Get("tag")
		opts.Tag = &tag
	}
	if err := opts.validate(); err != nil {
		return err
	}
	snapshot, err := snapshotOf(q)
	if err != nil {
		return err
	}
	limit := DefaultListLimit
	if opts.Limit != nil && *opts.Limit > 0 {
		limit = min(*opts.Limit, MaxListLimit)
	}
	scope := cl.ref.scope()
	f := client.RecordFilter{Types: []memory.Type{memory.Semantic}, Scope: &scope, Newest: true, Limit: limit}
	// The API reads a tag parameter as a comma-separated list, trimmed: a
	// tag it would misread is matched here instead.
	var tag string
	if opts.Tag != nil {
		tag = *opts.Tag
		if strings.ContainsRune(tag, ',') || strings.TrimSpace(tag) != tag {
			f.Limit = MaxListLimit
		} else {
			f.Tags = []string{tag}
		}
	}
	if snapshot != nil {
		f.AsOf = *snapshot
	}
	now := a.cfg.Now()
	out := []Entry{}
	for len(out) < limit {
		page, err := cl.c.ListRecords(r.Context(), f)
		if err != nil {
			return err
		}
		for _, rec := range page.Records {
			if visible(rec, cl.ref, snapshot, now) && (tag == "" || slices.Contains(rec.Tags, tag)) && len(out) < limit {
				out = append(out, entryOf(rec))
			}
		}
		if page.NextCursor == "" {
			break
		}
		f.Cursor = page.NextCursor
	}
	// Newest first by createdAt (§A); ids are in creation order already.
	slices.SortStableFunc(out, func(x, y Entry) int { return y.CreatedAt.Compare(x.CreatedAt) })
	writeJSON(w, http.StatusOK, out)
	return nil
}

// read reads record id as it was at the snapshot (now without one): nil
// when it is not one of the ref's entries the caller may see — missing,
// another tenant's, created after the snapshot, expired, deleted.
func (a *Adapter) read(ctx context.Context, cl call, id string, snapshot *time.Time) (*Entry, error) {
	uid, err := uuid.Parse(id)
	if err != nil {
		return nil, nil
	}
	var q url.Values
	if snapshot != nil {
		q = url.Values{"as_of": {snapshot.UTC().Format(time.RFC3339Nano)}}
	}
	var rec memory.Record
	if err := cl.c.Do(ctx, http.MethodGet, "/v1/records/"+uid.String(), q, nil, &rec); err != nil {
		if statusOf(err) == http.StatusNotFound {
			return nil, nil
		}
		return nil, err
	}
	if !visible(rec, cl.ref, snapshot, a.cfg.Now()) {
		return nil, nil
	}
	e := entryOf(rec)
	return &e, nil
}

// get serves get(memoryRef, id): the entry, or null (§A).
func (a *Adapter) get(w http.ResponseWriter, r *http.Request) error {
	cl, err := a.begin(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	if err := a.checkParams(q, "snapshot"); err != nil {
		return err
	}
	snapshot, err := snapshotOf(q)
	if err != nil {
		return err
	}
	e, err := a.read(r.Context(), cl, r.PathValue("id"), snapshot)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, e)
	return nil
}

// put serves put(memoryRef, entry): the entry as persisted, with the id
// and createdAt the host assigned, after SR-1 (§A, §D).
func (a *Adapter) put(w http.ResponseWriter, r *http.Request) error {
	cl, err := a.begin(r)
	if err != nil {
		return err
	}
	if err := a.checkParams(r.URL.Query()); err != nil {
		return err
	}
	if err := jsonBody(r); err != nil {
		return err
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPutBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &Error{Code: CodeTooLarge, Message: "the body is over the limit of " + itoa(maxPutBytes) + " bytes"}
		}
		return &Error{Code: CodeValidation, Message: "the body could not be read"}
	}
	req, verr := decodePut(body, a.cfg.Now(), a.quotable)
	if verr != nil {
		return verr
	}
	// SR-1 (§D). Rejecting, the adapter refuses the write itself; redacting,
	// it leaves the redaction to the API, which runs the same redactor over
	// every string of the record, replaces each finding with its
	// [REDACTED:<label>] marker, and raises the record's sensitivity (and
	// tags it PII-bearing) for what it found, as for any write.
	if a.onSecret() == OnSecretReject {
		red := a.cfg.Policy().Redactor()
		_, found := red.String(req.Content)
		_, more := red.Strings(req.Tags)
		if found = append(found, more...); len(found) > 0 {
			var labels []string
			for _, f := range found {
				labels = append(labels, f.Label)
			}
			slices.Sort(labels)
			labels = slices.Compact(labels)
			return &Error{Code: CodeSecretLeakage,
				Message: "the entry holds secrets or personal data (" + strings.Join(labels, ", ") + ") and this host refuses such writes (SR-1)",
				Details: map[string]any{"labels": labels}}
		}
	}
	rec, err := req.record(cl.ref)
	if err != nil {
		return err
	}
	out, err := cl.c.CreateRecord(r.Context(), rec, "OpenWOP memory put")
	if err != nil {
		return err
	}
	// The write path may answer with a draft waiting for review (the
	// approval gate): it is the entry as persisted, listed once approved.
	e := entryOf(*out)
	w.Header().Set("Location", r.URL.Path+"/"+e.ID)
	writeJSON(w, http.StatusCreated, e)
	return nil
}

// delete serves delete(memoryRef, id): true when the entry existed and is
// deleted now, false otherwise (§A). A run's snapshot still reads it.
func (a *Adapter) delete(w http.ResponseWriter, r *http.Request) error {
	cl, err := a.begin(r)
	if err != nil {
		return err
	}
	if err := a.checkParams(r.URL.Query()); err != nil {
		return err
	}
	e, err := a.read(r.Context(), cl, r.PathValue("id"), nil)
	if err != nil {
		return err
	}
	if e == nil {
		writeJSON(w, http.StatusOK, false)
		return nil
	}
	if _, err := cl.c.DeleteRecord(r.Context(), uuid.MustParse(e.ID), "OpenWOP memory delete"); err != nil {
		// Deleted meanwhile by another caller: it no longer existed.
		if s := statusOf(err); s == http.StatusNotFound || s == http.StatusConflict {
			writeJSON(w, http.StatusOK, false)
			return nil
		}
		return err
	}
	writeJSON(w, http.StatusOK, true)
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func itoa(n int) string { return strconv.Itoa(n) }
