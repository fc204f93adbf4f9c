package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the size of every key, master and data: AES-256.
const KeySize = 32

// MasterKey is a key that wraps tenants' data keys. Its ID is a digest of
// the key, safe to store and to print; the key itself is never either.
type MasterKey struct {
	ID  string
	key []byte
}

// ParseMasterKey reads a master key from its text: 32 bytes, base64
// (standard or URL alphabet, padded or not) or 64 hex digits. The error
// never repeats the text.
func ParseMasterKey(text string) (MasterKey, error) {
	text = strings.TrimSpace(text)
	var raw []byte
	if b, err := hex.DecodeString(text); err == nil && len(b) == KeySize {
		raw = b
	} else {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if b, err := enc.DecodeString(text); err == nil {
				raw = b
				break
			}
		}
	}
	if raw == nil {
		return MasterKey{}, errors.New("a master key is 32 bytes in base64 or 64 hex digits: this one is neither")
	}
	if len(raw) != KeySize {
		return MasterKey{}, fmt.Errorf("a master key is 32 bytes: this one is %d", len(raw))
	}
	sum := sha256.Sum256(append([]byte("engram master key id\x00"), raw...))
	return MasterKey{ID: "mk-" + hex.EncodeToString(sum[:6]), key: raw}, nil
}

// NewMasterKey returns a fresh random master key in base64, for
// configuration (`engram keys new-master` prints one).
func NewMasterKey() string {
	b := make([]byte, KeySize)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return base64.StdEncoding.EncodeToString(b)
}

// Keyring is the daemon's master keys: the first wraps new and re-wrapped
// data keys, every one unwraps (so a retired master key stays configured
// until `engram keys rotate-master` has re-wrapped everything under the
// new one), as the provenance signing keys rotate.
type Keyring struct {
	keys []MasterKey
}

// NewKeyring returns a keyring of keys, the first the current one. Two
// copies of one key are refused: a list that names a key twice is a
// mistake the operator should see.
func NewKeyring(keys []MasterKey) (*Keyring, error) {
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k.ID] {
			return nil, fmt.Errorf("master key %s is configured twice", k.ID)
		}
		seen[k.ID] = true
	}
	return &Keyring{keys: keys}, nil
}

// Empty reports whether the keyring has no key: encryption is off.
func (k *Keyring) Empty() bool { return k == nil || len(k.keys) == 0 }

// Current is the ID of the master key that wraps.
func (k *Keyring) Current() string {
	if k.Empty() {
		return ""
	}
	return k.keys[0].ID
}

// Has reports whether the master key id is configured.
func (k *Keyring) Has(id string) bool {
	_, ok := k.find(id)
	return ok
}

func (k *Keyring) find(id string) (MasterKey, bool) {
	if k == nil {
		return MasterKey{}, false
	}
	for _, m := range k.keys {
		if m.ID == id {
			return m, true
		}
	}
	return MasterKey{}, false
}

// wrapAAD binds a wrapped data key to its tenant and version: a wrapped
// key copied to another row does not unwrap.
func wrapAAD(tenant string, version int) []byte {
	return fmt.Appendf(nil, "engram data key\x00%s\x00%d", tenant, version)
}

// Wrap seals a data key under the current master key; it returns the
// master key's id and the wrapped key.
func (k *Keyring) Wrap(tenant string, version int, dataKey []byte) (string, []byte, error) {
	if k.Empty() {
		return "", nil, ErrNoMasterKey
	}
	m := k.keys[0]
	out, err := encrypt(m.key, dataKey, wrapAAD(tenant, version))
	if err != nil {
		return "", nil, err
	}
	return m.ID, out, nil
}

// Unwrap opens a data key wrapped by master key id.
func (k *Keyring) Unwrap(masterID, tenant string, version int, wrapped []byte) ([]byte, error) {
	m, ok := k.find(masterID)
	if !ok {
		return nil, &MissingMasterKeyError{ID: masterID}
	}
	key, err := decrypt(m.key, wrapped, wrapAAD(tenant, version))
	if err != nil {
		return nil, fmt.Errorf("unwrap data key %d of tenant %q with master key %s: %w", version, tenant, masterID, ErrAuthentication)
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("data key %d of tenant %q: %d bytes, not %d", version, tenant, len(key), KeySize)
	}
	return key, nil
}

// encrypt seals plain with AES-256-GCM under key: nonce || ciphertext+tag.
func encrypt(key, plain, aad []byte) ([]byte, error) {
	gcm, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, gcm.NonceSize(), gcm.NonceSize()+len(plain)+gcm.Overhead())
	_, _ = rand.Read(nonce)
	return gcm.Seal(nonce, nonce, plain, aad), nil
}

// decrypt opens what encrypt sealed.
func decrypt(key, sealed, aad []byte) ([]byte, error) {
	gcm, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	if len(sealed) < gcm.NonceSize()+gcm.Overhead() {
		return nil, ErrAuthentication
	}
	plain, err := gcm.Open(nil, sealed[:gcm.NonceSize()], sealed[gcm.NonceSize():], aad)
	if err != nil {
		return nil, ErrAuthentication
	}
	return plain, nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("aes: %w", err)
	}
	return cipher.NewGCM(block)
}
