package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/engram-dev/engram/api"
)

// Retry says when a [Client] sends a request again ([Config].Retry).
//
// engramd answers 503 Service Unavailable with Retry-After while no
// primary database answers (a failover, a restart), when a request lost a
// conflict with another or outlasted a database timeout, and while
// classification is behind; 429 Too Many Requests with Retry-After when an
// agent is over its event rate. With Retry set, the client waits what
// Retry-After says (1 s when it says nothing) and sends the request again,
// up to Attempts times in all — but only a request whose sending twice
// does what sending it once does, since a 503 may follow a commit whose
// confirmation the database connection lost:
//
//   - GET, HEAD, OPTIONS, PUT and DELETE (their effect is the same sent
//     twice; a second DELETE's answer may differ);
//   - POST /v1/retrieve, a read;
//   - POST /v1/events: staging absorbs an event sent again by its
//     idempotency_key, or else by its content, agent and thread
//     (write-path RFC §12.1.7), and answers it with its first id;
//   - any request with an Idempotency-Key header ([WithIdempotencyKey]):
//     engramd answers one it has committed with its first result, and
//     one whose first request is still running 409
//     idempotency-in-progress with Retry-After, which is waited out too.
//
// A streamed request ([Client.StreamEvents]) is never sent again: its body
// is read once. Any other answer, and a transport error, ends the
// retries; so does a Retry-After longer than MaxWait, and ctx.
type Retry struct {
	// Attempts is how many times a request is sent at most, the first
	// included; 0 or 1 sends it once.
	Attempts int
	// MaxWait bounds one wait; 0 is [DefaultRetryMaxWait]. An answer
	// whose Retry-After asks for longer is returned as it is.
	MaxWait time.Duration
}

// DefaultRetryMaxWait is the longest wait of a [Retry] whose MaxWait is 0.
const DefaultRetryMaxWait = 30 * time.Second

// problemInProgress is the 409 of a request whose Idempotency-Key's first
// request is still running: its result is there to be asked for again.
const problemInProgress = "urn:engram:problem:idempotency-in-progress"

// retryWait is the wait after a 503 or 429 that says no Retry-After.
const retryWait = time.Second

// WithIdempotencyKey sends Idempotency-Key: a write engramd has committed
// under key is answered again with its first result, never made twice
// (write-path RFC §12.1.6), so a [Retry] may send it again.
func WithIdempotencyKey(key string) CallOption {
	return func(h http.Header) { h.Set(api.IdempotencyKeyHeader, key) }
}

// idempotent reports whether a request may be sent twice.
func idempotent(method, path string, h http.Header) bool {
	switch {
	case h.Get(api.IdempotencyKeyHeader) != "":
		return true
	case method == http.MethodGet, method == http.MethodHead, method == http.MethodOptions,
		method == http.MethodPut, method == http.MethodDelete:
		return true
	}
	return method == http.MethodPost && (path == "/v1/retrieve" || path == "/v1/events")
}

// retryAfter is how long to wait before sending a request answered err
// again, and whether to.
func (r Retry) retryAfter(err error, attempt int) (time.Duration, bool) {
	var e *Error
	if attempt >= r.Attempts || !errors.As(err, &e) {
		return 0, false
	}
	switch s := e.Problem.Status; {
	case s == http.StatusServiceUnavailable, s == http.StatusTooManyRequests:
	case s == http.StatusConflict && e.Problem.Type == problemInProgress:
	default:
		return 0, false
	}
	wait := retryWait
	if e.Problem.RetryAfter > 0 || e.hasRetryAfter {
		wait = e.Problem.RetryAfter
	}
	maxWait := r.MaxWait
	if maxWait <= 0 {
		maxWait = DefaultRetryMaxWait
	}
	return wait, wait <= maxWait
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration, last error) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("%w; the last answer: %w", ctx.Err(), last)
	case <-t.C:
		return nil
	}
}
