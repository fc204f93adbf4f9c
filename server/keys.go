package server

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/engram-dev/engram/access"
	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// keyName is what a key's name may be (the api_keys table's CHECK).
var keyName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,99}$`)

// tenantName is what a tenant id may be (the tenants table's CHECK).
var tenantName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)

// KeySecretPrefix starts every key the server makes, so that a secret
// scanner can tell one.
const KeySecretPrefix = "engk_"

// createKey serves POST /v1/keys: a key kept in the database, its secret
// shown in the answer, once; only its SHA-256 is stored.
func (s *Server) createKey(w http.ResponseWriter, r *http.Request) error {
	var req api.KeyRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if err := checkKeyRequest(&req); err != nil {
		return err
	}
	secret, err := newKeySecret()
	if err != nil {
		return err
	}
	if req.Tenant != "" {
		if err := store.EnsureTenant(r.Context(), s.db, req.Tenant); err != nil {
			return err
		}
	}
	hash := sha256.Sum256([]byte(secret))
	k, err := store.InsertKey(r.Context(), s.db, store.NewKey{APIKey: store.APIKey{
		Name: req.Name, Tenant: req.Tenant, Role: req.Role, AgentID: req.AgentID, Domains: req.Domains, Clearance: req.Clearance,
	}, Hash: hash[:]})
	if errors.Is(err, store.ErrKeyExists) {
		p := problem(http.StatusConflict, "key-exists", "Conflict", fmt.Sprintf("a key named %q exists; names are never reused, even once revoked", req.Name))
		p.Errors = []FieldError{{Pointer: "/name", Message: "is taken"}}
		return p
	}
	if err != nil {
		return err
	}
	s.logger.InfoContext(r.Context(), "key created", "key", k.Name, "tenant", k.Tenant, "role", k.Role, "by", principalOf(r).name)
	w.Header().Set("Location", "/v1/keys/"+k.Name)
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, api.CreatedKey{APIKey: wireKey(k), Secret: secret})
	return nil
}

// checkKeyRequest refuses a key request field by field, and fills in the
// defaults (clearance hyper).
func checkKeyRequest(req *api.KeyRequest) error {
	var bad []FieldError
	add := func(pointer, msg string) { bad = append(bad, FieldError{Pointer: pointer, Message: msg}) }
	if !keyName.MatchString(req.Name) {
		add("/name", "must be 1-100 of A-Z, a-z, 0-9, '_', '.', ':', '@', '-', starting with a letter or digit")
	}
	role := access.Role(req.Role)
	switch {
	case !role.Valid():
		add("/role", "must be one of executor, verifier, orchestrator, curator, operator")
	case role == access.Operator && req.Tenant != "":
		add("/tenant", "an operator key has no tenant: it works across every tenant")
	case role != access.Operator && !tenantName.MatchString(req.Tenant):
		add("/tenant", "is required: 1-63 of a-z, 0-9, '_', '.', '-', starting with a letter or digit")
	}
	if role == access.Executor && strings.TrimSpace(req.AgentID) == "" {
		add("/agent_id", "is required for an executor: its own session is its agent's records")
	}
	if len(req.AgentID) > 200 {
		add("/agent_id", "must be at most 200 bytes")
	}
	for i, d := range req.Domains {
		if d == "" || len(d) > 100 || strings.ContainsAny(d, " ,") {
			add(fmt.Sprintf("/domains/%d", i), "must be 1-100 bytes without spaces or commas")
		}
	}
	if req.Clearance == "" {
		req.Clearance = memory.Hyper
	} else if !req.Clearance.Valid() {
		add("/clearance", "must be one of public, low, medium, high, hyper")
	}
	if len(bad) == 0 {
		return nil
	}
	p := problem(http.StatusUnprocessableEntity, "validation-failed", "Validation failed", plural(len(bad), "invalid field")+"; see errors")
	p.Errors = bad
	return p
}

// newKeySecret is a new key's secret: 256 random bits.
func newKeySecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make key: %w", err)
	}
	return KeySecretPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// listKeys serves GET /v1/keys: the keys kept in the database, of one
// tenant with ?tenant=; never a secret. Configured keys are the
// configuration's and are not listed.
func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) error {
	keys, err := store.ListKeys(r.Context(), s.db, r.URL.Query().Get("tenant"))
	if err != nil {
		return err
	}
	if keys == nil {
		keys = []store.APIKey{}
	}
	writeJSON(w, http.StatusOK, api.KeyList{Keys: wireAll(keys, wireKey)})
	return nil
}

// revokeKey serves POST /v1/keys/{name}:revoke. Every daemon sharing the
// database refuses the key from the next request on: keys are looked up
// per request, never cached.
func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) error {
	name, op, ok := strings.Cut(r.PathValue("nameop"), ":")
	if !ok || op != "revoke" {
		return problem(http.StatusNotFound, "not-found", "Not found", "revoke a key as /v1/keys/{name}:revoke")
	}
	k, err := store.RevokeKey(r.Context(), s.db, name, s.now())
	if errors.Is(err, store.ErrNotFound) {
		return problem(http.StatusNotFound, "not-found", "Not found", "no key kept in the database has that name")
	}
	if err != nil {
		return err
	}
	s.logger.InfoContext(r.Context(), "key revoked", "key", k.Name, "by", principalOf(r).name)
	writeJSON(w, http.StatusOK, wireKey(k))
	return nil
}

// whoami serves GET /v1/whoami: the caller's key's name, tenant, role and
// agent — its own attributes, nothing about any other key. The OpenWOP
// adapter binds the memoryRefs it issues to the tenant it reads here.
func (s *Server) whoami(w http.ResponseWriter, r *http.Request) error {
	p := principalOf(r)
	writeJSON(w, http.StatusOK, api.Whoami{Key: p.name, Tenant: p.tenant, Role: string(p.role), AgentID: p.agent})
	return nil
}
