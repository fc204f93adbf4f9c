package client

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/engram-dev/engram/api"
)

// DefaultUserAgent is the User-Agent of a [Client] whose [Config] names
// none.
const DefaultUserAgent = "engram-go"

// Headers of the API a [Client] sets.
const (
	ActorHeader   = "X-Engram-Actor"
	SessionHeader = "X-Engram-Session"
)

// Config configures a [Client]. Only URL and Key are required; every other
// field's zero value is a documented default.
type Config struct {
	// URL is engramd's base URL, such as http://localhost:8080.
	URL string
	// Key is the API key, sent as a bearer token. It appears in no error.
	Key string
	// Actor, when set, is sent as X-Engram-Actor on every request: the
	// agent or person the caller acts for.
	Actor string
	// Session, when set, is sent as X-Engram-Session on every request:
	// whose write budget a write spends.
	Session string
	// FencingToken, when not zero, is sent as X-Engram-Fencing-Token on
	// every request: the token of the lease writes are made under.
	FencingToken int64
	// HTTPClient sends the requests; nil is a client without a timeout
	// (the context of each call bounds it).
	HTTPClient *http.Client
	// UserAgent is the User-Agent header; empty is [DefaultUserAgent].
	UserAgent string
	// Retry sends an idempotent request again after a 503 or 429,
	// honouring its Retry-After (see [Retry]); the zero value sends every
	// request once.
	Retry Retry
}

// Client calls engramd's /v1 API with one API key. It is safe for
// concurrent use. Its methods take a context first and return the wire
// types of package api; an error answer is an [*Error].
type Client struct {
	base    string // without a trailing slash
	cfg     Config
	http    *http.Client
	headers []CallOption
}

// New returns a client for the server and key of cfg.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: %q is not an engramd URL such as http://localhost:8080", cfg.URL)
	}
	if cfg.Key == "" {
		return nil, errors.New("client: no API key")
	}
	c := &Client{base: strings.TrimSuffix(u.String(), "/"), cfg: cfg, http: cfg.HTTPClient}
	if c.http == nil {
		c.http = &http.Client{}
	}
	c.cfg.UserAgent = cmp.Or(cfg.UserAgent, DefaultUserAgent)
	if cfg.Actor != "" {
		c.headers = append(c.headers, WithActor(cfg.Actor))
	}
	if cfg.Session != "" {
		c.headers = append(c.headers, WithSession(cfg.Session))
	}
	if cfg.FencingToken != 0 {
		c.headers = append(c.headers, WithFencingToken(cfg.FencingToken))
	}
	return c, nil
}

// CallOption sets a header of one call, over the client's [Config].
type CallOption func(h http.Header)

// WithActor sends X-Engram-Actor: the agent or person a call acts for.
func WithActor(actor string) CallOption {
	return func(h http.Header) { h.Set(ActorHeader, actor) }
}

// WithSession sends X-Engram-Session: the session whose write budget a
// write spends.
func WithSession(session string) CallOption {
	return func(h http.Header) { h.Set(SessionHeader, session) }
}

// WithFencingToken sends X-Engram-Fencing-Token: the token of the lease a
// write is made under (write-path RFC §12.8.3).
func WithFencingToken(token int64) CallOption {
	return func(h http.Header) { h.Set(api.FencingTokenHeader, strconv.FormatInt(token, 10)) }
}

// Do sends a request to path (such as /v1/records) with the query q and
// in, when not nil, as its JSON body (a json.RawMessage or []byte is sent
// as it is), and decodes a successful answer into out, when not nil (a
// *json.RawMessage or *[]byte receives the body as it came). An error
// answer is an [*Error]. The typed methods are built on Do; it serves the
// routes they do not cover.
func (c *Client) Do(ctx context.Context, method, path string, q url.Values, in, out any, opts ...CallOption) error {
	var body []byte
	switch v := in.(type) {
	case nil:
	case json.RawMessage:
		body = v
	case []byte:
		body = v
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		body = b
	}
	res, err := c.send(ctx, method, path, q, body, "application/json", opts)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return fmt.Errorf("read response: %w", err)
	}
	switch v := out.(type) {
	case nil:
	case *json.RawMessage:
		*v = b
	case *[]byte:
		*v = b
	default:
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("decode %s %s: %w", method, path, err)
		}
	}
	return nil
}

// send sends a request with body (nil: none) and returns a successful
// response, its body unread. Any other answer is an [*Error]. An
// idempotent request is sent again as [Config].Retry says.
func (c *Client) send(ctx context.Context, method, path string, q url.Values, body []byte, contentType string, opts []CallOption) (*http.Response, error) {
	h := c.header(opts)
	retry := idempotent(method, path, h)
	for attempt := 1; ; attempt++ {
		var r io.Reader
		if body != nil {
			r = bytes.NewReader(body)
		}
		res, err := c.sendOnce(ctx, method, path, q, r, contentType, h)
		if !retry {
			return res, err
		}
		wait, again := c.cfg.Retry.retryAfter(err, attempt)
		if !again {
			return res, err
		}
		if err := sleep(ctx, wait, err); err != nil {
			return nil, err
		}
	}
}

// header is a request's headers of the client's configuration and opts.
func (c *Client) header(opts []CallOption) http.Header {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+c.cfg.Key)
	h.Set("Accept", "application/json, application/problem+json")
	h.Set("User-Agent", c.cfg.UserAgent)
	for _, o := range c.headers {
		o(h)
	}
	for _, o := range opts {
		o(h)
	}
	return h
}

// sendOnce sends a request once; see send.
func (c *Client) sendOnce(ctx context.Context, method, path string, q url.Values, body io.Reader, contentType string, h http.Header) (*http.Response, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header = h.Clone()
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("call engramd: %w", err)
	}
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		return res, nil
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("read response: %w", err)
	}
	return nil, newError(res, b)
}

// escape escapes one path segment.
func escape(s string) string { return url.PathEscape(s) }

// call is Do decoding into a new T.
func call[T any](ctx context.Context, c *Client, method, path string, q url.Values, in any, opts []CallOption) (*T, error) {
	var out T
	if err := c.Do(ctx, method, path, q, in, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}
