package embedding

import (
	"context"
	"errors"
)

// Funcs is an [Embedder] whose methods call its fields, the test double for
// code that embeds. A nil field gives a zero answer; a nil EmbedFunc fails.
type Funcs struct {
	ModelFunc  func() string
	DimsFunc   func() int
	SparseFunc func() bool
	EmbedFunc  func(ctx context.Context, texts []string) ([]Vector, error)
}

var _ Embedder = Funcs{}

// Model calls ModelFunc.
func (f Funcs) Model() string {
	if f.ModelFunc == nil {
		return ""
	}
	return f.ModelFunc()
}

// Dims calls DimsFunc.
func (f Funcs) Dims() int {
	if f.DimsFunc == nil {
		return 0
	}
	return f.DimsFunc()
}

// Sparse calls SparseFunc.
func (f Funcs) Sparse() bool {
	if f.SparseFunc == nil {
		return false
	}
	return f.SparseFunc()
}

// Embed calls EmbedFunc.
func (f Funcs) Embed(ctx context.Context, texts []string) ([]Vector, error) {
	if f.EmbedFunc == nil {
		return nil, errors.New("embed: Funcs.EmbedFunc is nil")
	}
	return f.EmbedFunc(ctx, texts)
}
