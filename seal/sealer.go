// Package seal is engram's encryption at rest (substrate RFC §15.9): the
// master keys the daemon holds, each tenant's data keys wrapped by them,
// and sealing and opening values with AES-256-GCM. It holds no SQL: the
// data-key table's statements are in package store, and the write path
// (package revise) decides what to seal and rewrites sealed values.
//
// A sealed value is a JSON object with a member "sealed":
//
//	{"sealed": {"key": 3, "data": "<base64 of nonce || ciphertext+tag>"}}
//
// where key is the version of the tenant's data key that sealed it. The
// additional data of every seal is the tenant id, so a value copied into
// another tenant's row does not open. A record's payload keeps, beside the
// sealed member, the metadata the database needs in the clear: its kind
// and, for a semantic fact, its identity (subject, predicate, validity),
// which the one-active-fact index holds unique (§7).
//
// Failure cases: a sealed value met with no master key configured is
// [ErrNoMasterKey]; a data key wrapped by a master key the daemon was not
// given is [*MissingMasterKeyError] (naming the key's id, never the key);
// a value that does not authenticate is [ErrAuthentication]. No error
// carries a key or plaintext.
package seal

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// Defaults.
const (
	// DefaultMinSensitivity is the least sensitivity sealed.
	DefaultMinSensitivity = memory.High
	// DefaultCurrentTTL is how long a daemon trusts its view of a tenant's
	// current data key before it reads the table again: after
	// `engram keys rotate-data` another daemon seals under the new key
	// within this time. A value sealed meanwhile under the old key stays
	// readable (retired keys are kept) and the next rotation re-seals it.
	DefaultCurrentTTL = 10 * time.Second
)

// Config configures a [Sealer].
type Config struct {
	// DB holds the data-key table (a pool: data keys are read and made
	// outside the caller's transaction, so a rolled-back write never
	// loses a key another daemon already used).
	DB pg.DBTX
	// Keys are the master keys, the current one first; none disables
	// sealing (and opening: a sealed value is then an error).
	Keys []MasterKey
	// MinSensitivity is the least sensitivity whose payloads are sealed;
	// [DefaultMinSensitivity] when empty.
	MinSensitivity memory.Sensitivity
	// CurrentTTL; [DefaultCurrentTTL] when zero.
	CurrentTTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Sealer seals and opens tenants' values. A nil *Sealer seals nothing
// and opens only values that are not sealed.
type Sealer struct {
	cfg  Config
	ring *Keyring

	mu      sync.Mutex
	tenants map[string]*tenantKeys
}

// tenantKeys is what a sealer knows of a tenant's data keys.
type tenantKeys struct {
	current int
	readAt  time.Time
	keys    map[int][]byte
}

// New returns a sealer for cfg.
func New(cfg Config) (*Sealer, error) {
	if cfg.MinSensitivity == "" {
		cfg.MinSensitivity = DefaultMinSensitivity
	}
	if !cfg.MinSensitivity.Valid() {
		return nil, fmt.Errorf("min sensitivity %q is not public, low, medium, high or hyper", cfg.MinSensitivity)
	}
	if cfg.CurrentTTL <= 0 {
		cfg.CurrentTTL = DefaultCurrentTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	ring, err := NewKeyring(cfg.Keys)
	if err != nil {
		return nil, err
	}
	return &Sealer{cfg: cfg, ring: ring, tenants: map[string]*tenantKeys{}}, nil
}

// Enabled reports whether the sealer seals: a master key is configured.
func (s *Sealer) Enabled() bool { return s != nil && !s.ring.Empty() }

// Applies reports whether a value of sensitivity is sealed.
func (s *Sealer) Applies(sens memory.Sensitivity) bool {
	return s.Enabled() && sens.Rank() >= s.cfg.MinSensitivity.Rank()
}

// MinSensitivity is the least sensitivity sealed.
func (s *Sealer) MinSensitivity() memory.Sensitivity { return s.cfg.MinSensitivity }

// Check verifies at start-up that every master key wrapping a data key in
// the database is configured and opens it: a daemon with the wrong or a
// missing master key refuses to start rather than fail on the first
// sealed read. Its errors name master keys by id only.
func (s *Sealer) Check(ctx context.Context) error {
	if s == nil {
		return nil
	}
	use, err := store.MasterKeyUse(ctx, s.cfg.DB)
	if err != nil {
		return err
	}
	if len(use) > 0 && !s.Enabled() {
		return fmt.Errorf("%w, but the database holds data keys wrapped by master key %s", ErrNoMasterKey, use[0].MasterKeyID)
	}
	for _, k := range use {
		if _, err := s.ring.Unwrap(k.MasterKeyID, k.Tenant, k.Version, k.Wrapped); err != nil {
			return err
		}
	}
	return nil
}

// envelope is the "sealed" member of a sealed value.
type envelope struct {
	Key  int    `json:"key"`
	Data []byte `json:"data"`
}

// Seal seals plain under the tenant's current data key, made if the
// tenant has none, and returns the sealed value {"sealed": …}.
func (s *Sealer) Seal(ctx context.Context, tenant string, plain []byte) (json.RawMessage, error) {
	env, err := s.seal(ctx, tenant, plain)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]envelope{"sealed": env})
}

func (s *Sealer) seal(ctx context.Context, tenant string, plain []byte) (envelope, error) {
	if !s.Enabled() {
		return envelope{}, ErrNoMasterKey
	}
	version, key, err := s.currentKey(ctx, tenant)
	if err != nil {
		return envelope{}, err
	}
	data, err := encrypt(key, plain, []byte(tenant))
	if err != nil {
		return envelope{}, err
	}
	return envelope{Key: version, Data: data}, nil
}

// Open returns the plaintext of a value Seal sealed for tenant. A value
// that is not sealed is returned as it is.
func (s *Sealer) Open(ctx context.Context, tenant string, value []byte) ([]byte, error) {
	env, ok, err := sealedMember(value)
	if err != nil || !ok {
		return value, err
	}
	return s.open(ctx, tenant, env)
}

func (s *Sealer) open(ctx context.Context, tenant string, env envelope) ([]byte, error) {
	if !s.Enabled() {
		return nil, ErrNoMasterKey
	}
	key, err := s.dataKey(ctx, tenant, env.Key)
	if err != nil {
		return nil, err
	}
	plain, err := decrypt(key, env.Data, []byte(tenant))
	if err != nil {
		return nil, fmt.Errorf("open value of tenant %q sealed under data key %d: %w", tenant, env.Key, err)
	}
	return plain, nil
}

// IsSealed reports whether value is a sealed value (or a sealed payload).
func IsSealed(value []byte) bool {
	_, ok, _ := sealedMember(value)
	return ok
}

// sealedMember decodes the "sealed" member of value, if it has one.
func sealedMember(value []byte) (envelope, bool, error) {
	if len(value) == 0 || value[0] != '{' {
		return envelope{}, false, nil
	}
	var doc struct {
		Sealed *envelope `json:"sealed"`
	}
	if err := json.Unmarshal(value, &doc); err != nil || doc.Sealed == nil {
		return envelope{}, false, nil
	}
	if len(doc.Sealed.Data) == 0 || doc.Sealed.Key < 1 {
		return envelope{}, false, errors.New("malformed sealed value")
	}
	return *doc.Sealed, true, nil
}

// currentKey returns the tenant's current data key, making version 1 when
// the tenant has none.
func (s *Sealer) currentKey(ctx context.Context, tenant string) (int, []byte, error) {
	s.mu.Lock()
	tk := s.tenants[tenant]
	if tk != nil && tk.current > 0 && s.cfg.Now().Sub(tk.readAt) < s.cfg.CurrentTTL {
		v, k := tk.current, tk.keys[tk.current]
		s.mu.Unlock()
		return v, k, nil
	}
	s.mu.Unlock()
	tk, err := s.load(ctx, tenant)
	if err != nil {
		return 0, nil, err
	}
	if tk.current == 0 {
		if _, err := s.NewDataKey(ctx, tenant, 1); err != nil {
			return 0, nil, err
		}
		if tk, err = s.load(ctx, tenant); err != nil {
			return 0, nil, err
		}
	}
	return tk.current, tk.keys[tk.current], nil
}

// dataKey returns version of the tenant's data key.
func (s *Sealer) dataKey(ctx context.Context, tenant string, version int) ([]byte, error) {
	s.mu.Lock()
	tk := s.tenants[tenant]
	if tk != nil {
		if k, ok := tk.keys[version]; ok {
			s.mu.Unlock()
			return k, nil
		}
	}
	s.mu.Unlock()
	tk, err := s.load(ctx, tenant)
	if err != nil {
		return nil, err
	}
	k, ok := tk.keys[version]
	if !ok {
		return nil, fmt.Errorf("tenant %q has no data key %d", tenant, version)
	}
	return k, nil
}

// load reads and unwraps a tenant's data keys.
func (s *Sealer) load(ctx context.Context, tenant string) (*tenantKeys, error) {
	rows, err := store.DataKeys(ctx, s.cfg.DB, tenant)
	if err != nil {
		return nil, err
	}
	tk := &tenantKeys{readAt: s.cfg.Now(), keys: make(map[int][]byte, len(rows))}
	for _, r := range rows {
		k, err := s.ring.Unwrap(r.MasterKeyID, r.Tenant, r.Version, r.Wrapped)
		if err != nil {
			return nil, err
		}
		tk.keys[r.Version] = k
		tk.current = max(tk.current, r.Version)
	}
	s.mu.Lock()
	s.tenants[tenant] = tk
	s.mu.Unlock()
	return tk, nil
}

// NewDataKey makes version of the tenant's data key, wrapped by the
// current master key; false when that version exists already.
func (s *Sealer) NewDataKey(ctx context.Context, tenant string, version int) (bool, error) {
	key := make([]byte, KeySize)
	_, _ = rand.Read(key)
	id, wrapped, err := s.ring.Wrap(tenant, version, key)
	if err != nil {
		return false, err
	}
	made, err := store.InsertDataKey(ctx, s.cfg.DB, store.DataKey{Tenant: tenant, Version: version, MasterKeyID: id, Wrapped: wrapped})
	if err != nil {
		return false, err
	}
	s.forget(tenant)
	return made, nil
}

// forget drops what the sealer knows of a tenant's keys.
func (s *Sealer) forget(tenant string) {
	s.mu.Lock()
	delete(s.tenants, tenant)
	s.mu.Unlock()
}

// DataKeyVersions returns the tenant's current data key version (0 when it
// has none) and whether an older version is not yet retired: a data-key
// rotation is under way.
func (s *Sealer) DataKeyVersions(ctx context.Context, tenant string) (current int, rotating bool, err error) {
	rows, err := store.DataKeys(ctx, s.cfg.DB, tenant)
	if err != nil {
		return 0, false, err
	}
	for _, r := range rows {
		current = max(current, r.Version)
	}
	for _, r := range rows {
		if r.Version < current && !r.Retired {
			rotating = true
		}
	}
	return current, rotating, nil
}

// RetireOlder marks the tenant's data keys older than version retired and
// makes the sealer read the tenant's keys again.
func (s *Sealer) RetireOlder(ctx context.Context, tenant string, version int) error {
	defer s.forget(tenant)
	return store.RetireDataKeys(ctx, s.cfg.DB, tenant, version)
}

// RewrapBatch re-wraps up to limit data keys, of any tenant, that the
// current master key does not wrap, under it, without touching what they
// sealed; it returns how many it re-wrapped and how many it found.
func (s *Sealer) RewrapBatch(ctx context.Context, limit int) (rewrapped, found int, err error) {
	if !s.Enabled() {
		return 0, 0, ErrNoMasterKey
	}
	rows, err := store.DataKeysNotWrappedBy(ctx, s.cfg.DB, s.ring.Current(), limit)
	if err != nil {
		return 0, 0, err
	}
	for _, r := range rows {
		key, err := s.ring.Unwrap(r.MasterKeyID, r.Tenant, r.Version, r.Wrapped)
		if err != nil {
			return rewrapped, len(rows), err
		}
		from := r.MasterKeyID
		if r.MasterKeyID, r.Wrapped, err = s.ring.Wrap(r.Tenant, r.Version, key); err != nil {
			return rewrapped, len(rows), err
		}
		ok, err := store.RewrapDataKey(ctx, s.cfg.DB, r, from)
		if err != nil {
			return rewrapped, len(rows), err
		}
		if ok {
			rewrapped++
		}
	}
	return rewrapped, len(rows), nil
}

// CurrentMasterKey is the id of the master key that wraps.
func (s *Sealer) CurrentMasterKey() string {
	if s == nil {
		return ""
	}
	return s.ring.Current()
}
