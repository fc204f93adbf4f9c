package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/consolidate"
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
