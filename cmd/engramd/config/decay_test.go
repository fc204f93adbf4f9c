package config_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/cmd/engramd/config"
	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/memory"
)

func loadFile(t *testing.T, doc string) (config.Config, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "engram.yaml")
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o600))
	return config.Load([]string{"--config", path}, env(nil))
}

// The decay section and job schedules overlay their defaults.
func TestDecayAndJobsConfig(t *testing.T) {
	t.Parallel()
	c, err := config.Load(nil, env(nil))
	require.NoError(t, err)
	require.Equal(t, decay.DefaultConfig(), c.Decay)
	require.Equal(t, map[string]string{"audit_provenance": "@daily", "decay_sweep": "*/15 * * * *", "decay_purge": "17 * * * *",
		"retrieval_stats": "@every 5m", "embedding_backfill": "@every 1m", "embedding_reindex": "off", "review_escalation": "@every 5m", "consolidate": "@every 30s",
		"retention": "23 * * * *", "compliance": "53 * * * *"}, c.Jobs)

	c, err = loadFile(t, `
decay:
  prune_threshold: 0.1
  purge_grace: 14d
  profiles:
    episodic: {half_life: 2d, max_age: 30d}
jobs:
  decay_sweep: "@every 5m"
`)
	require.NoError(t, err)
	require.Equal(t, 0.1, c.Decay.PruneThreshold)
	require.Equal(t, decay.Duration(14*24*time.Hour), c.Decay.PurgeGrace)
	require.Equal(t, decay.Duration(48*time.Hour), c.Decay.Profiles[memory.Episodic].HalfLife)
	require.Equal(t, decay.DefaultProfile(memory.Semantic), c.Decay.Profiles[memory.Semantic])
	require.Equal(t, map[string]string{"audit_provenance": "@daily", "decay_sweep": "@every 5m", "decay_purge": "17 * * * *",
		"retrieval_stats": "@every 5m", "embedding_backfill": "@every 1m", "embedding_reindex": "off", "review_escalation": "@every 5m", "consolidate": "@every 30s",
		"retention": "23 * * * *", "compliance": "53 * * * *"}, c.Jobs)
}

// An invalid decay section or schedule is refused, naming the field.
func TestDecayAndJobsConfigRefused(t *testing.T) {
	t.Parallel()
	for doc, want := range map[string]string{
		"decay: {profiles: {semantic: {half_life: 0s}}}": "decay.profiles.semantic.half_life: must be positive",
		"decay: {profiles: {semantic: {curve: spline}}}": `decay.profiles.semantic.curve: "spline" is not exponential, linear or custom`,
		"decay: {profiles: {episodic: {floor: 1.2}}}":    "decay.profiles.episodic.floor: 1.2 is outside [0, 1]",
		"decay: {purge_grace: -1h}":                      "decay.purge_grace: must be positive",
		"decay: {profiles: {semantic: {curve: custom, points: [{age: 2d, salience: 0.5}, {age: 1d, salience: 0.1}]}}}": "decay.profiles.semantic.points[1].age: must be greater than points[0].age: points are in order of age",
		`jobs: {decay_sweep: "every five minutes"}`: `jobs.decay_sweep: "every five minutes" is not a cron schedule`,
	} {
		_, err := loadFile(t, doc)
		require.ErrorContains(t, err, want, doc)
	}
}
