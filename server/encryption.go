package server

import (
	"cmp"
	"errors"
	"net/http"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/seal"
)

// Data-key rotation steps' bounds.
const (
	defaultRotateBatch = 500
	maxRotateBatch     = 10000
)

var errEncryptionOff = problem(http.StatusConflict, "encryption-off", "Encryption at rest is off",
	"this daemon has no master key: set encryption.master_keys, encryption.master_key_file or ENGRAM_MASTER_KEY")

// encryptionStatus serves GET /v1/encryption to operator keys.
func (s *Server) encryptionStatus(w http.ResponseWriter, r *http.Request) error {
	sl := s.writer.Sealer()
	out := api.EncryptionStatus{Enabled: sl.Enabled()}
	if out.Enabled {
		out.MinSensitivity, out.MasterKey = string(sl.MinSensitivity()), sl.CurrentMasterKey()
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// rotateMaster serves POST /v1/encryption:rotate-master to operator keys:
// every tenant's data keys re-wrapped under the daemon's current master
// key. Keys never travel over the API: the daemon holds the master keys.
func (s *Server) rotateMaster(w http.ResponseWriter, r *http.Request) error {
	sl := s.writer.Sealer()
	if !sl.Enabled() {
		return errEncryptionOff
	}
	n, err := s.writer.RotateMasterKey(r.Context(), defaultRotateBatch)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.RotateMasterResult{MasterKey: sl.CurrentMasterKey(), Rewrapped: n})
	return nil
}

// rotateData serves POST /v1/encryption:rotate-data to operator keys: one
// bounded step of re-sealing a tenant's values under a new data key. The
// CLI calls it until done; a rotation cut off resumes on the next call.
func (s *Server) rotateData(w http.ResponseWriter, r *http.Request) error {
	var req api.RotateDataRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	switch {
	case req.Tenant == "":
		return fieldProblem("/tenant", "is required")
	case !tenantName.MatchString(req.Tenant):
		return fieldProblem("/tenant", "is not a tenant id (1-63 of a-z, 0-9, '_', '.', '-')")
	case req.BatchSize < 0 || req.BatchSize > maxRotateBatch:
		return fieldProblem("/batch_size", "must be from 1 to 10000")
	}
	if !s.writer.Sealer().Enabled() {
		return errEncryptionOff
	}
	step, err := s.writer.RotateDataKey(r.Context(), req.Tenant, cmp.Or(req.BatchSize, defaultRotateBatch))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.RotateDataStep{Tenant: req.Tenant, Version: step.Version,
		Resealed: step.Resealed, Remaining: step.Remaining, Done: step.Done})
	return nil
}

// sealProblem is the answer when a sealed value cannot be opened: the
// daemon lacks the master key, or the data does not authenticate. It names
// no key and no content.
func sealProblem(err error) *Problem {
	var missing *seal.MissingMasterKeyError
	switch {
	case errors.As(err, &missing), errors.Is(err, seal.ErrNoMasterKey):
		return problem(http.StatusServiceUnavailable, "encryption-key-missing", "Encryption key missing",
			"a sealed payload cannot be opened: this daemon lacks the master key that wraps its data key")
	case errors.Is(err, seal.ErrAuthentication):
		return problem(http.StatusInternalServerError, "sealed-data-corrupt", "Sealed data does not authenticate",
			"a sealed payload does not open under its key: it was altered in the database, or the key is wrong")
	}
	return nil
}
