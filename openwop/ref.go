package openwop

import (
	"encoding/base64"
	"regexp"
	"strings"
)

// MemoryRef is what a memoryRef resolves to (RFC 0004 §C): an agent and a
// namespace. The tenant is not part of it: it is always the caller's
// key's (§F).
type MemoryRef struct {
	Agent     string
	Namespace string
}

// DefaultNamespace is the namespace of a memoryRef asked for without one.
const DefaultNamespace = "default"

// refPrefix starts every memoryRef this host issues, after §C's pattern
// mem_<…>.
const refPrefix = "mem_"

// namePattern is what an agent or a namespace may be: short, and free of
// the separator of the scope they make up, so that no two refs share one.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@-]{0,99}$`)

// invalid is a validation_error naming the first field of ref that is not
// a name, or nil.
func (ref MemoryRef) invalid() *Error {
	const rule = "must be 1 to 100 letters, digits and . _ : @ -, starting with a letter or digit"
	if !namePattern.MatchString(ref.Agent) {
		return invalid("agentId", rule)
	}
	if !namePattern.MatchString(ref.Namespace) {
		return invalid("namespace", rule)
	}
	return nil
}

// String is the opaque memoryRef.
func (ref MemoryRef) String() string {
	return refPrefix + base64.RawURLEncoding.EncodeToString([]byte(ref.Agent+"/"+ref.Namespace))
}

// ParseMemoryRef resolves a memoryRef this host issued; any other string
// is not found.
func ParseMemoryRef(s string) (MemoryRef, error) {
	// The ref is never quoted: a caller may have pasted anything there.
	notFound := &Error{Code: CodeNotFound, Message: "the memoryRef is not one this host issued: ask POST /openwop/v1/memory-refs for one"}
	b64, ok := strings.CutPrefix(s, refPrefix)
	if !ok {
		return MemoryRef{}, notFound
	}
	b, err := base64.RawURLEncoding.DecodeString(b64)
	if err != nil {
		return MemoryRef{}, notFound
	}
	agent, ns, ok := strings.Cut(string(b), "/")
	ref := MemoryRef{Agent: agent, Namespace: ns}
	if !ok || ref.invalid() != nil {
		return MemoryRef{}, notFound
	}
	return ref, nil
}

// scope is the engram scope of the ref's entries.
func (ref MemoryRef) scope() string { return "openwop/" + ref.Agent + "/" + ref.Namespace }
