package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/engram-dev/engram/api"
)

// benchIngest serves `engram bench ingest`: it streams synthetic agent
// traces to engramd over several NDJSON streams, measures each event's
// acknowledgement latency, waits until the policy plane has classified
// everything, and reports rates, latency percentiles and the daemon's
// resident memory. It sends only to the engramd it is pointed at.
func benchIngest(c *cli, ctx context.Context, args []string) error {
	fs := c.flags("bench ingest")
	events := fs.Int("events", 200_000, "events to send")
	streams := fs.Int("streams", 4, "concurrent streams")
	threads := fs.Int("threads", 2000, "threads (tasks) the events spread over")
	agents := fs.Int("agents", 50, "agents the events come from")
	rate := fs.Float64("rate", 0, "events a second to offer, over all streams; 0 sends as fast as the daemon takes them")
	if _, err := parse(fs, args, 0, "[--events N] [--streams N] [--threads N] [--agents N] [--rate R]"); err != nil {
		return err
	}
	if *events < 1 || *streams < 1 || *threads < 1 || *agents < 1 {
		return usageErrorf("--events, --streams, --threads and --agents must be positive")
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)

	start := time.Now()
	var (
		mu        sync.Mutex
		latencies []time.Duration
		refused   int
		wg        sync.WaitGroup
		errs      = make([]error, *streams)
	)
	for s := range *streams {
		wg.Go(func() {
			lat, bad, err := benchStream(ctx, cl, run, s, *streams, *events, *threads, *agents, *rate/float64(*streams))
			mu.Lock()
			latencies, refused, errs[s] = append(latencies, lat...), refused+bad, err
			mu.Unlock()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	acked := time.Since(start)

	// Wait for classification: the tenant's pending candidates drain.
	for {
		body, err := cl.do(ctx, "GET", "/v1/candidates", map[string][]string{"status": {"pending"}, "limit": {"1"}}, nil)
		if err != nil {
			return err
		}
		var page struct{ Candidates []json.RawMessage }
		if err := json.Unmarshal(body, &page); err != nil {
			return err
		}
		if len(page.Candidates) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	classified := time.Since(start)

	slices.Sort(latencies)
	pct := func(p float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[min(len(latencies)-1, int(p*float64(len(latencies))))]
	}
	rss := residentMemory(ctx, c.url)
	n := len(latencies)
	offered := "as fast as taken"
	if *rate > 0 {
		offered = fmt.Sprintf("offered at %.0f/s", *rate)
	}
	fmt.Fprintf(c.stdout, "events sent        %d over %d streams (%d threads, %d agents), %s\n", *events, *streams, *threads, *agents, offered)
	fmt.Fprintf(c.stdout, "acknowledged       %d in %.2fs: %.0f events/s (refused %d)\n", n, acked.Seconds(), float64(n)/acked.Seconds(), refused)
	fmt.Fprintf(c.stdout, "classified         all in %.2fs: %.0f events/s end to end\n", classified.Seconds(), float64(n)/classified.Seconds())
	fmt.Fprintf(c.stdout, "ack latency        p50 %s  p99 %s  max %s\n", pct(0.50).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond), pct(1).Round(10*time.Microsecond))
	if rss > 0 {
		fmt.Fprintf(c.stdout, "daemon memory      %.0f MB resident\n", rss/(1<<20))
	}
	return nil
}

// benchStream sends its share of the events over one stream, at rate
// events a second when rate > 0, and returns each acknowledged event's
// latency.
func benchStream(ctx context.Context, cl *client, run string, stream, streams, events, threads, agents int, rate float64) ([]time.Duration, int, error) {
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(ctx, "POST", cl.base+"/v1/events:stream", pr)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+cl.key)
	req.Header.Set("Content-Type", "application/x-ndjson")

	var sent sync.Map // line -> time sent
	go func() {
		rng := rand.New(rand.NewPCG(uint64(stream), 42))
		w := bufio.NewWriterSize(pw, 64<<10)
		line := 0
		begin := time.Now()
		for i := stream; i < events; i += streams {
			line++
			if rate > 0 {
				// Pace: line n leaves at n/rate seconds; flush what is due.
				if d := time.Until(begin.Add(time.Duration(float64(line) / rate * float64(time.Second)))); d > 0 {
					if w.Flush() != nil {
						break
					}
					time.Sleep(d)
				}
			}
			thread := rng.IntN(threads)
			sent.Store(line, time.Now())
			if _, err := w.Write(syntheticEvent(rng, run, thread, thread%agents, i)); err != nil {
				break
			}
			if rate == 0 && line%64 == 0 {
				if err := w.Flush(); err != nil {
					break
				}
			}
		}
		_ = w.Flush()
		_ = pw.Close()
	}()

	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		return nil, 0, fmt.Errorf("stream refused: %s: %s", res.Status, b)
	}
	var lat []time.Duration
	refused := 0
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		var a api.StreamAck
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			return nil, 0, fmt.Errorf("read acknowledgement: %w", err)
		}
		if a.ID == "" {
			refused++
			continue
		}
		if t, ok := sent.LoadAndDelete(a.Line); ok {
			lat = append(lat, time.Since(t.(time.Time)))
		}
	}
	return lat, refused, sc.Err()
}

var benchTools = []string{"shell", "git", "make", "go_test", "npm", "docker", "curl", "kubectl"}

// syntheticEvent is one line of an agent trace: mostly tool calls and
// their outputs, some observations, errors and facts.
func syntheticEvent(rng *rand.Rand, run string, thread, agent, i int) []byte {
	ev := map[string]any{
		"agent_id":  fmt.Sprintf("bench-agent-%d", agent),
		"thread_id": fmt.Sprintf("bench-%s-%d", run, thread),
		"tags":      []string{"bench"},
	}
	tool := benchTools[rng.IntN(len(benchTools))]
	switch r := rng.IntN(100); {
	case r < 35:
		ev["kind"] = "tool_call"
		ev["tool"] = map[string]any{"name": tool, "call_id": strconv.Itoa(i), "arguments": map[string]any{"cmd": tool + " run --verbose ./...", "cwd": "/srv/app"}}
	case r < 70:
		ev["kind"] = "tool_output"
		ev["tool"] = map[string]any{"name": tool, "call_id": strconv.Itoa(i),
			"result": strings.Repeat("ok   github.com/acme/app/pkg 0.412s\n", 1+rng.IntN(8))}
	case r < 85:
		ev["kind"] = "observation"
		ev["text"] = fmt.Sprintf("the build of module %d finished in %d ms", rng.IntN(40), rng.IntN(9000))
	case r < 95:
		ev["kind"] = "error"
		ev["error"] = map[string]any{"message": fmt.Sprintf("exit status %d: undefined reference to `sym%d'", 1+rng.IntN(3), rng.IntN(50)), "tool": tool}
	case r < 99:
		ev["kind"] = "fact"
		ev["fact"] = map[string]any{"subject": fmt.Sprintf("repo-%d", thread%100), "predicate": "build_tool", "object": tool,
			"conditions": map[string]any{"os": "linux"}}
	default:
		ev["kind"] = "user_input"
		ev["text"] = "please also run the integration tests"
	}
	b, _ := json.Marshal(ev)
	return append(b, '\n')
}

// residentMemory reads process_resident_memory_bytes from engramd's
// /metrics, or 0.
func residentMemory(ctx context.Context, base string) float64 {
	req, err := http.NewRequestWithContext(ctx, "GET", strings.TrimSuffix(base, "/")+"/metrics", nil)
	if err != nil {
		return 0
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "process_resident_memory_bytes "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
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
	out, err := cl.do(ctx, "POST", "/v1/policy:explain", nil, body)
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
