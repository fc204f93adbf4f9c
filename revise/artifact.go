package revise

import (
	"context"
	"crypto/sha256"
	"fmt"

	"github.com/engram-dev/engram/store"
)

// PutArtifact stores content under its SHA-256 (substrate RFC §15.3),
// sealed at rest when the writer has a master key (§15.9): an artifact
// has no sensitivity of its own, so every one is sealed. The caller
// redacts the content first, as it does every write's (SR-1); the digest
// is the redacted content's. Storing the same content twice is a no-op
// that returns the first artifact. An empty media type is
// application/octet-stream.
func (w *Writer) PutArtifact(ctx context.Context, tenant, mediaType string, content []byte) (store.Artifact, error) {
	in := store.NewArtifact{SHA256: sha256.Sum256(content), MediaType: mediaType, Size: int64(len(content)), Content: content}
	if in.MediaType == "" {
		in.MediaType = "application/octet-stream"
	}
	if s := w.cfg.Sealer; s.Enabled() {
		sealed, err := s.Seal(ctx, tenant, content)
		if err != nil {
			return store.Artifact{}, fmt.Errorf("seal artifact: %w", err)
		}
		in.Content, in.Sealed = sealed, true
	}
	return store.PutArtifact(ctx, w.db, tenant, in)
}
