package policy_test

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/schemas"
)

// fuzzLiteral is the operator literal the fuzzed redactors know.
const fuzzLiteral = "hunter2-internal"

// planted are values the redactor must find wherever they stand alone:
// provider keys, tokens, a private key, an operator literal, personal data.
var planted = []string{
	openAIKey, openAILegacy, anthropicKey, awsKeyID, awsSTSKeyID, githubPAT, githubFine, gitlabPAT,
	slackBot, stripeLive, stripeTest, googleKey, jwt, pemKey, fuzzLiteral,
	"jane.doe@example.com", "4111 1111 1111 1111", "DE89370400440532013000", "+1 (415) 555-2671",
}

// FuzzRedactString plants a secret on a line of its own between any two
// texts. The output never holds it, redacting the output again changes and
// finds nothing, and valid UTF-8 stays valid UTF-8. (On one line, digits
// around a phone or card number make a longer number, which is by design
// not one: see TestNearMisses.)
func FuzzRedactString(f *testing.F) {
	f.Add("", "", uint8(0))
	f.Add("Authorization: Bearer", "rotated", uint8(12))
	f.Add("password=", "&next=1", uint8(14))
	f.Add("[REDACTED:x", "]", uint8(3))
	f.Add("-----BEGIN RSA PRIVATE KEY-----\n", "", uint8(6))
	f.Add("postgres://app:", "@db/x", uint8(15))
	f.Add("card 4111", "1111", uint8(16))
	f.Add("\xff\xfe", "é", uint8(1))
	r := newRedactor(f, fuzzLiteral)
	f.Fuzz(func(t *testing.T, before, after string, which uint8) {
		secret := planted[int(which)%len(planted)]
		in := before + "\n" + secret + "\n" + after
		out, fs := r.String(in)
		require.NotContains(t, out, secret)
		require.NotEmpty(t, fs, "found nothing in %q", in)
		again, fs2 := r.String(out)
		require.Equal(t, out, again, "not idempotent on %q", in)
		require.Empty(t, fs2)
		if utf8.ValidString(in) {
			require.True(t, utf8.ValidString(out), "%q", out)
		}
	})
}

// FuzzRedactValue redacts a decoded JSON document with secrets planted in
// it. No string of the result holds a planted secret, the result encodes
// as valid JSON (and UTF-8), and redacting it again finds nothing.
func FuzzRedactValue(f *testing.F) {
	f.Add([]byte(`{"kind": "observation", "text": "hi", "tags": ["a"], "environment": {"os": "linux", "n": 1}}`), uint8(0))
	f.Add([]byte(`{"tool": {"name": "env", "arguments": ["--password", "x"], "result": {"OPENAI_API_KEY": "k"}}}`), uint8(4))
	f.Add([]byte(`["Bearer", null, true, 1.5e3, {"": [[]]}]`), uint8(13))
	f.Add([]byte(`"plain"`), uint8(16))
	f.Add([]byte(`not json`), uint8(2))
	r := newRedactor(f, fuzzLiteral)
	f.Fuzz(func(t *testing.T, doc []byte, which uint8) {
		secret := planted[int(which)%len(planted)]
		decode := func() any {
			var v any
			if err := schemas.Decode(doc, &v); err != nil {
				return string(doc)
			}
			return v
		}
		in := map[string]any{
			"doc":     decode(),
			"planted": secret,
			"list":    []any{"x " + secret, decode(), []any{secret}},
			"nested":  map[string]any{"value": map[string]any{"deeper": secret + " y"}},
		}
		out, fs := r.Value(in)
		require.NotEmpty(t, fs)
		forStrings(out, func(s string) {
			require.NotContains(t, s, secret)
		})
		b, err := json.Marshal(out)
		require.NoError(t, err)
		require.True(t, json.Valid(b))
		if utf8.Valid(doc) {
			require.True(t, utf8.Valid(b))
		}
		again, fs2 := r.Value(out)
		require.Empty(t, fs2, "found again in %s", b)
		b2, err := json.Marshal(again)
		require.NoError(t, err)
		require.Equal(t, string(b), string(b2))
	})
}

// forStrings calls fn for every string value in v (not keys: those are
// left as they are).
func forStrings(v any, fn func(string)) {
	switch c := v.(type) {
	case string:
		fn(c)
	case map[string]any:
		for _, e := range c {
			forStrings(e, fn)
		}
	case []any:
		for _, e := range c {
			forStrings(e, fn)
		}
	case []string:
		for _, e := range c {
			fn(e)
		}
	case map[string]string:
		for _, e := range c {
			fn(e)
		}
	}
}
