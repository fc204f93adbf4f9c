package embedding

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pgvector/pgvector-go"
	openai "github.com/sashabaranov/go-openai"
)

// Defaults of the [OpenAIConfig].
const (
	// DefaultOpenAIBaseURL is OpenAI's API. Ollama serves the same API at
	// http://localhost:11434/v1, vLLM at http://localhost:8000/v1.
	DefaultOpenAIBaseURL = "https://api.openai.com/v1"
	// DefaultBatchSize is how many texts one request embeds.
	DefaultBatchSize = 64
	// DefaultTimeout bounds one request.
	DefaultTimeout = 30 * time.Second
)

// MaxDenseDims is the largest dimension an [OpenAI] embedder accepts,
// pgvector's limit for a stored vector.
const MaxDenseDims = 16000

// OpenAIConfig configures an [OpenAI] embedder, the `embedding.openai`
// section of engramd's configuration file.
type OpenAIConfig struct {
	// BaseURL is the API's root, under which POST /embeddings is served;
	// [DefaultOpenAIBaseURL] when empty.
	BaseURL string `json:"base_url" yaml:"base_url"`
	// APIKey is sent as a bearer token; local servers often need none. It
	// never appears in an error.
	APIKey string `json:"api_key" yaml:"api_key"`
	// Model is the embedding model's name on the server:
	// "text-embedding-3-small", "nomic-embed-text". Required.
	Model string `json:"model" yaml:"model"`
	// Dims is the dimension of the model's vectors, 1 to [MaxDenseDims].
	// Required: every vector is checked against it, and text-embedding-3
	// models are asked for it.
	Dims int `json:"dims" yaml:"dims"`
	// BatchSize is how many texts one request embeds; [DefaultBatchSize]
	// when zero.
	BatchSize int `json:"batch_size" yaml:"batch_size"`
	// Timeout bounds one request; [DefaultTimeout] when zero.
	Timeout time.Duration `json:"timeout" yaml:"timeout"`
}

// Validate checks every field and names the first bad one, as a
// *[ConfigError].
func (c OpenAIConfig) Validate() error {
	if strings.TrimSpace(c.Model) == "" {
		return &ConfigError{Field: "model", Message: "is required"}
	}
	if c.Dims < 1 || c.Dims > MaxDenseDims {
		return &ConfigError{Field: "dims", Message: fmt.Sprintf("%d is outside 1..%d", c.Dims, MaxDenseDims)}
	}
	if c.BaseURL != "" {
		// The URL is not quoted back: it might carry credentials.
		u, err := url.Parse(c.BaseURL)
		if err != nil {
			return &ConfigError{Field: "base_url", Message: "is not a URL"}
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			return &ConfigError{Field: "base_url", Message: "must be an absolute http or https URL"}
		}
	}
	if c.BatchSize < 0 {
		return &ConfigError{Field: "batch_size", Message: "must not be negative"}
	}
	if c.Timeout < 0 {
		return &ConfigError{Field: "timeout", Message: "must not be negative"}
	}
	return nil
}

// OpenAI is an [Embedder] for any server speaking the OpenAI embeddings API
// (POST {base}/embeddings): OpenAI, Ollama, vLLM. Its vectors are dense and
// L2-normalised. It is safe for concurrent use.
type OpenAI struct {
	client    *openai.Client
	apiKey    string
	model     string
	dims      int
	batchSize int
}

var _ Embedder = (*OpenAI)(nil)

// NewOpenAI returns a client for the endpoint cfg names, after validating
// cfg. It makes no request.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cc := openai.DefaultConfig(cfg.APIKey)
	cc.BaseURL = cmp.Or(cfg.BaseURL, DefaultOpenAIBaseURL)
	cc.HTTPClient = &http.Client{Timeout: cmp.Or(cfg.Timeout, DefaultTimeout)}
	return &OpenAI{
		client:    openai.NewClientWithConfig(cc),
		apiKey:    cfg.APIKey,
		model:     cfg.Model,
		dims:      cfg.Dims,
		batchSize: cmp.Or(cfg.BatchSize, DefaultBatchSize),
	}, nil
}

// Model returns "openai:<model>:<dims>", e.g.
// "openai:text-embedding-3-small:1536".
func (o *OpenAI) Model() string { return "openai:" + o.model + ":" + strconv.Itoa(o.dims) }

// Dims returns the configured dimension.
func (o *OpenAI) Dims() int { return o.dims }

// Sparse returns false: the vectors are dense.
func (o *OpenAI) Sparse() bool { return false }

// Embed returns one dense, L2-normalised vector per text, in order, asking
// the endpoint for at most the configured batch size at a time. Any failed
// batch fails the call.
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([]Vector, error) {
	out := make([]Vector, 0, len(texts))
	for start := 0; start < len(texts); start += o.batchSize {
		batch := texts[start:min(start+o.batchSize, len(texts))]
		vecs, err := o.embedBatch(ctx, batch)
		if err != nil {
			return nil, fmt.Errorf("embed texts %d to %d: %w", start, start+len(batch)-1, err)
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (o *OpenAI) embedBatch(ctx context.Context, batch []string) ([]Vector, error) {
	req := openai.EmbeddingRequestStrings{Input: batch, Model: openai.EmbeddingModel(o.model)}
	// Only text-embedding-3 models can shorten their vectors; others may
	// refuse the parameter.
	if strings.HasPrefix(o.model, "text-embedding-3") {
		req.Dimensions = o.dims
	}
	res, err := o.client.CreateEmbeddings(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("create embeddings: %w", o.sanitize(err))
	}
	if len(res.Data) != len(batch) {
		return nil, fmt.Errorf("read embeddings: %d for %d inputs: %w", len(res.Data), len(batch), ErrBadResponse)
	}
	out := make([]Vector, len(batch))
	for _, e := range res.Data {
		if e.Index < 0 || e.Index >= len(batch) {
			return nil, fmt.Errorf("read embeddings: index %d out of range: %w", e.Index, ErrBadResponse)
		}
		if out[e.Index].Dense != nil {
			return nil, fmt.Errorf("read embeddings: index %d repeated: %w", e.Index, ErrBadResponse)
		}
		if len(e.Embedding) != o.dims {
			return nil, fmt.Errorf("read embedding %d: %d values, want %d: %w", e.Index, len(e.Embedding), o.dims, ErrBadResponse)
		}
		unit, err := normalize(e.Embedding)
		if err != nil {
			return nil, fmt.Errorf("read embedding %d: %w", e.Index, err)
		}
		v := pgvector.NewVector(unit)
		out[e.Index] = Vector{Dense: &v}
	}
	return out, nil
}

// maxMessage bounds the server's text kept in a [StatusError].
const maxMessage = 512

// sanitize turns the client library's errors, which may quote the server's
// body, into errors whose text never carries the API key.
func (o *OpenAI) sanitize(err error) error {
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		return &StatusError{StatusCode: apiErr.HTTPStatusCode, Type: apiErr.Type, Message: o.redact(apiErr.Message)}
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		return &StatusError{StatusCode: reqErr.HTTPStatusCode, Message: o.redact(strings.TrimSpace(string(reqErr.Body)))}
	}
	if o.apiKey != "" && strings.Contains(err.Error(), o.apiKey) {
		return errors.New(o.redact(err.Error()))
	}
	return err // transport errors and context errors, kept for errors.Is
}

// redact removes the API key from a server's message and bounds its length.
func (o *OpenAI) redact(msg string) string {
	if o.apiKey != "" {
		msg = strings.ReplaceAll(msg, o.apiKey, "[redacted]")
	}
	if len(msg) > maxMessage {
		msg = strings.ToValidUTF8(msg[:maxMessage], "") + "…"
	}
	return msg
}

// normalize returns v scaled to unit length.
func normalize(v []float32) ([]float32, error) {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	norm := math.Sqrt(sum)
	if norm == 0 || math.IsNaN(norm) || math.IsInf(norm, 0) {
		return nil, fmt.Errorf("normalize vector of norm %g: %w", norm, ErrBadResponse)
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) / norm)
	}
	return out, nil
}
