package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// anchor is the id GitHub gives a heading: lower case, punctuation but
// hyphens and underscores dropped, spaces as hyphens.
func anchor(heading string) string {
	s := strings.ToLower(strings.TrimSpace(heading))
	s = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`).ReplaceAllString(s, "")
	return strings.ReplaceAll(s, " ", "-")
}

var (
	fenceRe   = regexp.MustCompile("(?s)```.*?```")
	headingRe = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	linkRe    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
)

// Every relative link of the README and the pages of docs/ leads to a
// file that exists, and a link to a heading to a heading that exists: the
// pages move and split, and a reader following a link must land.
func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	pages := []string{filepath.Join(root, "README.md")}
	require.NoError(t, filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			pages = append(pages, path)
		}
		return err
	}))
	require.Greater(t, len(pages), 10, "the docs pages were found")
	text := map[string]string{}
	anchors := map[string]map[string]bool{}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		text[p] = fenceRe.ReplaceAllString(string(b), "")
		anchors[p] = map[string]bool{}
		for _, m := range headingRe.FindAllStringSubmatch(text[p], -1) {
			anchors[p][anchor(m[1])] = true
		}
	}
	var broken []string
	for _, p := range pages {
		for _, m := range linkRe.FindAllStringSubmatch(text[p], -1) {
			target := m[1]
			if regexp.MustCompile(`^[a-z]+:`).MatchString(target) {
				continue // a URL
			}
			path, frag, _ := strings.Cut(target, "#")
			file := p
			if path != "" {
				file = filepath.Join(filepath.Dir(p), path)
			}
			rel, _ := filepath.Rel(root, p)
			if _, err := os.Stat(file); err != nil {
				broken = append(broken, rel+": no file "+target)
				continue
			}
			if frag != "" && strings.HasSuffix(file, ".md") && !anchors[file][frag] {
				broken = append(broken, rel+": no heading "+target)
			}
		}
	}
	require.Empty(t, broken)
}
