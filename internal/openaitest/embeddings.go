package openaitest

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// EmbeddingServer serves POST /v1/embeddings in OpenAI's wire format,
// embedding each input with a function: the dense vectors of an
// OpenAI-compatible model, for the tests and benchmarks of dense vector
// search. Its base URL for a client is URL.
type EmbeddingServer struct {
	URL string
	// Inputs counts the texts embedded so far.
	Inputs atomic.Int64
}

// embeddingRequest is an embeddings request as it comes over the wire.
type embeddingRequest struct {
	Input          []string `json:"input"`
	Model          string   `json:"model"`
	EncodingFormat string   `json:"encoding_format"`
}

// NewEmbeddingServer starts a server answering every input with embed's
// vector for it, as a list of floats or, when the request asks for
// encoding_format base64, as base64 of little-endian float32s, as OpenAI
// answers. It stops when the test ends.
func NewEmbeddingServer(t testing.TB, embed func(text string) []float32) *EmbeddingServer {
	t.Helper()
	s := &EmbeddingServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
			http.NotFound(w, r)
			return
		}
		var req embeddingRequest
		body, err := io.ReadAll(r.Body)
		if err == nil {
			err = json.Unmarshal(body, &req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		data := make([]map[string]any, len(req.Input))
		for i, text := range req.Input {
			v := embed(text)
			var e any = v
			if req.EncodingFormat == "base64" {
				buf := make([]byte, 0, 4*len(v))
				for _, x := range v {
					buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
				}
				e = base64.StdEncoding.EncodeToString(buf)
			}
			data[i] = map[string]any{"object": "embedding", "index": i, "embedding": e}
		}
		s.Inputs.Add(int64(len(req.Input)))
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"object": "list", "data": data, "model": req.Model,
			"usage": map[string]int{"prompt_tokens": 2 * len(req.Input), "total_tokens": 2 * len(req.Input)},
		})
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL + "/v1"
	return s
}

// BagOfWords returns a deterministic embedding of dims dimensions: the sum
// of one fixed pseudo-random Gaussian vector per word of the text (seeded
// by the word), a random projection of its bag of words. Texts that share
// words are near, as a real model's vectors of texts that share meaning
// are, and a corpus of texts drawn from a skewed vocabulary has the
// clustered structure an HNSW graph is built for. A text of no words is
// the first axis.
func BagOfWords(dims int) func(text string) []float32 {
	var words sync.Map
	return func(text string) []float32 {
		out := make([]float32, dims)
		n := 0
		for _, w := range strings.Fields(strings.ToLower(text)) {
			v, ok := words.Load(w)
			if !ok {
				h := fnv.New64a()
				_, _ = h.Write([]byte(w))
				rng := rand.New(rand.NewPCG(h.Sum64(), 0x9e3779b97f4a7c15))
				wv := make([]float32, dims)
				for i := range wv {
					wv[i] = float32(rng.NormFloat64())
				}
				v, _ = words.LoadOrStore(w, wv)
			}
			for i, x := range v.([]float32) {
				out[i] += x
			}
			n++
		}
		if n == 0 {
			out[0] = 1
		}
		return out
	}
}
