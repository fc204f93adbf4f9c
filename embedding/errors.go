package embedding

import (
	"errors"
	"fmt"
)

// ErrBadResponse is an embeddings endpoint's answer that cannot be used: a
// missing, repeated or out-of-range index, or a vector of the wrong
// dimension, not finite, or zero.
var ErrBadResponse = errors.New("bad embeddings response")

// StatusError is an embeddings endpoint's error status. Its message is the
// server's, with the API key removed should the server echo it.
type StatusError struct {
	// StatusCode is the HTTP status, 401 for a bad key, 429 when rate
	// limited, 5xx when the server failed.
	StatusCode int
	// Type is the OpenAI error type ("invalid_request_error"), if any.
	Type string
	// Message is the server's explanation, possibly truncated.
	Message string
}

// Error returns "status 401: Incorrect API key provided".
func (e *StatusError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("status %d", e.StatusCode)
	}
	return fmt.Sprintf("status %d: %s", e.StatusCode, e.Message)
}

// ConfigError is an [OpenAIConfig] refused, with the field at fault.
type ConfigError struct {
	// Field is the field as the configuration file names it: "base_url".
	Field   string
	Message string
}

// Error names the field as the configuration file does:
// "embedding.openai.model: is required".
func (e *ConfigError) Error() string {
	return "embedding.openai." + e.Field + ": " + e.Message
}
