package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
)

// skillName is an Agent Skills name (https://agentskills.io/specification):
// lowercase letters and digits in hyphen-joined runs, at most 64 of them.
// The CLI checks the name engramd sends before it makes a folder of it.
var skillName = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// skillsCommand serves `engram skills export DIR [--min-success-rate R]`:
// every active procedure as DIR/NAME/SKILL.md, in the Agent Skills format,
// as GET /v1/records/{id}/skill.md renders it (issue 15, part 4). It lists
// the competence records, then fetches each one's SKILL.md: the CLI renders
// nothing itself.
func skillsCommand(c *cli, ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "export" {
		return usageErrorf("usage: engram skills export DIR [--min-success-rate R]")
	}
	fs := c.flags("skills export")
	minRate := fs.String("min-success-rate", "0", "")
	pos, err := parse(fs, args[1:], 1, "DIR [--min-success-rate R]")
	if err != nil {
		return err
	}
	rate, err := strconv.ParseFloat(*minRate, 64)
	if err != nil || rate < 0 || rate > 1 {
		return usageErrorf("--min-success-rate: %q is not a rate from 0 to 1", *minRate)
	}
	dir := pos[0]
	cl, err := c.client()
	if err != nil {
		return err
	}

	var recs []memory.Record
	q := url.Values{"type": {string(memory.Competence)}, "status": {string(memory.Active)}, "limit": {"1000"}}
	for {
		b, err := fetch(ctx, cl, "GET", "/v1/records", q, nil)
		if err != nil {
			return err
		}
		var page api.RecordPage
		if err := json.Unmarshal(b, &page); err != nil {
			return fmt.Errorf("decode page: %w", err)
		}
		recs = append(recs, page.Records...)
		if page.NextCursor == "" {
			break
		}
		q.Set("cursor", page.NextCursor)
	}
	var chosen []memory.Record
	for _, r := range recs {
		var p memory.CompetencePayload
		if err := json.Unmarshal(r.Payload, &p); err != nil {
			return fmt.Errorf("decode procedure %s: %w", r.ID, err)
		}
		if smoothedRate(p.Performance) >= rate {
			chosen = append(chosen, r)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	seen := map[string]string{}
	for i, r := range chosen {
		md, err := fetch(ctx, cl, "GET", "/v1/records/"+r.ID.String()+"/skill.md", nil, nil)
		if err != nil {
			return fmt.Errorf("procedure %s: %w", r.ID, err)
		}
		name, err := frontMatterName(md)
		if err != nil {
			return fmt.Errorf("procedure %s: %w", r.ID, err)
		}
		if other, dup := seen[name]; dup {
			return fmt.Errorf("procedures %s and %s both export as %s", other, r.ID, name)
		}
		seen[name] = r.ID.String()
		if err := writeSkill(filepath.Join(dir, name), md); err != nil {
			return err
		}
		fmt.Fprintf(c.stderr, "[%d/%d] %s\n", i+1, len(chosen), name)
	}
	fmt.Fprintf(c.stdout, "exported %s to %s", count(len(chosen), "skill"), dir)
	if skipped := len(recs) - len(chosen); skipped > 0 {
		fmt.Fprintf(c.stdout, " (%d below success rate %.2f left out)", skipped, rate)
	}
	fmt.Fprintln(c.stdout)
	return nil
}

// smoothedRate is (s+1)/(s+f+2), as `engram procedures` shows it and
// retrieval ranks by it; 0.5 for a procedure with no record.
func smoothedRate(perf *memory.Performance) float64 {
	if perf == nil {
		return 0.5
	}
	return memory.SuccessRate(perf.Successes, perf.Failures)
}

// frontMatterName is the name field of a SKILL.md, checked against the
// specification's rule before it names a folder.
func frontMatterName(md []byte) (string, error) {
	lines := bytes.Split(md, []byte("\n"))
	if len(lines) < 2 || string(lines[0]) != "---" {
		return "", fmt.Errorf("the SKILL.md has no front matter")
	}
	for _, l := range lines[1:] {
		if string(l) == "---" {
			break
		}
		if v, ok := bytes.CutPrefix(l, []byte("name: ")); ok {
			name := string(v)
			if len(name) > 64 || !skillName.MatchString(name) {
				return "", fmt.Errorf("the SKILL.md's name %q is not an Agent Skills name", name)
			}
			return name, nil
		}
	}
	return "", fmt.Errorf("the SKILL.md's front matter has no name")
}

// writeSkill writes md as folder/SKILL.md, whole or not at all: a file
// beside it renamed into place.
func writeSkill(folder string, md []byte) error {
	if err := os.MkdirAll(folder, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(folder, ".SKILL.md.*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(md); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(folder, "SKILL.md"))
}
