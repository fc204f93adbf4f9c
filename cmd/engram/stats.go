package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/engram-dev/engram/api"
)

// statsCommand serves `engram stats writes`.
func statsCommand(c *cli, ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageErrorf("stats needs a command: writes")
	}
	switch args[0] {
	case "writes":
		if _, err := parse(c.flags("stats writes"), args[1:], 0, "[--json]"); err != nil {
			return err
		}
		return c.call(ctx, "GET", "/v1/stats/writes", nil, nil, c.orTable(c.writeStatsTables))
	case "help":
		return errHelp
	}
	return usageErrorf("unknown command stats %s", args[0])
}

// writeStatsTables prints the write path's metrics (write-path RFC
// §12.12.3): writes by layer and outcome with their rates, rejections by
// gate and reason, the gates' latencies, and the review queue.
func (c *cli) writeStatsTables(b []byte) error {
	var st api.WriteStats
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("decode write stats: %w", err)
	}
	fmt.Fprintf(c.stdout, "Writes through this daemon since it started, %s (%s ago):\n\n",
		stamp(st.Since), st.At.Sub(st.Since).Round(time.Second))
	if st.All.Writes == 0 {
		fmt.Fprintln(c.stdout, "no writes")
	} else {
		w := c.tabwriter()
		row(w, "LAYER", "WRITES", "CREATED", "ABSORBED", "MERGED", "CONTESTED", "QUEUED", "REJECTED", "ACCEPTED", "WAR", "DEDUP")
		all := st.All
		all.Layer = "all"
		for _, l := range append(st.Layers, all) {
			o := l.Outcomes
			row(w, l.Layer, num(l.Writes), num(o.Created), num(o.Absorbed), num(o.Merged), num(o.Contested), num(o.Queued), num(o.Rejected),
				ratio(l.AcceptanceRate), ratio(l.WAR), ratio(l.DedupHitRate))
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}

	fmt.Fprintln(c.stdout)
	if len(st.Rejections) == 0 {
		fmt.Fprintln(c.stdout, "no rejections")
	} else {
		w := c.tabwriter()
		row(w, "REJECTED BY", "REASON", "COUNT", "SHARE")
		for _, r := range st.Rejections {
			row(w, r.Gate, r.Reason, num(r.Count), ratio(&r.Share))
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}

	fmt.Fprintln(c.stdout)
	if len(st.Gates) > 0 {
		w := c.tabwriter()
		row(w, "GATE", "RUNS", "MEAN", "P50", "P95", "P99")
		for _, g := range st.Gates {
			row(w, g.Gate, num(g.Count), latency(g.MeanSeconds), latency(g.P50Seconds), latency(g.P95Seconds), latency(g.P99Seconds))
		}
		if err := w.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(c.stdout, "(percentiles interpolated within the histogram's buckets)")
		fmt.Fprintln(c.stdout)
	}

	fmt.Fprintf(c.stdout, "Tampered provenance stamps found: %d\n", st.TamperedStamps)
	q := st.Reviews
	fmt.Fprintf(c.stdout, "Review queue of this daemon's tenants: %d pending", q.Pending)
	if q.OldestAt != nil {
		fmt.Fprintf(c.stdout, ", the oldest queued %s (%s ago)", stamp(*q.OldestAt), age(q.OldestAgeSeconds))
	}
	fmt.Fprintf(c.stdout, "; %d escalated since the daemon started\n", q.Escalations)
	if len(q.Tenants) == 0 {
		return nil
	}
	w := c.tabwriter()
	row(w, "TENANT", "PENDING", "OLDEST", "AGE")
	for _, t := range q.Tenants {
		row(w, t.Tenant, num(t.Pending), stamp(t.OldestAt), age(t.OldestAgeSeconds))
	}
	return w.Flush()
}

func num(n int64) string { return strconv.FormatInt(n, 10) }

// ratio prints a rate with two decimals, or "-" when there is none.
func ratio(f *float64) string {
	if f == nil {
		return "-"
	}
	return strconv.FormatFloat(*f, 'f', 2, 64)
}

// latency prints seconds as a duration to three significant digits.
func latency(s float64) string {
	d := time.Duration(s * float64(time.Second))
	r := time.Duration(1)
	for d >= 1000*r && r < time.Millisecond {
		r *= 10
	}
	return d.Round(r).String()
}

// age prints seconds as a duration to the second.
func age(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Second).String()
}
