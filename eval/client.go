package eval

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
)

// Client calls engram's public HTTP API with a tenant's key: the only way
// the agents of this package reach memory.
type Client struct {
	// BaseURL is engramd's address (http://127.0.0.1:8080).
	BaseURL string
	// Key is a tenant's API key.
	Key string
	// HTTP is the client used; nil means http.DefaultClient.
	HTTP *http.Client
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// call sends a request and decodes a 2xx answer into out (when not nil);
// any other status is an error carrying the problem's detail. A 503 with
// Retry-After (a request that lost a conflict with another, a full
// backlog) is sent again after the wait, twice at most. A GET has no body
// and no content type.
func (c *Client) call(ctx context.Context, method, path, contentType string, body []byte, out any) error {
	for attempt := 1; ; attempt++ {
		wait, err := c.once(ctx, method, path, contentType, body, out)
		if wait == 0 || attempt == 3 {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// once sends a request once; on a 503 it returns the Retry-After wait.
func (c *Client) once(ctx context.Context, method, path, contentType string, body []byte, out any) (time.Duration, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, rd)
	if err != nil {
		return 0, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Key)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := c.http().Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		var p api.Problem
		b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<16))
		err := fmt.Errorf("%s %s: %d: %s", method, path, res.StatusCode, b)
		if json.Unmarshal(b, &p) == nil && p.Detail != "" {
			err = fmt.Errorf("%s %s: %d: %s", method, path, res.StatusCode, p.Detail)
		}
		var wait time.Duration
		if secs, perr := strconv.Atoi(res.Header.Get("Retry-After")); res.StatusCode == http.StatusServiceUnavailable && perr == nil {
			wait = min(time.Duration(max(secs, 1))*time.Second, 5*time.Second)
		}
		return wait, err
	}
	if out == nil {
		_, err = io.Copy(io.Discard, res.Body)
		return 0, err
	}
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		return 0, fmt.Errorf("decode %s: %w", path, err)
	}
	return 0, nil
}

func (c *Client) postJSON(ctx context.Context, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return c.call(ctx, http.MethodPost, path, "application/json", b, out)
}

func (c *Client) get(ctx context.Context, path string, out any) error {
	return c.call(ctx, http.MethodGet, path, "", nil, out)
}

// Thread reads GET /v1/threads/{id}: the thread's latest generation and
// whether its episode is closed.
func (c *Client) Thread(ctx context.Context, id string) (Thread, error) {
	var t Thread
	err := c.get(ctx, "/v1/threads/"+url.PathEscape(id), &t)
	return t, err
}

// Thread is the answer of GET /v1/threads/{id}.
type Thread struct {
	ThreadID  string    `json:"thread_id"`
	EpisodeID uuid.UUID `json:"episode_id"`
	Status    string    `json:"status"`
}

// Jobs reads GET /v1/jobs (an operator key's call).
func (c *Client) Jobs(ctx context.Context) (api.JobsOverview, error) {
	var ov api.JobsOverview
	err := c.get(ctx, "/v1/jobs", &ov)
	return ov, err
}

// Record reads GET /v1/records/{id}.
func (c *Client) Record(ctx context.Context, id uuid.UUID) (memory.Record, error) {
	var r memory.Record
	err := c.get(ctx, "/v1/records/"+id.String(), &r)
	return r, err
}

// Records lists GET /v1/records with the query given (type=competence,
// status=…), every page of it.
func (c *Client) Records(ctx context.Context, query url.Values) ([]memory.Record, error) {
	q := maps.Clone(query)
	if q == nil {
		q = url.Values{}
	}
	q.Set("limit", "1000")
	var out []memory.Record
	for {
		var page api.RecordPage
		if err := c.get(ctx, "/v1/records?"+q.Encode(), &page); err != nil {
			return nil, err
		}
		out = append(out, page.Records...)
		if page.NextCursor == "" {
			return out, nil
		}
		q.Set("cursor", page.NextCursor)
	}
}

// Retrieve asks POST /v1/retrieve what memory helps with a task.
func (c *Client) Retrieve(ctx context.Context, req api.RetrieveRequest) (api.RetrieveResult, error) {
	var out api.RetrieveResult
	err := c.postJSON(ctx, "/v1/retrieve", req, &out)
	return out, err
}

// Feedback tells POST /v1/feedback how a retrieval's records served.
func (c *Client) Feedback(ctx context.Context, req api.FeedbackRequest) error {
	return c.postJSON(ctx, "/v1/feedback", req, nil)
}

// Stream sends events as one NDJSON request to POST /v1/events:stream and
// reads an acknowledgement per line; a refused line is an error.
func (c *Client) Stream(ctx context.Context, events []memory.Event) error {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	for _, ev := range events {
		if err := enc.Encode(ev); err != nil {
			return fmt.Errorf("encode event: %w", err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+"/v1/events:stream", &body)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Key)
	req.Header.Set("Content-Type", "application/x-ndjson")
	res, err := c.http().Do(req)
	if err != nil {
		return fmt.Errorf("stream events: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<16))
		return fmt.Errorf("stream events: %d: %s", res.StatusCode, b)
	}
	acks := 0
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		var ack api.StreamAck
		if err := json.Unmarshal(sc.Bytes(), &ack); err != nil {
			return fmt.Errorf("decode ack: %w", err)
		}
		if ack.Error != nil {
			return fmt.Errorf("stream events: line %d: %s", ack.Line, ack.Error.Detail)
		}
		acks++
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read acks: %w", err)
	}
	if acks != len(events) {
		return errors.New("stream events: " + fmt.Sprint(acks) + " of " + fmt.Sprint(len(events)) + " acknowledged")
	}
	return nil
}
