package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/engram-dev/engram/api"
)

// client calls engramd's HTTP API with one API key.
type client struct {
	base  string // without a trailing slash
	key   string
	actor string
	http  *http.Client
	// fence, when set, is sent as X-Engram-Fencing-Token.
	fence string
}

func newClient(base, key, actor string) *client {
	return &client{base: base, key: key, actor: actor, http: &http.Client{Timeout: time.Minute}}
}

// problemForbidden is the type of the API's refusal of a key of the wrong
// kind: an operator key on a tenant's data, or a tenant's key on the jobs.
const problemForbidden = "urn:engram:problem:forbidden"

// location is where a problem's violation is: a JSON pointer into the
// request body, a query parameter or a header.
func location(f api.FieldError) string {
	switch {
	case f.Pointer != "":
		return f.Pointer
	case f.Parameter != "":
		return "parameter " + f.Parameter
	case f.Header != "":
		return "header " + f.Header
	}
	return "body"
}

// do sends a request with a JSON body (when body is non-nil) and returns
// the response body of a success. Any other answer is an *[api.Problem].
func (c *client) do(ctx context.Context, method, path string, query url.Values, body []byte) ([]byte, error) {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json, application/problem+json")
	req.Header.Set("User-Agent", "engram-cli")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.actor != "" {
		req.Header.Set("X-Engram-Actor", c.actor)
	}
	if c.fence != "" {
		req.Header.Set(api.FencingTokenHeader, c.fence)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("call engramd: %w", err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("read response: %w", err)
	}
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		return b, nil
	}
	p := &api.Problem{}
	if json.Unmarshal(b, p) != nil || p.Title == "" {
		// Not engramd's problem: a proxy's page, say. Show its start.
		text := strings.TrimSpace(string(b))
		if len(text) > 200 {
			text = text[:200] + "…"
		}
		p = &api.Problem{Title: http.StatusText(res.StatusCode), Detail: text}
	}
	p.Status = res.StatusCode
	return nil, p
}
