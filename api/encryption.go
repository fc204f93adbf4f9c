package api

// EncryptionStatus is the answer of GET /v1/encryption: whether payloads
// are sealed at rest, from which sensitivity, and which master key wraps
// (by id, a digest: never the key).
type EncryptionStatus struct {
	Enabled        bool   `json:"enabled"`
	MinSensitivity string `json:"min_sensitivity,omitempty"`
	MasterKey      string `json:"master_key,omitempty"`
}

// RotateMasterResult is the answer of POST /v1/encryption:rotate-master:
// how many tenant data keys were re-wrapped under MasterKey, the current
// master key. Nothing they sealed was re-encrypted.
type RotateMasterResult struct {
	MasterKey string `json:"master_key"`
	Rewrapped int    `json:"rewrapped"`
}

// RotateDataRequest is the body of POST /v1/encryption:rotate-data: one
// bounded step of re-sealing Tenant's values under a new data key.
// BatchSize is how many values the step re-seals at most (1–10000; 500
// when zero).
type RotateDataRequest struct {
	Tenant    string `json:"tenant"`
	BatchSize int    `json:"batch_size,omitempty"`
}

// RotateDataStep is what one step of a data-key rotation did: the data
// key version everything is re-sealed under, how many values this step
// re-sealed and how many remain under an older key. Done: none remain,
// and the older keys are retired. Calling again after Done starts a new
// rotation.
type RotateDataStep struct {
	Tenant    string `json:"tenant"`
	Version   int    `json:"version"`
	Resealed  int    `json:"resealed"`
	Remaining int64  `json:"remaining"`
	Done      bool   `json:"done"`
}
