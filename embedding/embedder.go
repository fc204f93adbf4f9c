package embedding

import (
	"context"

	"github.com/pgvector/pgvector-go"
)

// Vector is one embedding: exactly one of Sparse and Dense is set, as the
// [Embedder] that made it reports with [Embedder.Sparse].
type Vector struct {
	// Sparse is a pgvector sparsevec, set by sparse embedders.
	Sparse *pgvector.SparseVector
	// Dense is a pgvector vector, set by dense embedders.
	Dense *pgvector.Vector
}

// Embedder turns texts into vectors. Implementations are safe for concurrent
// use.
type Embedder interface {
	// Model names the model and its shape; vectors are stored under this
	// name, and a new name means a reindex. E.g. "lexical-v1" or
	// "openai:text-embedding-3-small:1536".
	Model() string
	// Dims is the vector's dimension (2^20 for the lexical embedder).
	Dims() int
	// Sparse reports whether the vectors are sparse (pgvector sparsevec)
	// rather than dense (vector).
	Sparse() bool
	// Embed returns one vector per text, in order.
	Embed(ctx context.Context, texts []string) ([]Vector, error)
}
