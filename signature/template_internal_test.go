package signature

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A word of letters alone is normalised by lower case alone, as Normalise
// would: in every script, and for words Normalise might take for a hex id
// or a placeholder if they held a digit.
func TestLettersOnlyWordsNormaliseAsNormaliseDoes(t *testing.T) {
	t.Parallel()
	for _, w := range []string{"Cannot", "find", "MODULE", "effaced", "deadbeef", "Fehler", "ошибка", "エラー", "Ünïcödé", "fAcAdEd"} {
		require.True(t, lettersOnly(w), w)
		require.Equal(t, Normalise(w), normaliseWord(w), w)
	}
	for _, w := range []string{"", "a1", "0xff", "jq:", "'x'", "a/b", "<n>", "v1.2"} {
		require.False(t, lettersOnly(w), w)
	}
}
