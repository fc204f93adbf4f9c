package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/revise"
)

// Leases' TTL bounds come from the file; bounds that contradict each other
// are refused with the field named.
func TestLeaseBounds(t *testing.T) {
	t.Parallel()
	c, err := loadFile(t, "leases: {min_ttl: 5s, max_ttl: 20s, default_ttl: 10s}\n")
	require.NoError(t, err)
	require.Equal(t, revise.LeaseConfig{DefaultTTL: 10 * time.Second, MinTTL: 5 * time.Second, MaxTTL: 20 * time.Second}, c.Leases)

	c, err = loadFile(t, "listen: 127.0.0.1:9000\n")
	require.NoError(t, err)
	require.Equal(t, revise.LeaseConfig{}, c.Leases, "zero: the defaults, 30–120 s, 60 s by default")

	// A max under the default 60 s makes the default TTL the max.
	_, err = loadFile(t, "leases: {max_ttl: 40s}\n")
	require.NoError(t, err)

	for file, want := range map[string]string{
		"leases: {min_ttl: 50s, max_ttl: 40s}\n":                  "leases.max_ttl: must be at least min_ttl",
		"leases: {default_ttl: 200s}\n":                           "leases.default_ttl: must be from min_ttl (30s) to max_ttl (2m0s)",
		"leases: {min_ttl: -1s}\n":                                "leases.min_ttl: must not be negative",
		"leases: {min_ttl: 100ms, max_ttl: 1s}\n":                 "leases.min_ttl: must be at least 1s",
		"leases: {min_ttl: 5s, max_ttl: 10s, default_ttl: 20s}\n": "leases.default_ttl",
	} {
		_, err := loadFile(t, file)
		require.ErrorContains(t, err, want, file)
	}
}
