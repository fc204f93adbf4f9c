package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/cmd/engramd/config"
	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/retention"
)

// The retention section overlays its defaults, class by class.
func TestRetentionConfig(t *testing.T) {
	t.Parallel()
	c, err := config.Load(nil, env(nil))
	require.NoError(t, err)
	require.Equal(t, retention.DefaultConfig(), c.Retention)

	c, err = loadFile(t, `
retention:
  pii: {max_age: 30d}
  general: {max_age: 0}
  public: {max_age: 3650d, action: hard_delete}
  batch_size: 100
`)
	require.NoError(t, err)
	require.Equal(t, retention.Class{MaxAge: decay.Duration(30 * 24 * time.Hour), Action: retention.HardDelete}, c.Retention.PII)
	require.Equal(t, retention.DefaultConfig().BusinessSensitive, c.Retention.BusinessSensitive, "a class not named keeps its default")
	require.Equal(t, decay.Duration(0), c.Retention.General.MaxAge, "max_age 0 is no limit")
	require.Equal(t, retention.Class{MaxAge: decay.Duration(3650 * 24 * time.Hour), Action: retention.HardDelete}, c.Retention.Public)
	require.Equal(t, 100, c.Retention.BatchSize)
}

// An invalid retention section is refused, naming the field.
func TestRetentionConfigRefused(t *testing.T) {
	t.Parallel()
	for doc, want := range map[string]string{
		"retention: {pii: {action: archive}}":             `retention.pii.action: "archive" is not hard_delete or soft_delete`,
		"retention: {business_sensitive: {max_age: -1d}}": "retention.business_sensitive.max_age: must not be negative",
		"retention: {general: {max_age: 10m}}":            "retention.general.max_age: 10m0s is under an hour",
		"retention: {batch_size: 0}":                      "retention.batch_size: 0 is outside 1..10000",
		"retention: {overdue_after: -2h}":                 "retention.overdue_after: must not be negative",
		"retention: {pii: {max_age: soon}}":               `"soon" is not a duration`,
		"retention: {secret: {max_age: 1d}}":              "field secret not found",
	} {
		_, err := loadFile(t, doc)
		require.ErrorContains(t, err, want, doc)
	}
}
