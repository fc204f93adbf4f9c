package signature_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/signature"
)

// Messages of one problem that name their instance value bare, where no
// fixed pattern sees a value, share a template learned from the stream;
// the value is a wildcard a variable is bound from. Messages of two
// problems of one program stay apart.
func TestMinerLearnsBareValues(t *testing.T) {
	t.Parallel()
	m := signature.NewMiner(0)
	for _, msg := range []string{
		"E8949: bundler failed on tokio-28 (line 103)",
		"bash: jq: command not found",
		"E8949: bundler failed on numpy-12 (line 7)",
		"npm: checksum failure in /srv/a/obj.o",
		"bash: yq: command not found",
		"npm: lockfile conflict in /srv/b/obj.o",
		"make: *** [Makefile:12: build] Error 2",
	} {
		m.Add(msg)
	}
	tpl, ok := m.Template("E8949: bundler failed on serde-3 (line 55)")
	require.True(t, ok)
	require.Equal(t, "e8949 bundler failed on <*> (line <n>)", tpl.String())
	vals, ok := signature.Match(tpl, "E8949: bundler failed on serde-3 (line 55)")
	require.True(t, ok)
	require.Equal(t, []signature.Value{{Placeholder: signature.Wildcard, Index: 0, Text: "serde-3"}}, vals)

	tpl, ok = m.Template("bash: rg: command not found")
	require.True(t, ok)
	require.Equal(t, []string{"rg"}, tpl.WildcardValues("bash: rg: command not found"))

	_, ok = m.Template("npm: checksum failure in /srv/c/obj.o")
	require.False(t, ok, "two problems of one program are not one template")
	_, ok = m.Template("make: *** [Makefile:40: test] Error 2")
	require.False(t, ok, "a message met once has no wildcard")

	_, ok = signature.Match(tpl, "bash: rg: command was found")
	require.False(t, ok)
}

// A template specialised to the value its support shares keeps the
// wildcards a recipe binds, renumbered.
func TestTemplateFix(t *testing.T) {
	t.Parallel()
	tpl := signature.ParseTemplate("<*> failed on <*> (line <n>)")
	fixed, remap, ok := tpl.Fix("cargo failed on tokio-28 (line 3)", func(k int) bool { return k == 1 })
	require.True(t, ok)
	require.Equal(t, "cargo failed on <*> (line <n>)", fixed.String())
	require.Equal(t, map[int]int{1: 0}, remap)
}

// The name of a versioned value is what a variable takes with Before.
func TestSourceBefore(t *testing.T) {
	t.Parallel()
	vals := []signature.Value{{Placeholder: signature.Wildcard, Index: 0, Text: "foo==1.2.3"}}
	v, ok := signature.Source{Placeholder: signature.Wildcard, Before: "=="}.In(vals)
	require.True(t, ok)
	require.Equal(t, "foo", v)
	_, ok = signature.Source{Placeholder: signature.Wildcard, Before: "@"}.In(vals)
	require.False(t, ok)
}

// A code that varies with the instance, first in the message, is a value
// too; a tool's output names its problem on the line that says error.
func TestMinerAndProblemLineOnRealOutput(t *testing.T) {
	t.Parallel()
	m := signature.NewMiner(0)
	m.Add("E8123: bundler failed on tokio-28 (line 50)")
	m.Add("E8456: bundler failed on serde-14 (line 70)")
	tpl, ok := m.Template("E9001: bundler failed on mio-9 (line 300)")
	require.True(t, ok)
	require.Equal(t, []string{"E9001", "mio-9"}, tpl.WildcardValues("E9001: bundler failed on mio-9 (line 300)"))

	rust := "   Compiling app v0.1.0 (/srv/app)\nerror[E0432]: unresolved import `tokio`\n --> src/main.rs:3:5"
	require.Equal(t, "error[e0432]: unresolved import <q>", signature.Of(rust))
	require.Equal(t, "compiling app <n> (<path>)", signature.Of("   Compiling app v0.1.0 (/srv/app)\n   Finished"))
}

// A path that is not ASCII is a path: two occurrences of one error
// normalise alike.
func TestUnicodePaths(t *testing.T) {
	t.Parallel()
	a := signature.Of("ld: cache mismatch in /srv/bü🚀ld-ñ/obj.o")
	require.Equal(t, "ld: cache mismatch in <path>", a)
	require.Equal(t, a, signature.Of("ld: cache mismatch in /srv/ビルド/obj.o"))
	vals := signature.Values("ld: cache mismatch in /srv/bü🚀ld-ñ/obj.o")
	require.Equal(t, "/srv/bü🚀ld-ñ/obj.o", vals[0].Text)
}

// A message read once ([signature.ReadLine]), as consolidation keeps it
// with an episode's features, matches, mines and specialises templates as
// the message itself does, also once kept as JSON.
func TestALineReadsAsItsMessage(t *testing.T) {
	t.Parallel()
	msgs := []string{
		"E8949: bundler failed on tokio-28 (line 103)",
		"E8949: bundler failed on numpy-12 (line 7)",
		"bash: jq: command not found",
		"bash: yq: command not found",
		"npm: checksum failure in /srv/a/obj.o",
		"npm: lockfile conflict in /srv/b/obj.o",
		"make: *** [Makefile:12: build] Error 2",
		"cannot resolve module alpha amber in /home/dev/proj1/src/main.go:11:2",
		"cannot resolve module bravo amber in /home/dev/proj2/src/main.go:12:3",
		"deploy: quota exceeded for 'billing-7' (E8949) at https://x.example/q?a=1",
		"Traceback (most recent call last):\n  File \"a.py\", line 3\nKeyError: 'token'",
		"a literal <*> in a message",
		"   ",
		"",
	}
	byMessage, byLine := signature.NewMiner(0), signature.NewMiner(0)
	for _, msg := range msgs {
		byMessage.Add(msg)
		byLine.AddLine(signature.ReadLine(msg))
	}
	tpls := []signature.Template{nil, signature.ParseTemplate("bash <*> command not found"), signature.ParseTemplate("a literal <*> in a message")}
	for _, msg := range msgs {
		tpl, ok := byMessage.Template(msg)
		got, gotOK := byLine.TemplateOf(signature.ReadLine(msg))
		require.Equal(t, ok, gotOK, msg)
		require.Equal(t, tpl, got, msg)
		if tpl != nil {
			tpls = append(tpls, tpl)
		}
	}
	keep := func(k int) bool { return k%2 == 1 }
	for _, msg := range msgs {
		l := signature.ReadLine(msg)
		raw, err := json.Marshal(l)
		require.NoError(t, err)
		var kept signature.Line
		require.NoError(t, json.Unmarshal(raw, &kept))
		require.Equal(t, l, kept)
		require.Equal(t, signature.Values(msg), l.Values)
		for _, tpl := range tpls {
			vals, ok := signature.Match(tpl, msg)
			got, gotOK := kept.Match(tpl)
			require.Equal(t, ok, gotOK, "%q ~ %q", msg, tpl)
			require.Equal(t, vals, got, "%q ~ %q", msg, tpl)
			require.Equal(t, ok, kept.Matches(tpl))
			require.Equal(t, tpl.WildcardValues(msg), tpl.WildcardValuesOf(kept))
			fixed, remap, ok := tpl.Fix(msg, keep)
			gotFixed, gotRemap, gotOK := tpl.FixLine(kept, keep)
			require.Equal(t, ok, gotOK)
			require.Equal(t, fixed, gotFixed)
			require.Equal(t, remap, gotRemap)
		}
	}
}
