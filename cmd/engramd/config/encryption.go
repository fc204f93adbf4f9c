package config

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/seal"
)

// Encryption configures encryption at rest (substrate RFC §15.9; yaml
// encryption.*). With no master key, nothing is sealed and engramd warns at
// start-up; it refuses to start when the database holds data keys it
// cannot unwrap.
type Encryption struct {
	// MasterKeys are the master keys, 32 bytes each in base64 or hex, the
	// first wrapping tenants' data keys and every one unwrapping (rotation:
	// put the new key first, keep the old one until `engram keys
	// rotate-master` has re-wrapped every data key). Also from
	// ENGRAM_MASTER_KEY, comma-separated.
	MasterKeys []string `yaml:"master_keys"`
	// MasterKeyFile names a file of master keys, one a line, the first
	// wrapping; blank lines and lines starting with # are skipped. Used
	// when MasterKeys is empty.
	MasterKeyFile string `yaml:"master_key_file"`
	// MinSensitivity is the least sensitivity sealed: high by default.
	MinSensitivity memory.Sensitivity `yaml:"min_sensitivity"`
}

// splitKeys splits a comma-separated list of keys.
func splitKeys(v string) []string {
	var out []string
	for k := range strings.SplitSeq(v, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}

// Keys parses the configured master keys, from the list or else the file.
// Its errors name the key by its position, never its text.
func (e Encryption) Keys() ([]seal.MasterKey, error) {
	texts, from := e.MasterKeys, "encryption.master_keys"
	if len(texts) == 0 && e.MasterKeyFile != "" {
		b, err := os.ReadFile(e.MasterKeyFile)
		if err != nil {
			return nil, fmt.Errorf("encryption.master_key_file: %w", err)
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				texts = append(texts, line)
			}
		}
		if len(texts) == 0 {
			return nil, errors.New("encryption.master_key_file: the file holds no key")
		}
		from = "encryption.master_key_file"
	}
	keys := make([]seal.MasterKey, 0, len(texts))
	for i, t := range texts {
		k, err := seal.ParseMasterKey(t)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", from, i, err)
		}
		keys = append(keys, k)
	}
	if _, err := seal.NewKeyring(keys); err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	return keys, nil
}

// Validate checks the keys parse and the sensitivity is one.
func (e Encryption) Validate() error {
	if e.MinSensitivity != "" && !e.MinSensitivity.Valid() {
		return fmt.Errorf("encryption.min_sensitivity: %q is not public, low, medium, high or hyper", e.MinSensitivity)
	}
	_, err := e.Keys()
	return err
}
