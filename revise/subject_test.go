package revise_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/schemas"
)

// A subject's identifiers are normalised — emails and names in lower case,
// a name's spaces single, phone numbers as digits — so two spellings of one
// subject hash alike.
func TestSubjectNormalises(t *testing.T) {
	t.Parallel()
	a, err := revise.NewSubject(api.ErasureRequest{Emails: []string{" Jane.Roe@Example.COM "}, Names: []string{"Jane   Roe"},
		UserIDs: []string{"U-1"}, PhoneNumbers: []string{"+1 (555) 123-4567"}})
	require.NoError(t, err)
	require.Equal(t, []string{"jane.roe@example.com"}, a.Emails)
	require.Equal(t, []string{"jane roe"}, a.Names)
	require.Equal(t, []string{"u-1"}, a.UserIDs)
	require.Equal(t, []string{"15551234567"}, a.Phones)
	b, err := revise.NewSubject(api.ErasureRequest{PhoneNumbers: []string{"15551234567"}, UserIDs: []string{"u-1"},
		Names: []string{"jane roe", "JANE ROE"}, Emails: []string{"jane.roe@example.com"}})
	require.NoError(t, err)
	require.Equal(t, a.SHA256(), b.SHA256())
	require.Equal(t, map[string]int{"email": 1, "name": 1, "user_id": 1, "phone": 1}, b.Counts())
	c, err := revise.NewSubject(api.ErasureRequest{Emails: []string{"jane.roe@example.com"}})
	require.NoError(t, err)
	require.NotEqual(t, a.SHA256(), c.SHA256())
}

// Malformed identifiers are named by pointer, never quoted.
func TestSubjectRefusesMalformed(t *testing.T) {
	t.Parallel()
	_, err := revise.NewSubject(api.ErasureRequest{})
	var ve *schemas.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "", ve.Violations[0].Pointer)
	_, err = revise.NewSubject(api.ErasureRequest{Emails: []string{"a@b", "x y@example.com", "@example.com"},
		UserIDs: []string{"ab"}, Names: []string{"123"}, PhoneNumbers: []string{"555-12", "555 123 4567 ext"}})
	require.ErrorAs(t, err, &ve)
	var pointers []string
	for _, v := range ve.Violations {
		pointers = append(pointers, v.Pointer)
		require.NotContains(t, v.Message, "example.com")
	}
	require.Equal(t, []string{"/emails/0", "/emails/1", "/emails/2", "/user_ids/0", "/names/0", "/phone_numbers/0", "/phone_numbers/1"}, pointers)
}

// Matching finds an identifier standing as a whole, whatever its case and
// spacing, and not inside a longer word, address or id.
func TestSubjectMentionedIn(t *testing.T) {
	t.Parallel()
	s, err := revise.NewSubject(api.ErasureRequest{Emails: []string{"jane.roe@example.com"}, Names: []string{"Jane Roe"},
		UserIDs: []string{"u-1"}, PhoneNumbers: []string{"+1 555 123 4567"}})
	require.NoError(t, err)
	for text, want := range map[string]bool{
		"mail JANE.ROE@EXAMPLE.COM today": true,
		"<jane.roe@example.com>.":         true,
		"xjane.roe@example.com":           false,
		"jane.roe@example.com.au":         false,
		"jane.roe@example.community":      false,
		"Hi, I am jane\n  roe":            true,
		"Jane Roederer":                   false,
		"Mary-Jane Roe":                   true, // a hyphen separates words
		"user:u-1":                        true,
		"session-u-1":                     true,
		"u-10":                            false,
		"menu-1":                          false,
		"call (555) 123-4567":             true,
		"+1-555-123-4567":                 true,
		"0015551234567":                   true,
		"order 123-4567":                  false,
		"555 1234 567 8":                  false,
		"nothing here":                    false,
	} {
		require.Equal(t, want, s.MentionedIn(text), text)
	}
	require.True(t, s.MentionedInJSON([]byte(`{"a": [1, {"customer": "JANE  ROE"}]}`)))
	require.True(t, s.MentionedInJSON([]byte(`{"tel": 5551234567}`)))
	require.True(t, s.MentionedInJSON([]byte(`{"u-1": true}`)), "keys count")
	require.False(t, s.MentionedInJSON([]byte(`{"a": "Jane", "b": "Roe"}`)))
	require.True(t, s.MentionedInJSON([]byte(`not json but jane roe`)))
}
