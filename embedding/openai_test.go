package embedding_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/embedding"
)

const testKey = "sk-test-0123456789abcdef-secret"

// wireRequest is an OpenAI embeddings request as it comes over the wire.
type wireRequest struct {
	Input          []string `json:"input"`
	Model          string   `json:"model"`
	EncodingFormat string   `json:"encoding_format"`
	Dimensions     *int     `json:"dimensions"`

	raw           map[string]any // every field sent
	authorization string
	path          string
	contentType   string
}

// wireEmbedding is one element of a response's data: embedding is a list
// of floats, or base64 of little-endian float32s when the request asked
// for base64, as OpenAI answers.
type wireEmbedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

// fakeVector is the server's embedding of "text n": (n, 1, 0, …), so that
// a test can tell from the normalised vector which text it is for.
func fakeVector(text string, dims int) []float32 {
	n, _ := strconv.Atoi(strings.TrimPrefix(text, "text "))
	v := make([]float32, dims)
	v[0], v[1] = float32(n), 1
	return v
}

// writeEmbeddings answers req with the given embeddings by index, in the
// order given, in the encoding req asked for.
func writeEmbeddings(t *testing.T, w http.ResponseWriter, req wireRequest, order []int, vecs map[int][]float32) {
	t.Helper()
	data := make([]wireEmbedding, 0, len(order))
	for _, i := range order {
		var e any = vecs[i]
		if req.EncodingFormat == "base64" {
			buf := make([]byte, 0, 4*len(vecs[i]))
			for _, x := range vecs[i] {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
			}
			e = base64.StdEncoding.EncodeToString(buf)
		}
		data = append(data, wireEmbedding{Object: "embedding", Index: i, Embedding: e})
	}
	w.Header().Set("Content-Type", "application/json")
	err := json.NewEncoder(w).Encode(map[string]any{
		"object": "list",
		"data":   data,
		"model":  req.Model,
		"usage":  map[string]int{"prompt_tokens": 2 * len(req.Input), "total_tokens": 2 * len(req.Input)},
	})
	if err != nil {
		t.Errorf("write embeddings: %v", err) // not require: this is the server's goroutine
	}
}

// reversed answers every input with its fakeVector, last index first.
func reversed(dims int) func(t *testing.T, w http.ResponseWriter, req wireRequest) {
	return func(t *testing.T, w http.ResponseWriter, req wireRequest) {
		vecs := make(map[int][]float32)
		var order []int
		for i, text := range req.Input {
			vecs[i] = fakeVector(text, dims)
			order = append([]int{i}, order...)
		}
		writeEmbeddings(t, w, req, order, vecs)
	}
}

type openAIBundle struct {
	embedder *embedding.OpenAI
	mu       sync.Mutex
	requests []wireRequest
}

func (b *openAIBundle) received() []wireRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.requests)
}

// setupOpenAI starts a local server speaking the OpenAI embeddings API
// under /v1, answering with respond, and an embedder for it configured by
// cfg (BaseURL and APIKey are filled in).
func setupOpenAI(t *testing.T, cfg embedding.OpenAIConfig, respond func(t *testing.T, w http.ResponseWriter, req wireRequest)) *openAIBundle {
	t.Helper()
	b := &openAIBundle{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
			http.NotFound(w, r)
			return
		}
		var req wireRequest
		body, err := io.ReadAll(r.Body)
		if err == nil {
			err = json.Unmarshal(body, &req)
		}
		if err == nil {
			err = json.Unmarshal(body, &req.raw)
		}
		if err != nil {
			t.Errorf("read request: %v", err) // not require: this is the server's goroutine
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req.authorization, req.path, req.contentType = r.Header.Get("Authorization"), r.URL.Path, r.Header.Get("Content-Type")
		b.mu.Lock()
		b.requests = append(b.requests, req)
		b.mu.Unlock()
		respond(t, w, req)
	}))
	t.Cleanup(srv.Close)
	cfg.BaseURL, cfg.APIKey = srv.URL+"/v1", testKey
	e, err := embedding.NewOpenAI(cfg)
	require.NoError(t, err)
	b.embedder = e
	return b
}

// Five texts in batches of two: three requests, and the vectors in the
// order of the texts although the server answers each batch backwards.
func TestOpenAIBatchesAndKeepsOrder(t *testing.T) {
	t.Parallel()
	const dims = 4
	b := setupOpenAI(t, embedding.OpenAIConfig{Model: "text-embedding-3-small", Dims: dims, BatchSize: 2}, reversed(dims))
	texts := []string{"text 1", "text 2", "text 3", "text 4", "text 5"}

	vecs, err := b.embedder.Embed(context.Background(), texts)
	require.NoError(t, err)

	require.Len(t, vecs, len(texts))
	for i, v := range vecs {
		require.Nil(t, v.Sparse)
		require.NotNil(t, v.Dense)
		s := v.Dense.Slice()
		require.Len(t, s, dims)
		require.InDelta(t, 1, math.Hypot(float64(s[0]), float64(s[1])), 1e-6, "unit length")
		require.InDelta(t, float64(i+1), float64(s[0]/s[1]), 1e-5, "vector %d is text %d's", i, i+1)
	}

	reqs := b.received()
	require.Len(t, reqs, 3)
	for i, want := range [][]string{{"text 1", "text 2"}, {"text 3", "text 4"}, {"text 5"}} {
		req := reqs[i]
		require.Equal(t, want, req.Input)
		require.Equal(t, "text-embedding-3-small", req.Model)
		require.Equal(t, "Bearer "+testKey, req.authorization)
		require.Equal(t, "application/json", req.contentType)
		require.NotNil(t, req.Dimensions, "text-embedding-3 models are asked for the dimension")
		require.Equal(t, dims, *req.Dimensions)
		require.Contains(t, []string{"", "float", "base64"}, req.EncodingFormat)
	}
}

// Other models are not sent dimensions, which they may refuse; no key, no
// Authorization header (a local Ollama needs none).
func TestOpenAIOtherModelsGetNoDimensions(t *testing.T) {
	t.Parallel()
	b := setupOpenAI(t, embedding.OpenAIConfig{Model: "nomic-embed-text", Dims: 3}, reversed(3))
	_, err := b.embedder.Embed(context.Background(), []string{"text 1"})
	require.NoError(t, err)
	reqs := b.received()
	require.Len(t, reqs, 1)
	require.NotContains(t, reqs[0].raw, "dimensions")
	require.Equal(t, "openai:nomic-embed-text:3", b.embedder.Model())
}

func TestOpenAIWithoutKeySendsNoAuthorization(t *testing.T) {
	t.Parallel()
	var auth []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		var req wireRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("read request: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		reversed(2)(t, w, req)
	}))
	t.Cleanup(srv.Close)
	e, err := embedding.NewOpenAI(embedding.OpenAIConfig{BaseURL: srv.URL, Model: "all-minilm", Dims: 2})
	require.NoError(t, err)
	_, err = e.Embed(context.Background(), []string{"text 1"})
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{""}, auth)
}

func TestOpenAINoTextsNoRequest(t *testing.T) {
	t.Parallel()
	b := setupOpenAI(t, embedding.OpenAIConfig{Model: "m", Dims: 2}, reversed(2))
	vecs, err := b.embedder.Embed(context.Background(), nil)
	require.NoError(t, err)
	require.Empty(t, vecs)
	require.Empty(t, b.received())
}

// An error status is a *StatusError with the server's message, and no
// error text carries the API key, even when the server echoes it.
func TestOpenAIErrorStatusHidesKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body  string
		status      int
		wantMessage string
	}{
		{
			name:        "401 with an OpenAI error",
			status:      http.StatusUnauthorized,
			body:        `{"error":{"message":"Incorrect API key provided: ` + testKey + `.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			wantMessage: "Incorrect API key provided: [redacted].",
		},
		{
			name:        "500 with a plain body",
			status:      http.StatusInternalServerError,
			body:        "upstream failed for key " + testKey,
			wantMessage: "upstream failed for key [redacted]",
		},
		{
			name:        "429 rate limited",
			status:      http.StatusTooManyRequests,
			body:        `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`,
			wantMessage: "Rate limit reached",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupOpenAI(t, embedding.OpenAIConfig{Model: "text-embedding-3-small", Dims: 2}, func(t *testing.T, w http.ResponseWriter, req wireRequest) {
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			})
			_, err := b.embedder.Embed(context.Background(), []string{"text 1"})
			require.Error(t, err)
			require.NotContains(t, err.Error(), testKey)
			require.NotContains(t, fmt.Sprintf("%+v", err), testKey)
			var se *embedding.StatusError
			require.ErrorAs(t, err, &se)
			require.Equal(t, tc.status, se.StatusCode)
			require.Equal(t, tc.wantMessage, se.Message)
			require.Contains(t, err.Error(), fmt.Sprintf("status %d: %s", tc.status, tc.wantMessage))
		})
	}
}

// An answer that cannot be used is refused with ErrBadResponse.
func TestOpenAIRefusesBadResponse(t *testing.T) {
	t.Parallel()
	two := []float32{1, 2}
	for _, tc := range []struct {
		name  string
		order []int
		vecs  map[int][]float32
		want  string
	}{
		{"wrong dimension", []int{0, 1}, map[int][]float32{0: two, 1: {1, 2, 3}}, "read embedding 1: 3 values, want 2"},
		{"too few", []int{0}, map[int][]float32{0: two}, "1 for 2 inputs"},
		{"too many", []int{0, 1, 2}, map[int][]float32{0: two, 1: two, 2: two}, "3 for 2 inputs"},
		{"repeated index", []int{1, 1}, map[int][]float32{1: two}, "index 1 repeated"},
		{"index out of range", []int{0, 2}, map[int][]float32{0: two, 2: two}, "index 2 out of range"},
		{"zero vector", []int{0, 1}, map[int][]float32{0: two, 1: {0, 0}}, "norm 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupOpenAI(t, embedding.OpenAIConfig{Model: "text-embedding-3-small", Dims: 2}, func(t *testing.T, w http.ResponseWriter, req wireRequest) {
				writeEmbeddings(t, w, req, tc.order, tc.vecs)
			})
			_, err := b.embedder.Embed(context.Background(), []string{"text 1", "text 2"})
			require.ErrorIs(t, err, embedding.ErrBadResponse)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// A failed batch fails the call, naming the texts it held.
func TestOpenAIFailedBatchFailsTheCall(t *testing.T) {
	t.Parallel()
	var calls int
	var mu sync.Mutex
	b := setupOpenAI(t, embedding.OpenAIConfig{Model: "m", Dims: 2, BatchSize: 2}, func(t *testing.T, w http.ResponseWriter, req wireRequest) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 2 {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		reversed(2)(t, w, req)
	})
	vecs, err := b.embedder.Embed(context.Background(), []string{"text 1", "text 2", "text 3", "text 4", "text 5"})
	require.Nil(t, vecs)
	require.ErrorContains(t, err, "embed texts 2 to 3: create embeddings: status 502")
	require.Len(t, b.received(), 2, "no request after the failed batch")
}

func TestOpenAICancelledContext(t *testing.T) {
	t.Parallel()
	b := setupOpenAI(t, embedding.OpenAIConfig{Model: "m", Dims: 2}, reversed(2))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.embedder.Embed(ctx, []string{"text 1"})
	require.ErrorIs(t, err, context.Canceled)
}

func TestOpenAIDescribesItself(t *testing.T) {
	t.Parallel()
	e, err := embedding.NewOpenAI(embedding.OpenAIConfig{Model: "text-embedding-3-small", Dims: 1536})
	require.NoError(t, err)
	require.Equal(t, "openai:text-embedding-3-small:1536", e.Model())
	require.Equal(t, 1536, e.Dims())
	require.False(t, e.Sparse())
}

func TestOpenAIConfigValidate(t *testing.T) {
	t.Parallel()
	valid := embedding.OpenAIConfig{Model: "text-embedding-3-small", Dims: 1536}
	with := func(f func(*embedding.OpenAIConfig)) embedding.OpenAIConfig { c := valid; f(&c); return c }
	for _, tc := range []struct {
		name  string
		cfg   embedding.OpenAIConfig
		field string
		want  string
	}{
		{"valid with defaults", valid, "", ""},
		{"valid for a local server", with(func(c *embedding.OpenAIConfig) {
			c.BaseURL, c.Model, c.Dims, c.BatchSize, c.Timeout = "http://localhost:11434/v1", "nomic-embed-text", 768, 16, time.Minute
		}), "", ""},
		{"valid at the largest dimension", with(func(c *embedding.OpenAIConfig) { c.Dims = 16000 }), "", ""},
		{"no model", with(func(c *embedding.OpenAIConfig) { c.Model = "" }), "model", "embedding.openai.model: is required"},
		{"blank model", with(func(c *embedding.OpenAIConfig) { c.Model = "  " }), "model", "embedding.openai.model: is required"},
		{"no dims", with(func(c *embedding.OpenAIConfig) { c.Dims = 0 }), "dims", "embedding.openai.dims: 0 is outside 1..16000"},
		{"negative dims", with(func(c *embedding.OpenAIConfig) { c.Dims = -1 }), "dims", "embedding.openai.dims: -1 is outside 1..16000"},
		{"too many dims", with(func(c *embedding.OpenAIConfig) { c.Dims = 16001 }), "dims", "embedding.openai.dims: 16001 is outside 1..16000"},
		{"unparseable base URL", with(func(c *embedding.OpenAIConfig) { c.BaseURL = "http://[::1" }), "base_url", "embedding.openai.base_url: is not a URL"},
		{"relative base URL", with(func(c *embedding.OpenAIConfig) { c.BaseURL = "/v1" }), "base_url", "embedding.openai.base_url: must be an absolute http or https URL"},
		{"other scheme", with(func(c *embedding.OpenAIConfig) { c.BaseURL = "ftp://example.com/v1" }), "base_url", "embedding.openai.base_url: must be an absolute http or https URL"},
		{"negative batch size", with(func(c *embedding.OpenAIConfig) { c.BatchSize = -1 }), "batch_size", "embedding.openai.batch_size: must not be negative"},
		{"negative timeout", with(func(c *embedding.OpenAIConfig) { c.Timeout = -time.Second }), "timeout", "embedding.openai.timeout: must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.cfg.Validate()
			_, newErr := embedding.NewOpenAI(tc.cfg)
			if tc.want == "" {
				require.NoError(t, err)
				require.NoError(t, newErr)
				return
			}
			require.EqualError(t, err, tc.want)
			require.EqualError(t, newErr, tc.want)
			var ce *embedding.ConfigError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tc.field, ce.Field)
		})
	}
}

// The fake server's base64 answer, for clients that ask for it, is what
// OpenAI sends: go-openai's own decoder reads it back.
func TestFakeServerSpeaksBase64(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	vecs := map[int][]float32{0: {0.25, -1.5, 3}, 1: {1, 0, -0.125}}
	writeEmbeddings(t, rec, wireRequest{Model: "m", Input: []string{"a", "b"}, EncodingFormat: "base64"}, []int{1, 0}, vecs)

	var res openai.EmbeddingResponseBase64
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &res))
	decoded, err := res.ToEmbeddingResponse()
	require.NoError(t, err)
	require.Len(t, decoded.Data, 2)
	for _, e := range decoded.Data {
		require.Equal(t, vecs[e.Index], e.Embedding)
	}
}
