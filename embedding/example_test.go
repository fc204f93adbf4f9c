package embedding_test

import (
	"context"
	"fmt"

	"github.com/engram-dev/engram/embedding"
)

// Two wordings of the same npm error are close; an unrelated note is not.
// The lexical embedder sees shared words and spellings, not meaning.
func ExampleLexical() {
	l := embedding.NewLexical()
	vecs, err := l.Embed(context.Background(), []string{
		"npm ERR! code ERESOLVE unable to resolve dependency tree",
		"npm error ERESOLVE could not resolve the dependency tree",
		"user prefers dark mode in the editor",
	})
	if err != nil {
		panic(err)
	}
	dot := func(a, b embedding.Vector) float64 { return cosine(*a.Sparse, *b.Sparse) }
	fmt.Println(l.Model(), l.Dims(), len(vecs[0].Sparse.Indices()), "non-zero")
	fmt.Printf("same error: %.2f\n", dot(vecs[0], vecs[1]))
	fmt.Printf("unrelated:  %.2f\n", dot(vecs[0], vecs[2]))
	// Output:
	// lexical-v1 1048576 57 non-zero
	// same error: 0.56
	// unrelated:  0.02
}

// A configuration that names no dimension is refused, naming the field.
func ExampleOpenAIConfig_Validate() {
	cfg := embedding.OpenAIConfig{BaseURL: "http://localhost:11434/v1", Model: "nomic-embed-text"}
	fmt.Println(cfg.Validate())
	cfg.Dims = 768
	fmt.Println(cfg.Validate())
	// Output:
	// embedding.openai.dims: 0 is outside 1..16000
	// <nil>
}
