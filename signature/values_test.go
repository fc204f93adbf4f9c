package signature_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/signature"
)

// A message's values are its paths and quoted names, in order, each
// counted among its kind, as its signature has placeholders for them.
func TestValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, msg string
		want      []signature.Value
	}{
		{"path and quoted", "npm: checksum failure in /srv/app-3fa20c/obj.o (package 'libapp-3fa20c')", []signature.Value{
			{Placeholder: signature.Path, Index: 0, Text: "/srv/app-3fa20c/obj.o"},
			{Placeholder: signature.Quoted, Index: 0, Text: "libapp-3fa20c"},
		}},
		{"line and column dropped", "./cmd/x/main.go:12:5: undefined: fooBar", []signature.Value{
			{Placeholder: signature.Path, Index: 0, Text: "./cmd/x/main.go"},
		}},
		{"file and line", "main.go:12: missing return", []signature.Value{
			{Placeholder: signature.Path, Index: 0, Text: "main.go"},
		}},
		{"two paths", "cannot copy /a/b/x to /c/d/y: exists", []signature.Value{
			{Placeholder: signature.Path, Index: 0, Text: "/a/b/x"},
			{Placeholder: signature.Path, Index: 1, Text: "/c/d/y"},
		}},
		{"quoted path is quoted", `open "/etc/app.conf": permission denied`, []signature.Value{
			{Placeholder: signature.Quoted, Index: 0, Text: "/etc/app.conf"},
		}},
		{"curly quotes", "no module named ‘left-pad’", []signature.Value{
			{Placeholder: signature.Quoted, Index: 0, Text: "left-pad"},
		}},
		{"a URL is no path", "GET https://registry.npmjs.org/left-pad failed for 'left-pad'", []signature.Value{
			{Placeholder: signature.Quoted, Index: 0, Text: "left-pad"},
		}},
		{"a URL in quotes is put back", "cannot fetch 'https://x.org/a/b'", []signature.Value{
			{Placeholder: signature.Quoted, Index: 0, Text: "https://x.org/a/b"},
		}},
		{"the problem line only", "npm ERR! Cannot find module 'left-pad'\nRequire stack:\n- /app/index.js", []signature.Value{
			{Placeholder: signature.Quoted, Index: 0, Text: "left-pad"},
		}},
		{"words only", "permission denied", nil},
		{"a rune that reads as a mark is no value", "bad \U000F0000 here", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, signature.Values(tc.msg), tc.msg)
		})
	}
}

// Two messages of one signature have their values in the same places: a
// source found in one binds the same value in the other.
func TestSourceIn(t *testing.T) {
	t.Parallel()
	a := "npm: checksum failure in /srv/app-3fa20c/obj.o (package 'libapp-3fa20c')"
	b := "npm: checksum failure in /home/ci/web-01be77/obj.o (package 'libweb-01be77')"
	require.Equal(t, signature.Of(a), signature.Of(b))
	dir := signature.Source{Placeholder: signature.Path, Index: 0, TrimSuffix: "/obj.o"}
	pkg := signature.Source{Placeholder: signature.Quoted, Index: 0}
	for msg, want := range map[string][2]string{a: {"/srv/app-3fa20c", "libapp-3fa20c"}, b: {"/home/ci/web-01be77", "libweb-01be77"}} {
		got, ok := dir.In(signature.Values(msg))
		require.True(t, ok)
		require.Equal(t, want[0], got)
		got, ok = pkg.In(signature.Values(msg))
		require.True(t, ok)
		require.Equal(t, want[1], got)
	}

	_, ok := dir.In(signature.Values("npm: checksum failure in /srv/x/main.o (package 'p')"))
	require.False(t, ok, "another file: the suffix does not hold")
	_, ok = signature.Source{Placeholder: signature.Path, Index: 1}.In(signature.Values(a))
	require.False(t, ok, "no second path")
	_, ok = signature.Source{Placeholder: signature.Path, Index: 0, TrimSuffix: "/srv/app-3fa20c/obj.o"}.In(signature.Values(a))
	require.False(t, ok, "nothing left")
}
