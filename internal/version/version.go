// Package version says which build of engram is running, for the
// binaries' --version: a version set at link time
// (-ldflags "-X github.com/engram-dev/engram/internal/version.Version=v1.2.0"),
// else the module version and the commit Go recorded in the build info.
package version

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Version is the release, set at link time; empty in a development build.
var Version string

// String is one line naming the build: version (or "devel"), then the
// commit, its time and whether the tree had changes, then the Go version,
// each when known.
func String() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return describe(Version, nil)
	}
	return describe(Version, info)
}

func describe(linked string, info *debug.BuildInfo) string {
	v := linked
	if v == "" && info != nil && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	if v == "" {
		v = "devel"
	}
	if info == nil {
		return v
	}
	var rev, at string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	var parts []string
	if rev != "" {
		parts = append(parts, "commit "+rev[:min(len(rev), 12)])
	}
	if at != "" {
		parts = append(parts, at)
	}
	if modified {
		parts = append(parts, "with local changes")
	}
	parts = append(parts, info.GoVersion)
	return fmt.Sprintf("%s (%s)", v, strings.Join(parts, ", "))
}
