package extract

import (
	"errors"

	"github.com/engram-dev/engram/internal/openaicompat"
)

// ErrBadResponse is a model's answer that cannot be used: not exactly one
// JSON value of the expected shape, cut off, refused, or over its bounds.
var ErrBadResponse = errors.New("bad model response")

// StatusError is the endpoint's error status. Its message is the server's,
// with the API key removed should the server echo it.
type StatusError = openaicompat.StatusError

// ConfigError is a [Config] refused, with the field at fault.
type ConfigError struct {
	// Field is the field as the configuration file names it: "base_url".
	Field   string
	Message string
}

// Error names the field as the configuration file does:
// "consolidate.model.timeout: must not be negative".
func (e *ConfigError) Error() string {
	return "consolidate.model." + e.Field + ": " + e.Message
}
