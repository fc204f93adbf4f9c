package retention_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/retention"
)

func TestConfigValidateNamesTheField(t *testing.T) {
	t.Parallel()
	require.NoError(t, retention.DefaultConfig().Validate())
	for want, edit := range map[string]func(*retention.Config){
		"retention.pii.max_age":               func(c *retention.Config) { c.PII.MaxAge = -1 },
		"retention.general.max_age":           func(c *retention.Config) { c.General.MaxAge = decay.Duration(time.Minute) },
		"retention.business_sensitive.action": func(c *retention.Config) { c.BusinessSensitive.Action = "archive" },
		"retention.public.action":             func(c *retention.Config) { c.Public.Action = "" },
		"retention.batch_size":                func(c *retention.Config) { c.BatchSize = 0 },
		"retention.overdue_after":             func(c *retention.Config) { c.OverdueAfter = -1 },
	} {
		c := retention.DefaultConfig()
		edit(&c)
		err := c.Validate()
		require.Error(t, err, want)
		require.Contains(t, err.Error(), want+":")
		_, err = retention.NewSettings(c)
		require.Error(t, err, "settings refuse it too")
	}
}

func TestConfigPast(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	c := retention.DefaultConfig()
	rec := func(s memory.Sensitivity, age time.Duration, tags ...string) memory.Record {
		return memory.Record{Sensitivity: s, Tags: tags, CreatedAt: now.Add(-age)}
	}
	day := 24 * time.Hour
	require.True(t, c.Past(rec(memory.Low, 91*day, memory.PIITag), now))
	require.False(t, c.Past(rec(memory.Low, 89*day, memory.PIITag), now))
	require.False(t, c.Past(rec(memory.Medium, 91*day), now), "business-sensitive keeps a year")
	require.True(t, c.Past(rec(memory.Medium, 366*day), now))
	require.False(t, c.Past(rec(memory.Public, 100*365*day), now), "public has no limit")
	c.PII.MaxAge = 0
	require.False(t, c.Past(rec(memory.Hyper, 1000*day), now), "max_age 0 is no limit")
}
