package embedding_test

import (
	"context"
	"testing"

	"github.com/pgvector/pgvector-go"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/embedding"
)

func TestFuncsCallsItsFields(t *testing.T) {
	t.Parallel()
	dense := pgvector.NewVector([]float32{1, 0})
	var got []string
	var e embedding.Embedder = embedding.Funcs{
		ModelFunc: func() string { return "test:2" },
		DimsFunc:  func() int { return 2 },
		EmbedFunc: func(ctx context.Context, texts []string) ([]embedding.Vector, error) {
			got = texts
			return []embedding.Vector{{Dense: &dense}}, nil
		},
	}
	require.Equal(t, "test:2", e.Model())
	require.Equal(t, 2, e.Dims())
	require.False(t, e.Sparse(), "a nil SparseFunc answers false")
	vecs, err := e.Embed(context.Background(), []string{"a"})
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, got)
	require.Equal(t, []embedding.Vector{{Dense: &dense}}, vecs)
}

func TestFuncsWithoutEmbedFuncFails(t *testing.T) {
	t.Parallel()
	_, err := embedding.Funcs{}.Embed(context.Background(), []string{"a"})
	require.EqualError(t, err, "embed: Funcs.EmbedFunc is nil")
}
