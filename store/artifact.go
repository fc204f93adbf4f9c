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
}

const putArtifactSQL = `
WITH ins AS (
	INSERT INTO artifacts (tenant_id, sha256, media_type, size, content)
	VALUES ($1, $2, $3, $4, $5)
	ON CONFLICT (tenant_id, sha256) DO NOTHING
	RETURNING media_type, size, created_at
)
SELECT media_type, size, created_at FROM ins
UNION ALL
SELECT media_type, size, created_at FROM artifacts WHERE tenant_id = $1 AND sha256 = $2
LIMIT 1`

// PutArtifact stores content under its SHA-256. Storing the same content
// twice is a no-op that returns the first artifact.
func PutArtifact(ctx context.Context, db pg.DBTX, tenant, mediaType string, content []byte) (Artifact, error) {
	sum := sha256.Sum256(content)
	if mediaType == "" {
		mediaType = "application/octet-stream"
	}
	a := Artifact{SHA256: hex.EncodeToString(sum[:])}
	err := db.QueryRow(ctx, putArtifactSQL, tenant, sum[:], mediaType, len(content), content).Scan(&a.MediaType, &a.Size, &a.CreatedAt)
	if err != nil {
		return Artifact{}, fmt.Errorf("put artifact: %w", err)
	}
	a.CreatedAt = a.CreatedAt.UTC()
	return a, nil
}

const getArtifactSQL = `SELECT media_type, size, created_at, content FROM artifacts WHERE tenant_id = $1 AND sha256 = $2`

// GetArtifact returns an artifact and its content by hex SHA-256.
func GetArtifact(ctx context.Context, db pg.DBTX, tenant, sha string) (Artifact, []byte, error) {
	sum, err := hex.DecodeString(sha)
	if err != nil || len(sum) != sha256.Size {
		return Artifact{}, nil, ErrNotFound
	}
	a := Artifact{SHA256: sha}
	var content []byte
	err = db.QueryRow(ctx, getArtifactSQL, tenant, sum).Scan(&a.MediaType, &a.Size, &a.CreatedAt, &content)
	if errors.Is(err, pgx.ErrNoRows) {
		return Artifact{}, nil, ErrNotFound
	}
	if err != nil {
		return Artifact{}, nil, fmt.Errorf("get artifact: %w", err)
	}
	a.CreatedAt = a.CreatedAt.UTC()
	return a, content, nil
}
