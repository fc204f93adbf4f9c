package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/internal/loadgen"
)

// benchIngest serves `engram bench ingest`: it streams synthetic agent
// traces to engramd over several NDJSON streams ([loadgen.Run]), measures
// each event's acknowledgement latency, waits until the policy plane has
// classified everything, and reports rates, latency percentiles and the
// daemon's resident memory. It sends only to the engramd it is pointed at.
func benchIngest(c *cli, ctx context.Context, args []string) error {
	def := loadgen.Defaults()
	fs := c.flags("bench ingest")
	events := fs.Int("events", def.Events, "events to send")
	streams := fs.Int("streams", def.Streams, "concurrent streams")
	threads := fs.Int("threads", def.Threads, "threads (tasks) the events spread over")
	agents := fs.Int("agents", def.Agents, "agents the events come from")
	rate := fs.Float64("rate", 0, "events a second to offer, over all streams; 0 sends as fast as the daemon takes them")
	if _, err := parse(fs, args, 0, "[--events N] [--streams N] [--threads N] [--agents N] [--rate R]"); err != nil {
		return err
	}
	if *events < 1 || *streams < 1 || *threads < 1 || *agents < 1 {
		return usageErrorf("--events, --streams, --threads and --agents must be positive")
	}
	// The load is loadgen's own streams, which time each acknowledgement;
	// the client only checks the URL and key first.
	if _, err := c.client(); err != nil {
		return err
	}
	cfg := loadgen.Config{URL: c.url, Key: c.key, Events: *events, Streams: *streams, Threads: *threads, Agents: *agents, Rate: *rate}
	res, err := loadgen.Run(ctx, cfg, func(acked int, classifying bool, classified int) {
		if classifying {
			fmt.Fprintf(c.stderr, "\racknowledged %d, classified %d   ", acked, max(0, classified))
		} else {
			fmt.Fprintf(c.stderr, "\racknowledged %d/%d   ", acked, *events)
		}
	})
	fmt.Fprint(c.stderr, "\r\033[K")
	if err != nil {
		return err
	}
	offered := "as fast as taken"
	if *rate > 0 {
		offered = fmt.Sprintf("offered at %.0f/s", *rate)
	}
	round := func(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }
	fmt.Fprintf(c.stdout, "events sent        %d over %d streams (%d threads, %d agents), %s\n", *events, *streams, *threads, *agents, offered)
	fmt.Fprintf(c.stdout, "acknowledged       %d in %.2fs: %.0f events/s (refused %d)\n", res.Acked, res.AckedIn.Seconds(), res.AckRate(), res.Refused)
	fmt.Fprintf(c.stdout, "classified         all in %.2fs: %.0f events/s end to end\n", res.ClassifiedIn.Seconds(), res.ClassifiedRate())
	fmt.Fprintf(c.stdout, "ack latency        p50 %s  p99 %s  max %s\n", round(res.Latency(0.50)), round(res.Latency(0.99)), round(res.Latency(1)))
	if res.ResidentBytes > 0 {
		fmt.Fprintf(c.stdout, "daemon memory      %.0f MB resident\n", res.ResidentBytes/(1<<20))
	}
	return nil
}

// explainPolicy serves `engram policy explain FILE|-`.
func explainPolicy(c *cli, ctx context.Context, args []string) error {
	fs := c.flags("policy explain")
	pos, err := parse(fs, args, 1, "FILE|-")
	if err != nil {
		return err
	}
	var body []byte
	if pos[0] == "-" {
		body, err = io.ReadAll(c.stdin)
	} else {
		body, err = os.ReadFile(pos[0])
	}
	if err != nil {
		return err
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	out, err := fetch(ctx, cl, "POST", "/v1/policy:explain", nil, body)
	if err != nil {
		return err
	}
	if c.json {
		_, err = c.stdout.Write(out)
		return err
	}
	var x api.PolicyExplanation
	if err := json.Unmarshal(out, &x); err != nil {
		return err
	}
	d := x.Decision
	verdict := "kept as " + string(d.Type)
	if d.Drop {
		verdict = "dropped"
	}
	by := "the built-in classifier (" + d.Classifier + ")"
	if len(d.Rules) > 0 {
		by = "rule(s) " + strings.Join(d.Rules, ", ") + " over " + by
	}
	fmt.Fprintf(c.stdout, "policy       %s\ndecision     %s, by %s\n", x.Policy, verdict, by)
	if !d.Drop {
		fmt.Fprintf(c.stdout, "sensitivity  %s\nconfidence   %.2f\nvisibility   %s\n", d.Sensitivity, d.Confidence, d.Visibility)
		if d.Scope != "" {
			fmt.Fprintf(c.stdout, "scope        %s\n", d.Scope)
		}
		if d.Decay != nil {
			decay, err := json.Marshal(d.Decay)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "decay        %s\n", decay)
		}
	}
	if len(x.Redactions) > 0 {
		fmt.Fprintf(c.stdout, "redacted     %s\n", strings.Join(x.Redactions, ", "))
	}
	return nil
}
