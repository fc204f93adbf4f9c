package openwop

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"regexp"
	"strings"
)

// MemoryRef is what a memoryRef resolves to (RFC 0004 §C): an agent and a
// namespace of the tenant the ref was issued to. The tenant is never read
// from the ref: it is always the caller's key's (§F), and a ref issued to
// another tenant does not resolve.
type MemoryRef struct {
	Agent     string
	Namespace string
}

// DefaultNamespace is the namespace of a memoryRef asked for without one.
const DefaultNamespace = "default"

// refPrefix starts every memoryRef this host issues, after §C's pattern
// mem_<…>.
const refPrefix = "mem_"

// refMACBytes is the length of a memoryRef's signature: 128 bits of
// HMAC-SHA256.
const refMACBytes = 16

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

// scope is the engram scope of the ref's entries.
func (ref MemoryRef) scope() string { return "openwop/" + ref.Agent + "/" + ref.Namespace }

// RefSigner issues the memoryRefs of this host and resolves them: a ref is
// mem_<base64url of agent/namespace>.<base64url of its signature>, the
// signature an HMAC-SHA256 of the tenant, the agent and the namespace. So a
// ref is accepted only if this host issued it (§C: host-issued; clients
// keep it opaque), and only with a key of the tenant it was issued to
// (§F). Nothing is stored: any daemon holding the same secrets resolves
// it.
type RefSigner struct {
	// keys are the HMAC keys derived from the secrets; the first signs,
	// every one verifies.
	keys [][]byte
}

// NewRefSigner returns a signer over secrets: the first signs new refs,
// and each of them resolves refs (so a secret can rotate: put the new one
// first, keep the old one while its refs are in use). With none, it signs
// with a random secret of its own, whose refs no other signer resolves.
func NewRefSigner(secrets ...string) *RefSigner {
	if len(secrets) == 0 {
		var b [32]byte
		_, _ = rand.Read(b[:])
		secrets = []string{string(b[:])}
	}
	s := &RefSigner{}
	for _, secret := range secrets {
		// A key of its own for memoryRefs, so that a ref's signature is no
		// signature of anything else the same secret signs (provenance
		// stamps).
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte("engram openwop memoryRef v1"))
		s.keys = append(s.keys, m.Sum(nil))
	}
	return s
}

func (s *RefSigner) mac(key []byte, tenant string, ref MemoryRef) []byte {
	m := hmac.New(sha256.New, key)
	// NUL never occurs in a tenant, an agent or a namespace: the three
	// cannot run into one another.
	m.Write([]byte(tenant + "\x00" + ref.Agent + "\x00" + ref.Namespace))
	return m.Sum(nil)[:refMACBytes]
}

// Issue is the memoryRef of ref for tenant.
func (s *RefSigner) Issue(tenant string, ref MemoryRef) string {
	enc := base64.RawURLEncoding
	return refPrefix + enc.EncodeToString([]byte(ref.Agent+"/"+ref.Namespace)) + "." + enc.EncodeToString(s.mac(s.keys[0], tenant, ref))
}

// Resolve is the agent and namespace of a memoryRef this host issued to
// tenant; any other string — not issued here, issued to another tenant,
// altered — is not_found (RFC 0004 §C, §F), and the message never quotes
// it.
func (s *RefSigner) Resolve(tenant, memoryRef string) (MemoryRef, error) {
	notFound := &Error{Code: CodeNotFound, Message: "the memoryRef is not one this host issued to this tenant: ask POST /openwop/v1/memory-refs for one"}
	enc := base64.RawURLEncoding
	body, ok := strings.CutPrefix(memoryRef, refPrefix)
	if !ok {
		return MemoryRef{}, notFound
	}
	name, sig, ok := strings.Cut(body, ".")
	if !ok {
		return MemoryRef{}, notFound
	}
	b, err := enc.DecodeString(name)
	if err != nil {
		return MemoryRef{}, notFound
	}
	got, err := enc.DecodeString(sig)
	if err != nil || len(got) != refMACBytes || enc.EncodeToString(got) != sig {
		return MemoryRef{}, notFound
	}
	agent, ns, ok := strings.Cut(string(b), "/")
	ref := MemoryRef{Agent: agent, Namespace: ns}
	if !ok || ref.invalid() != nil || enc.EncodeToString(b) != name {
		return MemoryRef{}, notFound
	}
	for _, k := range s.keys {
		if hmac.Equal(got, s.mac(k, tenant, ref)) {
			return ref, nil
		}
	}
	return MemoryRef{}, notFound
}
