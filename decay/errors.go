package decay

import (
	"strconv"
	"strings"
)

// ConfigError is a decay configuration refused, with the field at fault.
type ConfigError struct {
	// Path is the field's path under the decay section: {"profiles",
	// "semantic", "half_life"}; list indexes are numbers.
	Path    []string
	Message string
	// Line is the line of the YAML document the field is on, from 1; 0
	// when unknown (a field that is missing, or an error of the whole
	// document, whose message has its line).
	Line int
}

func errorAt(msg string, path ...string) *ConfigError { return &ConfigError{Path: path, Message: msg} }

// Error names the field as the configuration file does:
// "decay.profiles.semantic.points[1].age: …".
func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString("decay")
	for _, p := range e.Path {
		if _, err := strconv.Atoi(p); err == nil {
			b.WriteString("[" + p + "]")
			continue
		}
		b.WriteString("." + p)
	}
	return b.String() + ": " + e.Message
}

// Pointer names the field as a JSON pointer relative to the decay
// section: "/profiles/semantic/points/1/age".
func (e *ConfigError) Pointer() string {
	var b strings.Builder
	for _, p := range e.Path {
		b.WriteString("/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(p))
	}
	return b.String()
}
