package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/cmd/engramd/config"
)

// OpenIntent memory's capacities come from the file; zero is the default,
// a negative one is refused with the field named.
func TestOpenIntentCapacities(t *testing.T) {
	t.Parallel()
	c, err := loadFile(t, "openintent: {episodic_capacity: 50, working_capacity: 10}\n")
	require.NoError(t, err)
	require.Equal(t, config.OpenIntent{EpisodicCapacity: 50, WorkingCapacity: 10}, c.OpenIntent)
	c, err = loadFile(t, "listen: 127.0.0.1:9000\n")
	require.NoError(t, err)
	require.Equal(t, config.OpenIntent{}, c.OpenIntent)
	_, err = loadFile(t, "openintent: {working_capacity: -1}\n")
	require.ErrorContains(t, err, "openintent.working_capacity: must not be negative")
	_, err = loadFile(t, "openintent: {episodic_capacity: -1}\n")
	require.ErrorContains(t, err, "openintent.episodic_capacity: must not be negative")
}
