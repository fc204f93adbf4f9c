package retrieve

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/signature"
)

// TestSignaturesRemembered: the remembered signature is signature.Of's,
// and the memory starts again when full rather than growing.
func TestSignaturesRemembered(t *testing.T) {
	var s signatures
	msg := `ModuleNotFoundError: No module named 'requests' in /srv/app/main.py:12`
	require.Equal(t, signature.Of(msg), s.of(msg))
	require.Equal(t, signature.Of(msg), s.of(msg), "the second time, from memory")
	require.Equal(t, "", s.of(""))
	for i := range maxSignatures + 5 {
		s.of(fmt.Sprintf("error %d: disk full", i))
	}
	require.LessOrEqual(t, len(s.m), maxSignatures)
	require.Equal(t, signature.Of(msg), s.of(msg))
}
