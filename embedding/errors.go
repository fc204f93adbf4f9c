package embedding

import (
	"errors"

	"github.com/engram-dev/engram/internal/openaicompat"
)

// ErrBadResponse is an embeddings endpoint's answer that cannot be used: a
// missing, repeated or out-of-range index, or a vector of the wrong
// dimension, not finite, or zero.
var ErrBadResponse = errors.New("bad embeddings response")

// StatusError is an embeddings endpoint's error status. Its message is the
// server's, with the API key removed should the server echo it.
type StatusError = openaicompat.StatusError

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
