package extract

import "context"

// Extractor reads free text with a language model. Implementations are safe
// for concurrent use.
type Extractor interface {
	// Summarise returns a short summary of text; "" for a blank text.
	Summarise(ctx context.Context, text string) (string, error)
	// Facts returns the facts text states, none for a blank text.
	Facts(ctx context.Context, text string) ([]Fact, error)
}

// Fact is a subject–predicate–object claim (substrate RFC §7) and the
// conditions under which it holds.
type Fact struct {
	Subject   string
	Predicate string
	Object    string
	// Conditions are the context keys under which the fact holds (os:
	// linux); nil when it always holds.
	Conditions map[string]string
}
