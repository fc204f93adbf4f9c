package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/client"
)

// eventsCommand runs engram events: send stages a file of events
// (POST /v1/events), as an agent runtime does.
func eventsCommand(c *cli, ctx context.Context, args []string) error {
	const use = "-f FILE [--wait] [--timeout 30s]"
	if len(args) == 0 || args[0] != "send" {
		return usageErrorf("usage: engram events send %s", use)
	}
	fs := c.flags("events send")
	file := fs.String("f", "", "")
	wait := fs.Bool("wait", false, "")
	timeout := fs.Duration("timeout", 30*time.Second, "")
	if _, err := parse(fs, args[1:], 0, use); err != nil {
		return err
	}
	body, err := c.readJSON(*file)
	if err != nil {
		return err
	}
	if err := c.call(ctx, "POST", "/v1/events", nil, body, c.orTable(c.stagedSummary)); err != nil {
		return err
	}
	if !*wait {
		return nil
	}
	return c.waitForThreads(ctx, body, *timeout)
}

// stagedSummary prints how many events were staged, and how many of them
// were retries of events staged before.
func (c *cli) stagedSummary(b []byte) error {
	var res api.StagedEvents
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	dup := 0
	for _, e := range res.Events {
		if e.Duplicate {
			dup++
		}
	}
	n := len(res.Events)
	line := fmt.Sprintf("staged %d event%s", n, plural(n))
	if dup > 0 {
		line += fmt.Sprintf(" (%d already staged)", dup)
	}
	_, err := fmt.Fprintln(c.stdout, line)
	return err
}

// waitForThreads waits until the policy plane has classified the events
// of body: each thread they name has its episode, and a thread they end
// with an outcome is closed. Staging is durable at once; classification
// follows within milliseconds on an idle daemon, which is what --wait
// waits for before, say, a consolidation pass is run by hand.
func (c *cli) waitForThreads(ctx context.Context, body json.RawMessage, timeout time.Duration) error {
	var events []struct {
		ThreadID string `json:"thread_id"`
		Kind     string `json:"kind"`
	}
	if json.Unmarshal(body, &events) != nil {
		events = events[:0]
		var one struct {
			ThreadID string `json:"thread_id"`
			Kind     string `json:"kind"`
		}
		if err := json.Unmarshal(body, &one); err != nil {
			return fmt.Errorf("read the events' threads: %w", err)
		}
		events = append(events, one)
	}
	closes := map[string]bool{} // thread → whether the events end it
	var order []string
	for _, e := range events {
		if _, seen := closes[e.ThreadID]; !seen {
			order = append(order, e.ThreadID)
		}
		closes[e.ThreadID] = closes[e.ThreadID] || e.Kind == "outcome"
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, thread := range order {
		for {
			var t struct {
				Status string `json:"status"`
			}
			err := cl.Do(ctx, "GET", "/v1/threads/"+url.PathEscape(thread), nil, nil, &t)
			var ce *client.Error
			switch {
			case err == nil && (t.Status == "closed" || !closes[thread]):
			case err == nil, errors.As(err, &ce) && ce.StatusCode() == http.StatusNotFound:
				select {
				case <-ctx.Done():
					return fmt.Errorf("thread %s was not classified within %s: is the policy plane running (engramd's log)?", thread, timeout)
				case <-time.After(50 * time.Millisecond):
				}
				continue
			default:
				return err
			}
			break
		}
	}
	_, err = fmt.Fprintf(c.stdout, "classified: %d thread%s\n", len(order), plural(len(order)))
	return err
}
