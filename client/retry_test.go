package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/client"
)

// flaky answers its first failures requests with status and Retry-After
// (none when retryAfter is empty), then 200 with {}; it keeps each
// request's method, path and body.
type flaky struct {
	mu         sync.Mutex
	failures   int
	status     int
	retryAfter string
	kind       string // the problem's type, after urn:engram:problem:; database-unavailable when empty
	got        []string
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, r.Method+" "+r.URL.Path+" "+string(b))
	if len(f.got) <= f.failures {
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(f.status)
		kind := f.kind
		if kind == "" {
			kind = "database-unavailable"
		}
		_, _ = w.Write([]byte(`{"type": "urn:engram:problem:` + kind + `", "title": "Try again"}`))
		return
	}
	_, _ = w.Write([]byte(`{}`))
}

func (f *flaky) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.got...)
}

func retrying(t *testing.T, f *flaky, r client.Retry) *client.Client {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := client.New(client.Config{URL: srv.URL, Key: "k", Retry: r})
	require.NoError(t, err)
	return c
}

// An idempotent request answered 503 or 429 is sent again, body and all,
// until it passes or its attempts run out; any other request once.
func TestRetryIdempotentRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	events := []any{map[string]any{"kind": "observation", "idempotency_key": "e1"}}

	f := &flaky{failures: 2, status: http.StatusServiceUnavailable, retryAfter: "0"}
	_, err := retrying(t, f, client.Retry{Attempts: 3}).PostEvents(ctx, events)
	require.NoError(t, err)
	got := f.requests()
	require.Len(t, got, 3)
	require.Equal(t, got[0], got[2], "the same request each time")
	require.Contains(t, got[0], `"idempotency_key":"e1"`)

	f = &flaky{failures: 1, status: http.StatusTooManyRequests, retryAfter: "0"}
	_, err = retrying(t, f, client.Retry{Attempts: 2}).Retrieve(ctx, api.RetrieveRequest{Task: api.Task{Text: "x"}})
	require.NoError(t, err)
	require.Len(t, f.requests(), 2)

	// Attempts run out: the last answer.
	f = &flaky{failures: 5, status: http.StatusServiceUnavailable, retryAfter: "0"}
	_, err = retrying(t, f, client.Retry{Attempts: 2}).GetRecord(ctx, [16]byte{1})
	var e *client.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, http.StatusServiceUnavailable, e.StatusCode())
	require.Len(t, f.requests(), 2)

	// A record write is not sent twice, unless under an idempotency key.
	f = &flaky{failures: 1, status: http.StatusServiceUnavailable, retryAfter: "0"}
	c := retrying(t, f, client.Retry{Attempts: 3})
	_, err = c.CreateRecord(ctx, map[string]any{"type": "semantic"}, "")
	require.ErrorAs(t, err, &e)
	require.Len(t, f.requests(), 1)
	require.NoError(t, c.Do(ctx, "POST", "/v1/records", nil, map[string]any{"type": "semantic"}, nil, client.WithIdempotencyKey("w1")))
	require.Len(t, f.requests(), 2)
	// Its first request still running: asked again; any other 409 is not.
	f = &flaky{failures: 1, status: http.StatusConflict, retryAfter: "0", kind: "idempotency-in-progress"}
	c = retrying(t, f, client.Retry{Attempts: 3})
	require.NoError(t, c.Do(ctx, "POST", "/v1/records", nil, map[string]any{"type": "semantic"}, nil, client.WithIdempotencyKey("w1")))
	require.Len(t, f.requests(), 2)
	f = &flaky{failures: 1, status: http.StatusConflict, retryAfter: "0", kind: "idempotency-not-replayable"}
	c = retrying(t, f, client.Retry{Attempts: 3})
	require.Error(t, c.Do(ctx, "POST", "/v1/records", nil, map[string]any{"type": "semantic"}, nil, client.WithIdempotencyKey("w1")))
	require.Len(t, f.requests(), 1)

	// Without Retry, once; a 500 is never sent again.
	f = &flaky{failures: 1, status: http.StatusServiceUnavailable, retryAfter: "0"}
	_, err = retrying(t, f, client.Retry{}).PostEvents(ctx, events)
	require.ErrorAs(t, err, &e)
	require.Len(t, f.requests(), 1)
	f = &flaky{failures: 1, status: http.StatusInternalServerError, retryAfter: "0"}
	_, err = retrying(t, f, client.Retry{Attempts: 3}).PostEvents(ctx, events)
	require.ErrorAs(t, err, &e)
	require.Len(t, f.requests(), 1)
}

// The wait is the answer's Retry-After (a second when it says none); one
// past MaxWait ends the retries, and so does the context.
func TestRetryWaits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	events := []any{map[string]any{"kind": "observation"}}

	f := &flaky{failures: 1, status: http.StatusServiceUnavailable}
	began := time.Now()
	_, err := retrying(t, f, client.Retry{Attempts: 2}).PostEvents(ctx, events)
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(began), time.Second)

	f = &flaky{failures: 1, status: http.StatusServiceUnavailable, retryAfter: "5"}
	_, err = retrying(t, f, client.Retry{Attempts: 2, MaxWait: 2 * time.Second}).PostEvents(ctx, events)
	var e *client.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, 5*time.Second, e.Problem.RetryAfter)
	require.Len(t, f.requests(), 1)

	f = &flaky{failures: 1, status: http.StatusServiceUnavailable, retryAfter: "5"}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	began = time.Now()
	_, err = retrying(t, f, client.Retry{Attempts: 2}).PostEvents(short, events)
	require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	require.ErrorAs(t, err, &e, "the last answer is kept")
	require.Less(t, time.Since(began), 5*time.Second)
	require.Len(t, f.requests(), 1)
}
