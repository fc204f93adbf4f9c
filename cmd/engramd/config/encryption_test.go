package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/cmd/engramd/config"
	"github.com/engram-dev/engram/seal"
)

func TestEncryptionKeys(t *testing.T) {
	t.Parallel()
	k1, k2 := seal.NewMasterKey(), seal.NewMasterKey()
	dir := t.TempDir()
	file := filepath.Join(dir, "master.keys")
	require.NoError(t, os.WriteFile(file, []byte("# current first\n"+k2+"\n\n"+k1+"\n"), 0o600))
	conf := filepath.Join(dir, "engram.yaml")
	require.NoError(t, os.WriteFile(conf, []byte("encryption: {master_key_file: "+file+", min_sensitivity: medium}\n"), 0o600))

	// From the file, the first key wrapping.
	c, err := config.Load([]string{"--config", conf}, env(nil))
	require.NoError(t, err)
	keys, err := c.Encryption.Keys()
	require.NoError(t, err)
	require.Len(t, keys, 2)
	want, _ := seal.ParseMasterKey(k2)
	require.Equal(t, want.ID, keys[0].ID)

	// ENGRAM_MASTER_KEY over the file.
	c, err = config.Load([]string{"--config", conf}, env(map[string]string{"ENGRAM_MASTER_KEY": k1}))
	require.NoError(t, err)
	keys, err = c.Encryption.Keys()
	require.NoError(t, err)
	require.Len(t, keys, 1)

	// None: encryption is off, and that is valid.
	c, err = config.Load(nil, env(nil))
	require.NoError(t, err)
	keys, err = c.Encryption.Keys()
	require.NoError(t, err)
	require.Empty(t, keys)

	// A bad key names its place, never its text; a bad sensitivity its field.
	_, err = config.Load(nil, env(map[string]string{"ENGRAM_MASTER_KEY": k1 + ",short-but-secret-text"}))
	require.ErrorContains(t, err, "encryption.master_keys[1]")
	require.NotContains(t, err.Error(), "secret-text")
	require.NotContains(t, err.Error(), k1)
	_, err = config.Load(nil, env(map[string]string{"ENGRAM_MASTER_KEY": k1 + "," + k1}))
	require.ErrorContains(t, err, "configured twice")
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("encryption: {min_sensitivity: secret}\n"), 0o600))
	_, err = config.Load([]string{"--config", bad}, env(nil))
	require.ErrorContains(t, err, "encryption.min_sensitivity")
}
