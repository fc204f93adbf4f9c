package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/cmd/engramd/config"
	"github.com/engram-dev/engram/openwop"
	"github.com/engram-dev/engram/revise"
)

// OpenWOP memoryRefs are signed with the provenance signing keys, the
// active one first: a ref signed before the active key rotated still
// resolves, and a new one is signed with the active key.
func TestOpenWOPRefKeys(t *testing.T) {
	t.Parallel()
	oldKey := revise.SigningKey{ID: "k1", Secret: "old-provenance-secret-0123456789abcdef"}
	newKey := revise.SigningKey{ID: "k2", Secret: "new-provenance-secret-0123456789abcdef"}
	var cfg config.Config
	cfg.OpenWOP.OnSecret = openwop.OnSecretReject
	cfg.WritePath.Provenance.Keys = []revise.SigningKey{oldKey, newKey}
	cfg.WritePath.Provenance.Active = "k2"
	got := openwopConfig(cfg)
	require.Equal(t, []string{newKey.Secret, oldKey.Secret}, got.RefKeys)
	require.Equal(t, openwop.OnSecretReject, got.OnSecret)

	ref := openwop.MemoryRef{Agent: "planner", Namespace: "default"}
	signed := openwop.NewRefSigner(oldKey.Secret).Issue("acme", ref)
	back, err := openwop.NewRefSigner(got.RefKeys...).Resolve("acme", signed)
	require.NoError(t, err)
	require.Equal(t, ref, back)
	require.Equal(t, openwop.NewRefSigner(newKey.Secret).Issue("acme", ref), openwop.NewRefSigner(got.RefKeys...).Issue("acme", ref))

	require.Empty(t, openwopConfig(config.Config{}).RefKeys, "no provenance key: the adapter's own random secret")
}
