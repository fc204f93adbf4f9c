package policy_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/policy"
)

// Personal data (an email, a phone, card or IBAN number) makes what it was
// found in PII-bearing; a secret alone does not.
func TestAnyPersonal(t *testing.T) {
	t.Parallel()
	red, err := policy.NewRedactor(nil)
	require.NoError(t, err)
	for text, want := range map[string]bool{
		"mail alice@example.com":                         true,
		"call +44 20 7946 0958":                          true,
		"pay to DE89 3704 0044 0532 0130 00":             true,
		"card 4111 1111 1111 1111":                       true,
		"token ghp_0123456789abcdefghijABCDEFGHIJ012345": false,
		"nothing here":                                   false,
	} {
		_, found := red.String(text)
		require.Equal(t, want, policy.AnyPersonal(found), text)
		labels := make([]string, len(found))
		for i, f := range found {
			labels[i] = f.Label
		}
		require.Equal(t, want, policy.AnyPersonalLabel(labels), text)
		require.Equal(t, text != "nothing here", len(found) > 0, "%s: redaction found something", text)
	}
}
