package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/engram-dev/engram/internal/pg"

	"github.com/jackc/pgx/v5"
)

// Artifact describes a content-addressed blob, such as a log or screenshot
// an episode references (substrate RFC §15.3: artifacts MUST be
// content-addressed).
type Artifact struct {
	SHA256    string    `json:"sha256"`
	MediaType string    `json:"media_type"`
	Size      int64     `json:"size"`
	CreatedAt time.Time `json:"created_at"`
	// Sealed: the stored content is a sealed value, not the artifact's
	// bytes (migration 029); SHA256 and Size are the plaintext's.
	Sealed bool `json:"-"`
}

// NewArtifact is an artifact to store: the digest and size of its
// plaintext, and its content as stored (the plaintext, or a sealed value).
type NewArtifact struct {
	SHA256    [sha256.Size]byte
	MediaType string
	Size      int64
	Content   []byte
	Sealed    bool
}

const putArtifactSQL = `
WITH ins AS (
	INSERT INTO artifacts (tenant_id, sha256, media_type, size, content, sealed)
	VALUES ($1, $2, $3, $4, $5, $6)
	ON CONFLICT (tenant_id, sha256) DO NOTHING
	RETURNING media_type, size, created_at, sealed
)
SELECT media_type, size, created_at, sealed FROM ins
UNION ALL
SELECT media_type, size, created_at, sealed FROM artifacts WHERE tenant_id = $1 AND sha256 = $2
LIMIT 1`

// PutArtifact stores an artifact under its digest. Storing the same
// digest twice is a no-op that returns the first artifact.
func PutArtifact(ctx context.Context, db pg.DBTX, tenant string, in NewArtifact) (Artifact, error) {
	a := Artifact{SHA256: hex.EncodeToString(in.SHA256[:])}
	err := db.QueryRow(ctx, putArtifactSQL, tenant, in.SHA256[:], in.MediaType, in.Size, in.Content, in.Sealed).
		Scan(&a.MediaType, &a.Size, &a.CreatedAt, &a.Sealed)
	if err != nil {
		return Artifact{}, fmt.Errorf("put artifact: %w", err)
	}
	a.CreatedAt = a.CreatedAt.UTC()
	return a, nil
}

const getArtifactSQL = `SELECT media_type, size, created_at, sealed, content FROM artifacts WHERE tenant_id = $1 AND sha256 = $2`

// GetArtifact returns an artifact and its content as stored by hex
// SHA-256.
func GetArtifact(ctx context.Context, db pg.DBTX, tenant, sha string) (Artifact, []byte, error) {
	sum, err := hex.DecodeString(sha)
	if err != nil || len(sum) != sha256.Size {
		return Artifact{}, nil, ErrNotFound
	}
	a := Artifact{SHA256: sha}
	var content []byte
	err = db.QueryRow(ctx, getArtifactSQL, tenant, sum).Scan(&a.MediaType, &a.Size, &a.CreatedAt, &a.Sealed, &content)
	if errors.Is(err, pgx.ErrNoRows) {
		return Artifact{}, nil, ErrNotFound
	}
	if err != nil {
		return Artifact{}, nil, fmt.Errorf("get artifact: %w", err)
	}
	a.CreatedAt = a.CreatedAt.UTC()
	return a, content, nil
}
