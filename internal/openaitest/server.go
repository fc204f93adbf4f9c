// Package openaitest is local HTTP servers speaking OpenAI's wire formats:
// chat completions, for the tests of the code that calls a language model
// (package extract, and consolidation through it), and embeddings
// ([NewEmbeddingServer]), for dense vector search.
package openaitest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// Request is a chat-completions request as it came over the wire.
type Request struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict bool            `json:"strict"`
		} `json:"json_schema"`
	} `json:"response_format"`
	MaxTokens int `json:"max_tokens"`

	// Raw is every field sent; Authorization and ContentType the headers.
	Raw           map[string]any `json:"-"`
	Authorization string         `json:"-"`
	ContentType   string         `json:"-"`
}

// User is the content of the request's user message.
func (r Request) User() string {
	for _, m := range r.Messages {
		if m.Role == "user" {
			return m.Content
		}
	}
	return ""
}

// Reply is what the server answers: a status and a body.
type Reply struct {
	Status int
	Body   string
}

// Completion is a 200 whose one choice holds content, finished with reason
// ("stop" when empty).
func Completion(model, content, reason string) Reply {
	if reason == "" {
		reason = "stop"
	}
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion", "created": 1700000000, "model": model,
		"choices": []any{map[string]any{
			"index": 0, "finish_reason": reason,
			"message": map[string]any{"role": "assistant", "content": content},
		}},
		"usage": map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
	return Reply{Status: http.StatusOK, Body: string(b)}
}

// Server serves POST /v1/chat/completions with a responder and records the
// requests. Its base URL for a client is URL.
type Server struct {
	URL      string
	mu       sync.Mutex
	requests []Request
}

// NewServer starts a server answering each request with respond; it stops
// when the test ends.
func NewServer(t testing.TB, respond func(Request) Reply) *Server {
	t.Helper()
	s := &Server{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		var req Request
		body, err := io.ReadAll(r.Body)
		if err == nil {
			err = json.Unmarshal(body, &req)
		}
		if err == nil {
			err = json.Unmarshal(body, &req.Raw)
		}
		if err != nil {
			t.Errorf("read request: %v", err) // not require: this is the server's goroutine
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req.Authorization, req.ContentType = r.Header.Get("Authorization"), r.Header.Get("Content-Type")
		s.mu.Lock()
		s.requests = append(s.requests, req)
		s.mu.Unlock()
		rep := respond(req)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		_, _ = io.WriteString(w, rep.Body)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL + "/v1"
	return s
}

// Requests are the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}
