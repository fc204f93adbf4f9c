package embedding

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/pgvector/pgvector-go"
	openai "github.com/sashabaranov/go-openai"

	"github.com/engram-dev/engram/internal/openaicompat"
)

// Defaults of the [OpenAIConfig].
const (
	// DefaultOpenAIBaseURL is OpenAI's API. Ollama serves the same API at
	// http://localhost:11434/v1, vLLM at http://localhost:8000/v1.
	DefaultOpenAIBaseURL = openaicompat.DefaultBaseURL
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
	if msg := openaicompat.CheckBaseURL(c.BaseURL); msg != "" {
		return &ConfigError{Field: "base_url", Message: msg}
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
	api       *openaicompat.Client
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
	return &OpenAI{
		api:       openaicompat.New(openaicompat.Config{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Timeout: cmp.Or(cfg.Timeout, DefaultTimeout)}),
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
	res, err := o.api.API.CreateEmbeddings(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("create embeddings: %w", o.api.Sanitize(err))
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
