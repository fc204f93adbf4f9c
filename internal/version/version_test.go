package version

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDescribe(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-12-07T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	require.Equal(t, "devel (commit 0123456789ab, 2026-12-07T10:00:00Z, with local changes, go1.26.8)", describe("", info))
	require.Equal(t, "v1.2.0 (commit 0123456789ab, 2026-12-07T10:00:00Z, with local changes, go1.26.8)", describe("v1.2.0", info))
	require.Equal(t, "v0.9.1 (go1.26.8)", describe("", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.9.1"}}))
	require.Equal(t, "devel", describe("", nil))
}
