package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/engram-dev/engram/api"
)

// jobsCommand serves `engram jobs list` and `engram jobs run NAME`.
func jobsCommand(c *cli, ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageErrorf("jobs needs a command: list or run")
	}
	switch args[0] {
	case "list":
		if _, err := parse(c.flags("jobs list"), args[1:], 0, ""); err != nil {
			return err
		}
		return c.call(ctx, "GET", "/v1/jobs", nil, nil, c.orTable(c.jobsTable))
	case "run":
		return jobsRun(c, ctx, args[1:])
	case "help":
		return errHelp
	}
	return usageErrorf("unknown command jobs %s", args[0])
}

func (c *cli) jobsTable(b []byte) error {
	var ov api.JobsOverview
	if err := json.Unmarshal(b, &ov); err != nil {
		return fmt.Errorf("decode jobs: %w", err)
	}
	role := "follower: another daemon runs the scheduled ticks"
	if ov.Leader {
		role = "leader: runs the scheduled ticks"
	}
	fmt.Fprintf(c.stdout, "node %s, %s\n", ov.Node, role)
	w := c.tabwriter()
	row(w, "JOB", "SCHEDULE", "NEXT", "LAST RUN", "STATUS", "STARTED", "TOOK", "COUNTS")
	for _, j := range ov.Jobs {
		next, last, status, started, took, counts := "-", "-", "-", "-", "-", "-"
		if j.NextRun != nil {
			next = stamp(*j.NextRun)
		}
		if r := j.LastRun; r != nil {
			last, status, started = strconv.FormatInt(r.ID, 10), r.Status, stamp(r.StartedAt)
			if r.EndedAt != nil {
				took = r.EndedAt.Sub(r.StartedAt).Round(time.Millisecond).String()
			}
			counts = formatCounts(r.Counts)
			if j.Cursor != nil && r.Status != "succeeded" {
				status += " (resumes)"
			}
		}
		row(w, j.Name, j.Schedule, next, last, status, started, took, counts)
	}
	return w.Flush()
}

// formatCounts writes counts as name=n, by name.
func formatCounts(counts map[string]int64) string {
	if len(counts) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(counts))
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, k+"="+strconv.FormatInt(counts[k], 10))
	}
	return strings.Join(parts, " ")
}

// jobsRun starts a run now and, with --wait, follows it to its end.
func jobsRun(c *cli, ctx context.Context, args []string) error {
	fs := c.flags("jobs run")
	wait := fs.Bool("wait", false, "")
	pos, err := parse(fs, args, 1, "NAME [--wait]")
	if err != nil {
		return err
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	b, err := fetch(ctx, cl, "POST", "/v1/jobs/"+url.PathEscape(pos[0])+":run", nil, nil)
	if err != nil {
		return err
	}
	var started api.JobStarted
	if err := json.Unmarshal(b, &started); err != nil {
		return fmt.Errorf("decode run: %w", err)
	}
	if !*wait {
		if c.json {
			return c.write(b)
		}
		fmt.Fprintf(c.stdout, "started run %d of %s on %s\n", started.Run.ID, started.Run.Job, started.Run.Node)
		return nil
	}
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		ov, err := cl.Jobs(ctx)
		if err != nil {
			return err
		}
		for _, j := range ov.Jobs {
			r := j.LastRun
			if j.Name != started.Run.Job || r == nil || r.ID != started.Run.ID || r.Status == "running" {
				continue
			}
			if c.json {
				out, _ := json.Marshal(r)
				return c.write(out)
			}
			took := "-"
			if r.EndedAt != nil {
				took = r.EndedAt.Sub(r.StartedAt).Round(time.Millisecond).String()
			}
			fmt.Fprintf(c.stdout, "run %d of %s %s in %s: %s\n", r.ID, r.Job, r.Status, took, formatCounts(r.Counts))
			if r.Status != "succeeded" {
				return fmt.Errorf("run %d of %s %s: %s", r.ID, r.Job, r.Status, r.Error)
			}
			return nil
		}
	}
}
