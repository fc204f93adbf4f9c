package extract

import (
	"context"
	"errors"
)

// Funcs is an [Extractor] whose methods call its fields, the test double
// for code that extracts. A nil field fails.
type Funcs struct {
	SummariseFunc func(ctx context.Context, text string) (string, error)
	FactsFunc     func(ctx context.Context, text string) ([]Fact, error)
}

var _ Extractor = Funcs{}

// Summarise calls SummariseFunc.
func (f Funcs) Summarise(ctx context.Context, text string) (string, error) {
	if f.SummariseFunc == nil {
		return "", errors.New("summarise: Funcs.SummariseFunc is nil")
	}
	return f.SummariseFunc(ctx, text)
}

// Facts calls FactsFunc.
func (f Funcs) Facts(ctx context.Context, text string) ([]Fact, error) {
	if f.FactsFunc == nil {
		return nil, errors.New("extract facts: Funcs.FactsFunc is nil")
	}
	return f.FactsFunc(ctx, text)
}
