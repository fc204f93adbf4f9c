package config_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/cmd/engramd/config"
	"github.com/engram-dev/engram/consolidate"
	"github.com/engram-dev/engram/extract"
)

// The consolidate section reaches the consolidator's settings; a bad field
// is refused by name.
func TestConsolidateConfig(t *testing.T) {
	t.Parallel()
	c, err := loadFile(t, "consolidate: {support: 3, probes: [cat, less], lifecycle: {probation_uses: 4, retract_after: 5, retract_rate: 0.2, rate_window: 20}}\n")
	require.NoError(t, err)
	require.Equal(t, consolidate.Settings{Support: 3, Probes: []string{"cat", "less"},
		Lifecycle: consolidate.Lifecycle{ProbationUses: 4, RetractAfter: 5, RetractRate: 0.2, RateWindow: 20}}, c.Consolidate)

	for doc, field := range map[string]string{
		"consolidate: {support: -1}\n":                    "consolidate.support",
		"consolidate: {lifecycle: {retract_rate: 1}}\n":   "consolidate.lifecycle.retract_rate",
		"consolidate: {lifecycle: {retract_after: -2}}\n": "consolidate.lifecycle.retract_after",
		"consolidate: {probes: [\" \"]}\n":                "consolidate.probes[0]",
		"consolidate: {supprot: 2}\n":                     "supprot",
	} {
		_, err := loadFile(t, doc)
		require.ErrorContains(t, err, field, doc)
	}
}

// Duplicate resolution is set under consolidate.duplicates: its vector
// threshold and its off switch; a threshold outside (0, 1] is refused.
func TestConsolidateDuplicatesConfig(t *testing.T) {
	t.Parallel()
	c, err := loadFile(t, "consolidate: {duplicates: {off: true, similarity: 0.9}}\n")
	require.NoError(t, err)
	require.Equal(t, consolidate.Duplicates{Off: true, Similarity: 0.9}, c.Consolidate.Duplicates)
	for _, doc := range []string{"consolidate: {duplicates: {similarity: 1.5}}\n", "consolidate: {duplicates: {similarity: -0.1}}\n"} {
		_, err := loadFile(t, doc)
		require.ErrorContains(t, err, "consolidate.duplicates.similarity", doc)
	}
}

// The language model is off by default; consolidate.model turns it on, its
// key from the file or ENGRAM_MODEL_API_KEY (the environment's winning), and
// a bad field is refused by name, never quoting the key.
func TestConsolidateModelConfig(t *testing.T) {
	t.Parallel()
	c, err := config.Load(nil, env(map[string]string{"ENGRAM_MODEL_API_KEY": "sk-env-0123456789"}))
	require.NoError(t, err)
	require.False(t, c.Consolidate.Model.Enabled(), "off by default, whatever the environment holds")

	c, err = loadFile(t, "consolidate: {model: {base_url: \"http://localhost:11434/v1\", model: llama3.1, api_key: sk-file-0123456789, timeout: 2m, max_facts: 5}}\n")
	require.NoError(t, err)
	require.Equal(t, extract.Config{BaseURL: "http://localhost:11434/v1", Model: "llama3.1", APIKey: "sk-file-0123456789", Timeout: 2 * time.Minute, MaxFacts: 5}, c.Consolidate.Model)
	require.True(t, c.Consolidate.Model.Enabled())

	path := filepath.Join(t.TempDir(), "engram.yaml")
	require.NoError(t, os.WriteFile(path, []byte("consolidate: {model: {model: gpt-4o-mini, api_key: sk-file-0123456789}}\n"), 0o600))
	c, err = config.Load([]string{"--config", path}, env(map[string]string{"ENGRAM_MODEL_API_KEY": "sk-env-0123456789"}))
	require.NoError(t, err)
	require.Equal(t, "sk-env-0123456789", c.Consolidate.Model.APIKey)

	for doc, want := range map[string]string{
		"consolidate: {model: {base_url: \"http://localhost:11434/v1\"}}\n":               "consolidate.model.model: is required",
		"consolidate: {model: {model: m, base_url: \"ftp://sk-secret-0123456789@x\"}}\n":  "consolidate.model.base_url: must be an absolute http or https URL",
		"consolidate: {model: {model: m, response_format: text}}\n":                       "consolidate.model.response_format",
		"consolidate: {model: {model: m, timeout: -1s, api_key: sk-secret-0123456789}}\n": "consolidate.model.timeout: must not be negative",
		"consolidate: {model: {model: m, temperature: 1}}\n":                              "temperature",
	} {
		_, err := loadFile(t, doc)
		require.ErrorContains(t, err, want, doc)
		require.NotContains(t, err.Error(), "sk-secret", doc)
	}
}
