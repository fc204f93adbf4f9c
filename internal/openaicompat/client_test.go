package openaicompat_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/openaicompat"
	"github.com/engram-dev/engram/internal/openaitest"
)

const key = "sk-compat-test-0123456789"

// An answer of exactly MaxResponseBytes is read; one byte more is
// ErrResponseTooLarge.
func TestMaxResponseBytes(t *testing.T) {
	t.Parallel()
	reply := openaitest.Completion("m", `{"facts": []}`, "")
	srv := openaitest.NewServer(t, func(openaitest.Request) openaitest.Reply { return reply })
	req := openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}}
	for _, tc := range []struct {
		limit int64
		want  error
	}{{int64(len(reply.Body)), nil}, {int64(len(reply.Body)) - 1, openaicompat.ErrResponseTooLarge}} {
		c := openaicompat.New(openaicompat.Config{BaseURL: srv.URL, APIKey: key, MaxResponseBytes: tc.limit})
		res, err := c.API.CreateChatCompletion(context.Background(), req)
		err = c.Sanitize(err)
		if tc.want == nil {
			require.NoError(t, err, "limit %d", tc.limit)
			require.Equal(t, `{"facts": []}`, res.Choices[0].Message.Content)
			continue
		}
		require.ErrorIs(t, err, tc.want, "limit %d", tc.limit)
	}
}

// Sanitize keeps context errors for errors.Is and takes the key out of any
// other error's text.
func TestSanitize(t *testing.T) {
	t.Parallel()
	c := openaicompat.New(openaicompat.Config{APIKey: key})
	require.NoError(t, c.Sanitize(nil))
	err := c.Sanitize(fmt.Errorf("post: %w", context.DeadlineExceeded))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	err = c.Sanitize(errors.New("dial tcp: bad header Bearer " + key))
	require.EqualError(t, err, "dial tcp: bad header Bearer [redacted]")
	err = c.Sanitize(&openai.APIError{HTTPStatusCode: 401, Message: "bad key " + key})
	var se *openaicompat.StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "status 401: bad key [redacted]", err.Error())
}

func TestCheckBaseURL(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]string{
		"": "", "http://localhost:11434/v1": "", "https://api.openai.com/v1": "",
		"http://[::1": "is not a URL", "/v1": "must be an absolute http or https URL", "ftp://x/v1": "must be an absolute http or https URL",
	} {
		require.Equal(t, want, openaicompat.CheckBaseURL(url), url)
	}
}
