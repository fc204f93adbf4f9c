package embedding

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/pgvector/pgvector-go"
)

// LexicalModel is the [Lexical] embedder's model name. Changing the
// features, their hashing or their weights changes it, and so forces a
// reindex.
const LexicalModel = "lexical-v1"

// LexicalDims is the dimension of the [Lexical] embedder's sparse vectors:
// features are hashed into 2^20 buckets, few enough collisions for texts of
// a few hundred features.
const LexicalDims = 1 << 20

// MaxNonZero is how many features a [Lexical] vector keeps at most, the
// heaviest ones. It bounds the row size and keeps the vectors well inside
// pgvector's limit of 1000 non-zero elements for an HNSW-indexed sparsevec.
const MaxNonZero = 256

// Weights of the three kinds of lexical feature. Whole words say the most;
// a bigram adds word order; a trigram only a shared spelling, which still
// matches a misspelt or inflected word ("dependancy", "resolved").
const (
	UnigramWeight = 1.0
	BigramWeight  = 0.7
	TrigramWeight = 0.4
)

// Feature kinds: the seed of each feature's hash, so that a unigram and a
// trigram spelt the same ("err") land in different buckets, and the slot of
// its count.
const (
	kindUnigram = iota
	kindBigram
	kindTrigram
)

var (
	kindSeed   = [...]byte{kindUnigram: 'u', kindBigram: 'b', kindTrigram: 't'}
	kindWeight = [...]float64{kindUnigram: UnigramWeight, kindBigram: BigramWeight, kindTrigram: TrigramWeight}
)

// Boundary markers pad a word for its trigrams, so that "^er" (a word
// starting with "er") differs from "err" inside one. Neither is a letter or
// a digit, so neither occurs in a word.
const (
	wordStart = "^"
	wordEnd   = "$"
)

// Lexical is the built-in embedder: LEXICAL, never semantic. It hashes
// word unigrams, word bigrams and character trigrams into a sparse vector;
// see the package documentation. It needs no network and no model, never
// fails but on a cancelled context, and is safe for concurrent use. The zero
// value is ready to use.
type Lexical struct{}

var _ Embedder = (*Lexical)(nil)

// NewLexical returns the built-in lexical embedder.
func NewLexical() *Lexical { return &Lexical{} }

// Model returns [LexicalModel].
func (l *Lexical) Model() string { return LexicalModel }

// Dims returns [LexicalDims].
func (l *Lexical) Dims() int { return LexicalDims }

// Sparse returns true: lexical vectors are pgvector sparsevecs.
func (l *Lexical) Sparse() bool { return true }

// Embed returns, for each text, [Lexical.Vector] of its [Lexical.Features]
// without inverse document frequencies.
func (l *Lexical) Embed(ctx context.Context, texts []string) ([]Vector, error) {
	out := make([]Vector, len(texts))
	for i, text := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		v := l.Vector(l.Features(text), nil)
		out[i] = Vector{Sparse: &v}
	}
	return out, nil
}

// Features returns the text's weighted features by their 0-based index in
// [0, [LexicalDims]): for each feature, 1 + ln(count) times its kind's
// weight ([UnigramWeight], [BigramWeight], [TrigramWeight]). Words are the
// lower-cased runs of letters and digits; everything else separates them.
// Features that hash to the same index add up. The weights are neither
// normalised nor scaled by inverse document frequency: that is
// [Lexical.Vector]'s work.
func (l *Lexical) Features(text string) map[int32]float64 {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	// Counted by kind and index together, so that colliding features of
	// different kinds are log-scaled separately.
	counts := make(map[uint32]int, 6*len(words))
	count := func(kind int, h uint32) { counts[uint32(kind)<<20|h%LexicalDims]++ }
	var starts []int
	for i, w := range words {
		count(kindUnigram, hashString(seed(kindUnigram), w))
		if i > 0 {
			count(kindBigram, hashString(hashString(hashString(seed(kindBigram), words[i-1]), " "), w))
		}
		padded := wordStart + w + wordEnd
		// starts[j] is the byte offset of the j-th rune; a trigram is
		// three runes, whatever their width.
		starts = starts[:0]
		for j := range padded {
			starts = append(starts, j)
		}
		starts = append(starts, len(padded))
		for j := 0; j+3 < len(starts); j++ {
			count(kindTrigram, hashString(seed(kindTrigram), padded[starts[j]:starts[j+3]]))
		}
	}
	features := make(map[int32]float64, len(counts))
	for key, n := range counts {
		kind, index := key>>20, int32(key&(LexicalDims-1))
		features[index] += kindWeight[kind] * (1 + math.Log(float64(n)))
	}
	return features
}

// Vector turns features into a unit sparse vector of [LexicalDims]
// dimensions. Each weight is multiplied by idf(index) when idf is not nil;
// weights that are then not positive and finite are dropped, as are
// indices outside [0, [LexicalDims]). At most the [MaxNonZero] heaviest
// features are kept, ties going to the lower index so that the same
// features always give the same vector, and the result is L2-normalised.
// No features give a vector with no non-zero elements.
func (l *Lexical) Vector(features map[int32]float64, idf func(index int32) float64) pgvector.SparseVector {
	type feature struct {
		index  int32
		weight float64
	}
	kept := make([]feature, 0, len(features))
	for i, w := range features {
		if idf != nil {
			w *= idf(i)
		}
		if w > 0 && !math.IsInf(w, 1) && i >= 0 && i < LexicalDims {
			kept = append(kept, feature{i, w})
		}
	}
	slices.SortFunc(kept, func(a, b feature) int {
		if c := cmp.Compare(b.weight, a.weight); c != 0 {
			return c
		}
		return cmp.Compare(a.index, b.index)
	})
	kept = kept[:min(len(kept), MaxNonZero)]
	var sum float64
	for _, f := range kept {
		sum += f.weight * f.weight
	}
	norm := math.Sqrt(sum)
	elements := make(map[int32]float32, len(kept))
	for _, f := range kept {
		elements[f.index] = float32(f.weight / norm)
	}
	return pgvector.NewSparseVectorFromMap(elements, LexicalDims)
}

// IDF is the smoothed inverse document frequency of a feature found in df
// of docs documents, in the form BM25 uses: ln(1 + (docs − df + 0.5) /
// (df + 0.5)). It is never negative: a df above docs (counts read at
// different times) counts as docs, and negative counts as zero.
func IDF(docs, df int64) float64 {
	docs = max(docs, 0)
	df = min(max(df, 0), docs)
	return math.Log1p((float64(docs-df) + 0.5) / (float64(df) + 0.5))
}

// FNV-1a, 32 bits (hash/fnv, inlined to hash without allocating).
const (
	fnvOffset32 = 2166136261
	fnvPrime32  = 16777619
)

// seed is the FNV-1a hash of the kind's seed byte, where the hash of each of
// its features starts.
func seed(kind int) uint32 {
	return (fnvOffset32 ^ uint32(kindSeed[kind])) * fnvPrime32
}

func hashString(h uint32, s string) uint32 {
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= fnvPrime32
	}
	return h
}
