package seal

import (
	"errors"
	"fmt"
)

// ErrNoMasterKey is a sealed value met, or a data key needed, with no
// master key configured.
var ErrNoMasterKey = errors.New("encryption at rest: no master key is configured (encryption.master_keys, encryption.master_key_file or ENGRAM_MASTER_KEY)")

// ErrAuthentication is a ciphertext that does not open under its key: the
// wrong key, or a value altered in the database.
var ErrAuthentication = errors.New("ciphertext does not authenticate: wrong key or altered data")

// MissingMasterKeyError is a data key wrapped by a master key the daemon
// was not given. It names the key by its id (a digest), never the key.
type MissingMasterKeyError struct {
	ID string
}

func (e *MissingMasterKeyError) Error() string {
	return fmt.Sprintf("encryption at rest: data keys are wrapped by master key %s, which is not configured (add it after the current key in encryption.master_keys until `engram keys rotate-master` has re-wrapped them)", e.ID)
}
