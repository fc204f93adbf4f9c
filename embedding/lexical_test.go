package embedding_test

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/pgvector/pgvector-go"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/embedding"
)

// cosine is the cosine similarity of two sparse vectors.
func cosine(a, b pgvector.SparseVector) float64 {
	bv := make(map[int32]float64, len(b.Indices()))
	for i, idx := range b.Indices() {
		bv[idx] = float64(b.Values()[i])
	}
	var dot float64
	for i, idx := range a.Indices() {
		dot += float64(a.Values()[i]) * bv[idx]
	}
	return dot / (norm(a) * norm(b))
}

func norm(v pgvector.SparseVector) float64 {
	var sum float64
	for _, x := range v.Values() {
		sum += float64(x) * float64(x)
	}
	return math.Sqrt(sum)
}

func embedOne(t *testing.T, l *embedding.Lexical, text string) pgvector.SparseVector {
	t.Helper()
	vs, err := l.Embed(context.Background(), []string{text})
	require.NoError(t, err)
	require.Len(t, vs, 1)
	require.Nil(t, vs[0].Dense)
	require.NotNil(t, vs[0].Sparse)
	return *vs[0].Sparse
}

const (
	npmOld    = "npm ERR! code ERESOLVE unable to resolve dependency tree"
	npmNew    = "npm error ERESOLVE could not resolve the dependency tree"
	unrelated = "user prefers dark mode in the editor"
)

// A sixty-word text, longer than MaxNonZero features.
var longText = `The build failed on the release branch because npm could not resolve the
dependency tree: react-dom 18.2.0 requires react 18.2.0 but the workspace pins
react 17.0.2. Running npm install with legacy-peer-deps works around it, but the
real fix is upgrading the workspace to React 18 and regenerating the lockfile.
The CI cache must be cleared afterwards, or the stale node_modules directory
keeps the old peer versions.`

func TestLexicalDescribesItself(t *testing.T) {
	t.Parallel()
	l := embedding.NewLexical()
	require.Equal(t, "lexical-v1", l.Model())
	require.Equal(t, 1<<20, l.Dims())
	require.True(t, l.Sparse())
}

func TestLexicalSameTextSameVector(t *testing.T) {
	t.Parallel()
	l := embedding.NewLexical()
	a, b := embedOne(t, l, npmOld), embedOne(t, l, npmOld)
	require.Equal(t, a.String(), b.String())
	require.Equal(t, a.String(), embedOne(t, l, strings.ToLower(npmOld)).String(), "case does not matter")
}

func TestLexicalVectorIsBoundedAndUnit(t *testing.T) {
	t.Parallel()
	l := embedding.NewLexical()
	require.Greater(t, len(l.Features(longText)), embedding.MaxNonZero, "the text has more features than are kept")
	for _, text := range []string{"x", npmOld, longText} {
		v := embedOne(t, l, text)
		require.Equal(t, int32(embedding.LexicalDims), v.Dimensions())
		require.NotEmpty(t, v.Indices())
		require.LessOrEqual(t, len(v.Indices()), embedding.MaxNonZero)
		require.InDelta(t, 1, norm(v), 1e-6)
		for _, idx := range v.Indices() {
			require.True(t, idx >= 0 && idx < embedding.LexicalDims, "index %d", idx)
		}
	}
}

func TestLexicalEmptyText(t *testing.T) {
	t.Parallel()
	l := embedding.NewLexical()
	for _, text := range []string{"", "  !?-- ", "\n"} {
		require.Empty(t, l.Features(text))
		v := embedOne(t, l, text)
		require.Equal(t, int32(embedding.LexicalDims), v.Dimensions())
		require.Empty(t, v.Indices())
	}
}

func TestLexicalEmbedKeepsOrder(t *testing.T) {
	t.Parallel()
	l := embedding.NewLexical()
	vs, err := l.Embed(context.Background(), []string{npmOld, "", unrelated})
	require.NoError(t, err)
	require.Len(t, vs, 3)
	require.Equal(t, embedOne(t, l, npmOld).String(), vs[0].Sparse.String())
	require.Empty(t, vs[1].Sparse.Indices())
	require.Equal(t, embedOne(t, l, unrelated).String(), vs[2].Sparse.String())
}

func TestLexicalEmbedCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := embedding.NewLexical().Embed(ctx, []string{npmOld})
	require.ErrorIs(t, err, context.Canceled)
}

// Two wordings of the same error are closer to each other than either is to
// an unrelated text. The embedder is lexical: this is shared words and
// spellings, not meaning.
func TestLexicalSameErrorSignatureIsClose(t *testing.T) {
	t.Parallel()
	l := embedding.NewLexical()
	oldMsg, newMsg, other := embedOne(t, l, npmOld), embedOne(t, l, npmNew), embedOne(t, l, unrelated)
	same := cosine(oldMsg, newMsg)
	t.Logf("same error %.3f, unrelated %.3f and %.3f", same, cosine(oldMsg, other), cosine(newMsg, other))
	require.Greater(t, same, 0.4)
	require.Greater(t, same, 3*cosine(oldMsg, other))
	require.Greater(t, same, 3*cosine(newMsg, other))
}

// A misspelt word shares no unigram with the right spelling, but most of
// its trigrams.
func TestLexicalMisspellingSharesTrigrams(t *testing.T) {
	t.Parallel()
	l := embedding.NewLexical()
	right, wrong := l.Features("dependency"), l.Features("dependancy")
	var shared int
	for idx := range right {
		if _, ok := wrong[idx]; ok {
			shared++
		}
	}
	// ^de dep epe pen end are shared; the unigram and the trigrams around
	// the e/a are not.
	require.GreaterOrEqual(t, shared, 5)
	require.Less(t, shared, len(right))
	require.Greater(t, cosine(embedOne(t, l, "dependency"), embedOne(t, l, "dependancy")), 0.3)
	require.Zero(t, cosine(embedOne(t, l, "dependency"), embedOne(t, l, "mode")))
}

// The features are log-scaled counts times the kind's weight.
func TestLexicalFeatureWeights(t *testing.T) {
	t.Parallel()
	l := embedding.NewLexical()
	// "a": unigram a, trigram ^a$. No bigram.
	one := l.Features("a")
	require.Len(t, one, 2)
	require.ElementsMatch(t, []float64{embedding.UnigramWeight, embedding.TrigramWeight}, values(one))

	// "a a a": the same two features three times, and the bigram "a a"
	// twice.
	three := l.Features("a a a")
	require.Len(t, three, 3)
	log := func(n float64) float64 { return 1 + math.Log(n) }
	require.InDeltaSlice(t,
		sorted([]float64{embedding.UnigramWeight * log(3), embedding.TrigramWeight * log(3), embedding.BigramWeight * log(2)}),
		sorted(values(three)), 1e-12)

	// A unigram and a trigram spelt alike are different features.
	require.Len(t, l.Features("err"), 1+3) // unigram err; trigrams ^er, err, rr$
}

func TestLexicalWordsIncludeDigitsAndLetters(t *testing.T) {
	t.Parallel()
	l := embedding.NewLexical()
	require.Equal(t, l.Features("node 18 ERR_2"), l.Features("NODE, 18; err-2"))
	require.Equal(t, l.Features("café über"), l.Features("CAFÉ/ÜBER"))
	require.NotEqual(t, l.Features("e2e"), l.Features("e 2 e"))
}

// IDF scales each feature before the top MaxNonZero are kept and the
// vector is normalised.
func TestLexicalIDFDownWeightsAFeature(t *testing.T) {
	t.Parallel()
	l := embedding.NewLexical()
	features := l.Features(npmOld)
	plain := l.Vector(features, nil)

	var common int32 = -1 // the heaviest feature
	for i, idx := range plain.Indices() {
		if common < 0 || plain.Values()[i] > weightOf(plain, common) {
			common = idx
		}
	}
	weighted := l.Vector(features, func(index int32) float64 {
		if index == common {
			return embedding.IDF(1000, 990)
		}
		return embedding.IDF(1000, 1)
	})
	require.InDelta(t, 1, norm(weighted), 1e-6)
	require.Less(t, weightOf(weighted, common), weightOf(plain, common)/10)

	// An idf of zero drops the feature.
	dropped := l.Vector(features, func(index int32) float64 {
		if index == common {
			return 0
		}
		return 1
	})
	require.Zero(t, weightOf(dropped, common))
	require.Len(t, dropped.Indices(), len(plain.Indices())-1)
}

// Equal weights beyond MaxNonZero keep the lowest indices, always.
func TestLexicalVectorBreaksTiesByIndex(t *testing.T) {
	t.Parallel()
	l := embedding.NewLexical()
	features := make(map[int32]float64)
	for i := range int32(1000) {
		features[999_000-i*7] = 1
	}
	features[1_000_000] = 2 // the heaviest is kept whatever its index
	v := l.Vector(features, nil)
	require.Len(t, v.Indices(), embedding.MaxNonZero)
	require.Contains(t, v.Indices(), int32(1_000_000))
	// The lowest 255 of the tied indices: 999000-999*7 = 992007 upwards.
	for i, idx := range v.Indices()[:embedding.MaxNonZero-1] {
		require.Equal(t, int32(992_007+7*i), idx)
	}
	for range 20 { // map iteration order differs on every run
		require.Equal(t, v.String(), l.Vector(features, nil).String())
	}
}

func TestIDF(t *testing.T) {
	t.Parallel()
	require.InDelta(t, math.Log(1+(100-1+0.5)/(1+0.5)), embedding.IDF(100, 1), 1e-12)
	require.Greater(t, embedding.IDF(100, 1), embedding.IDF(100, 50))
	require.Greater(t, embedding.IDF(100, 50), embedding.IDF(100, 100))
	for _, c := range [][2]int64{{100, 100}, {10, 20}, {0, 0}, {0, 5}, {-1, -1}, {5, -3}} {
		idf := embedding.IDF(c[0], c[1])
		require.False(t, math.IsNaN(idf), "IDF(%d, %d)", c[0], c[1])
		require.GreaterOrEqual(t, idf, 0.0, "IDF(%d, %d)", c[0], c[1])
	}
}

func BenchmarkLexicalEmbed(b *testing.B) {
	l := embedding.NewLexical()
	texts := []string{longText}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Embed(ctx, texts); err != nil {
			b.Fatal(err)
		}
	}
}

func values(m map[int32]float64) []float64 {
	out := make([]float64, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func sorted(s []float64) []float64 {
	out := append([]float64(nil), s...)
	slices.Sort(out)
	return out
}

func weightOf(v pgvector.SparseVector, index int32) float32 {
	for i, idx := range v.Indices() {
		if idx == index {
			return v.Values()[i]
		}
	}
	return 0
}
