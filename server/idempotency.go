package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/store"
)

// Idempotency keys (write-path RFC §12.1.6–12.1.7): a write route called
// with an Idempotency-Key header that a committed write of the same caller
// already used, with the same request, answers that write's result again —
// its status, headers and body, marked Idempotent-Replayed — and writes
// nothing. A retry after a lost answer, a timeout or an agent loop's replay
// is absorbed instead of made twice.
//
// The RFC computes the token from the write's content; engram takes the
// client's key, as HTTP APIs do (the IETF draft's Idempotency-Key
// header), so that a client decides what is one write — two episodes of
// the same content are two episodes — and checks the request under it:
// the same key with another method, path, body or one of the headers that
// change a write's meaning is refused (422), never answered with another
// request's result. A key whose first request is still running is
// answered 409 with Retry-After.
//
// Only a successful (2xx) result is kept, for [IdempotencyTTL]: a refused
// request wrote nothing and leaves its key free, so it may be corrected
// and sent again under it.
const (
	IdempotencyKeyHeader   = api.IdempotencyKeyHeader
	IdempotentReplayHeader = api.IdempotentReplayHeader
	// IdempotencyTTL is how long a result is kept (§12.1.6: 24 h).
	IdempotencyTTL = 24 * time.Hour
	// idempotencyStale is how long a request may hold its key unfinished
	// before another may take it over: only a daemon stopped mid-request
	// leaves one so long (a sync-tier approval waits
	// write_path.reviews.sync_max_wait, 30s by default).
	idempotencyStale = 10 * time.Minute
	// maxIdempotencyKey bounds a key's length.
	maxIdempotencyKey = 255
)

// meaningHeaders are the request headers that change what a write does,
// hashed with its method, path and body.
var meaningHeaders = []string{"Content-Type", "If-Match", "X-Engram-Actor", "X-Engram-Session", api.FencingTokenHeader}

// unreplayable are the routes whose answer is shown once and never kept:
// a new key's secret.
var unreplayable = map[string]bool{"POST /v1/keys": true}

// keptResponse is a kept result, as stored (sealed with the tenant's data
// key when encryption at rest is on: a body may quote a record).
type keptResponse struct {
	Status int         `json:"status"`
	Header http.Header `json:"header"`
	Body   []byte      `json:"body,omitempty"`
}

// idempotencyKeyOf reads a request's Idempotency-Key: ok is false when it
// has none.
func idempotencyKeyOf(r *http.Request, rt route) (key string, ok bool, err error) {
	vals := r.Header.Values(IdempotencyKeyHeader)
	if len(vals) == 0 {
		return "", false, nil
	}
	bad := func(msg string) error {
		p := problem(http.StatusBadRequest, "invalid-header", "Invalid header", IdempotencyKeyHeader+": "+msg)
		p.Errors = []FieldError{{Header: IdempotencyKeyHeader, Message: msg}}
		return p
	}
	key = strings.TrimSpace(vals[0])
	switch {
	case len(vals) > 1:
		return "", false, bad("must be sent once")
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		return "", false, bad("is for writes: a read is idempotent already")
	case rt.stream:
		return "", false, bad("is not taken by a stream, which is answered as it is read: each event's id makes it idempotent")
	case key == "" || len(key) > maxIdempotencyKey:
		return "", false, bad("must be 1 to 255 characters")
	}
	for _, c := range []byte(key) {
		if c < 0x20 || c > 0x7e {
			return "", false, bad("must be printable ASCII, such as a UUID")
		}
	}
	return key, true, nil
}

// requestHash is what a key's request is checked by: method, path, query,
// the headers that change its meaning, and body.
func requestHash(r *http.Request, body []byte) []byte {
	h := sha256.New()
	for _, part := range []string{r.Method, r.URL.Path, r.URL.RawQuery} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	for _, name := range meaningHeaders {
		h.Write([]byte(r.Header.Get(name)))
		h.Write([]byte{0})
	}
	h.Write(body)
	return h.Sum(nil)
}

// idempotent serves a write that carries an Idempotency-Key: it claims the
// key for the request and runs it, keeping a successful result; or, when a
// request with the key ran before, answers with its result, or refuses.
func (s *Server) idempotent(w http.ResponseWriter, r *http.Request, rt route, key string) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return decodeProblem(err, "")
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	hash := requestHash(r, body)
	p := principalOf(r)
	k := store.IdempotencyKey{Tenant: p.tenant, Principal: p.name, Key: key}
	var held store.IdempotentResult
	claimed := false
	for range 3 {
		now := s.now()
		held, claimed, err = store.ClaimIdempotencyKey(r.Context(), s.db, k, hash, now, now.Add(IdempotencyTTL), now.Add(-idempotencyStale))
		if !errors.Is(err, store.ErrNotFound) {
			break // else released between claim and read: claim again
		}
	}
	if err != nil {
		return err
	}
	if !claimed {
		return s.replay(w, r, rt, held, hash)
	}
	cw := &captureWriter{ResponseWriter: w}
	if err := rt.handle(cw, r); err != nil {
		s.writeProblem(cw, r, err)
	}
	// The request's own context may have ended with its client: what it
	// wrote is kept all the same.
	ctx := context.WithoutCancel(r.Context())
	if cw.status < 200 || cw.status > 299 {
		if err := store.ReleaseIdempotencyKey(ctx, s.db, k, hash); err != nil {
			s.logger.ErrorContext(ctx, "release idempotency key", slog.String("error", err.Error()))
		}
		return nil
	}
	kept := keptResponse{Status: cw.status, Header: cw.Header().Clone()}
	if !unreplayable[rt.pattern] {
		kept.Body = cw.body.Bytes()
	}
	if err := s.keep(ctx, k, hash, kept); err != nil {
		// The write committed; a retry will find the key held unfinished
		// and be told to wait until it is stale.
		s.logger.ErrorContext(ctx, "keep idempotent result", slog.String("error", err.Error()))
	}
	return nil
}

// keep stores a request's result under its key, sealed when encryption at
// rest is on and the key is a tenant's.
func (s *Server) keep(ctx context.Context, k store.IdempotencyKey, hash []byte, kept keptResponse) error {
	kept.Header.Del("Date")
	kept.Header.Del("Content-Length")
	doc, err := json.Marshal(kept)
	if err != nil {
		return err
	}
	if sealer := s.writer.Sealer(); sealer.Enabled() && k.Tenant != "" {
		if doc, err = sealer.Seal(ctx, k.Tenant, doc); err != nil {
			return err
		}
	}
	return store.FinishIdempotencyKey(ctx, s.db, k, hash, kept.Status, doc)
}

// replay answers a request whose key a request ran under before: with its
// kept result when it is the same request, else with why not.
func (s *Server) replay(w http.ResponseWriter, r *http.Request, rt route, held store.IdempotentResult, hash []byte) error {
	refuse := func(status int, kind, title, msg string) *Problem {
		p := problem(status, kind, title, IdempotencyKeyHeader+": "+msg)
		p.Errors = []FieldError{{Header: IdempotencyKeyHeader, Message: msg}}
		return p
	}
	switch {
	case !bytes.Equal(held.RequestHash, hash):
		return refuse(http.StatusUnprocessableEntity, "idempotency-key-reused", "Idempotency key reused",
			"was used by another request (method, path, body or headers) in the last 24 hours: use a new key for a new write")
	case held.Status == 0:
		p := refuse(http.StatusConflict, "idempotency-in-progress", "Request in progress",
			"the first request with this key is still running: send it again in a moment for its result")
		p.RetryAfter = time.Second
		return p
	case unreplayable[rt.pattern]:
		return refuse(http.StatusConflict, "idempotency-not-replayable", "Result not replayable",
			"the first request with this key succeeded; its answer held a secret, shown once: it is not kept to be shown again")
	}
	doc := held.Response
	if sealer := s.writer.Sealer(); sealer.Enabled() && principalOf(r).tenant != "" {
		var err error
		if doc, err = sealer.Open(r.Context(), principalOf(r).tenant, doc); err != nil {
			return err
		}
	}
	var kept keptResponse
	if err := json.Unmarshal(doc, &kept); err != nil {
		return err
	}
	for name, vals := range kept.Header {
		w.Header()[name] = vals
	}
	w.Header().Set(IdempotentReplayHeader, "true")
	w.WriteHeader(kept.Status)
	_, _ = w.Write(kept.Body)
	return nil
}

// captureWriter passes a response through and keeps its status and body.
type captureWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (c *captureWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *captureWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	c.body.Write(b)
	return c.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController and [recorderOf] reach the writer
// below.
func (c *captureWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
