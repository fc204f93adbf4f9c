// Package openaicompat is the plumbing every client of an OpenAI-compatible
// endpoint shares (the embedder of package embedding, the extractor of
// package extract): building a go-openai client for a base URL, a key and a
// timeout, bounding what the server may send back, and turning the
// library's errors into ones that never carry the API key.
package openaicompat

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// DefaultBaseURL is OpenAI's API. Ollama serves the same API at
// http://localhost:11434/v1, vLLM at http://localhost:8000/v1.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config is where an endpoint is and how to talk to it.
type Config struct {
	// BaseURL is the API's root; [DefaultBaseURL] when empty.
	BaseURL string
	// APIKey is sent as a bearer token when set. It never appears in an
	// error.
	APIKey string
	// Timeout bounds one request, reading its answer included.
	Timeout time.Duration
	// MaxResponseBytes bounds an answer's body; a longer one fails the
	// request with [ErrResponseTooLarge]. Zero means no bound.
	MaxResponseBytes int64
}

// ErrResponseTooLarge is an answer longer than [Config.MaxResponseBytes].
var ErrResponseTooLarge = errors.New("response too large")

// Client is a go-openai client and what it needs to keep the key out of
// errors. Safe for concurrent use.
type Client struct {
	// API is the go-openai client; pass its errors through [Client.Sanitize].
	API    *openai.Client
	apiKey string
}

// New returns a client for cfg. It makes no request.
func New(cfg Config) *Client {
	cc := openai.DefaultConfig(cfg.APIKey)
	cc.BaseURL = cmp.Or(cfg.BaseURL, DefaultBaseURL)
	rt := http.DefaultTransport
	if cfg.MaxResponseBytes > 0 {
		rt = limitedTransport{base: rt, max: cfg.MaxResponseBytes}
	}
	cc.HTTPClient = &http.Client{Timeout: cfg.Timeout, Transport: rt}
	return &Client{API: openai.NewClientWithConfig(cc), apiKey: cfg.APIKey}
}

// CheckBaseURL returns what is wrong with a configured base URL, or "".
// The URL is never quoted back: it might carry credentials.
func CheckBaseURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "is not a URL"
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return "must be an absolute http or https URL"
	}
	return ""
}

// StatusError is an endpoint's error status. Its message is the server's,
// with the API key removed should the server echo it.
type StatusError struct {
	// StatusCode is the HTTP status, 401 for a bad key, 429 when rate
	// limited, 5xx when the server failed.
	StatusCode int
	// Type is the OpenAI error type ("invalid_request_error"), if any.
	Type string
	// Message is the server's explanation, possibly truncated.
	Message string
}

// Error returns "status 401: Incorrect API key provided".
func (e *StatusError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("status %d", e.StatusCode)
	}
	return fmt.Sprintf("status %d: %s", e.StatusCode, e.Message)
}

// maxMessage bounds the server's text kept in a [StatusError].
const maxMessage = 512

// Sanitize turns the client library's errors, which may quote the server's
// body, into errors whose text never carries the API key: an error status
// becomes a *[StatusError]; transport and context errors are kept as they
// are (for errors.Is) unless their text holds the key.
func (c *Client) Sanitize(err error) error {
	if err == nil {
		return nil
	}
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		return &StatusError{StatusCode: apiErr.HTTPStatusCode, Type: apiErr.Type, Message: c.Redact(apiErr.Message)}
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		return &StatusError{StatusCode: reqErr.HTTPStatusCode, Message: c.Redact(strings.TrimSpace(string(reqErr.Body)))}
	}
	if errors.Is(err, ErrResponseTooLarge) {
		return ErrResponseTooLarge
	}
	if c.apiKey != "" && strings.Contains(err.Error(), c.apiKey) {
		return errors.New(c.Redact(err.Error()))
	}
	return err
}

// Redact removes the API key from a server's text and bounds its length.
func (c *Client) Redact(msg string) string {
	if c.apiKey != "" {
		msg = strings.ReplaceAll(msg, c.apiKey, "[redacted]")
	}
	if len(msg) > maxMessage {
		msg = strings.ToValidUTF8(msg[:maxMessage], "") + "…"
	}
	return msg
}

// limitedTransport fails the reading of a body longer than max.
type limitedTransport struct {
	base http.RoundTripper
	max  int64
}

func (t limitedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	res.Body = &limitedBody{rc: res.Body, left: t.max}
	return res, nil
}

// limitedBody reads at most left bytes, then fails with
// [ErrResponseTooLarge] if more follow.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the limit from a longer one.
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n > 0 {
			return 0, ErrResponseTooLarge
		}
		return b.rc.Read(p)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
