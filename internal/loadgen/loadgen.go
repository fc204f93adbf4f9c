// Package loadgen streams synthetic agent traces to a running engramd over
// its public NDJSON API and measures what a runtime would see: each event's
// acknowledgement latency, the time until the policy plane has classified
// everything, and the daemon's resident memory. `engram bench ingest` and
// the ingestion benchmarks (`make bench`) both use it; the raw-COPY floor
// they report beside it stages the very same lines ([Config.Lines]).
package loadgen

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/engram-dev/engram/api"
)

// Config is one load run.
type Config struct {
	// URL is engramd's base URL; Key a tenant API key.
	URL, Key string
	// Events are sent over Streams concurrent streams, spread over Threads
	// threads (tasks) of Agents agents. Events/Threads is the threads'
	// length: chat runtimes have threads of a couple of events.
	Events, Streams, Threads, Agents int
	// Rate is the events a second offered over all streams; 0 sends as
	// fast as the daemon takes them.
	Rate float64
	// Run names the run's threads, so that runs against one tenant do not
	// share threads; empty picks one from the clock.
	Run string
	// Client is the HTTP client; nil means http.DefaultClient.
	Client *http.Client
	// Event makes event i of the run for its thread and agent (a JSON
	// object, without the newline); nil makes a synthetic agent trace.
	Event func(rng *rand.Rand, i int, thread, agent string) []byte
}

// Defaults are `engram bench ingest`'s.
func Defaults() Config {
	return Config{Events: 200_000, Streams: 4, Threads: 2000, Agents: 50}
}

func (c *Config) check() error {
	if c.Events < 1 || c.Streams < 1 || c.Threads < 1 || c.Agents < 1 {
		return errors.New("events, streams, threads and agents must be positive")
	}
	if c.Run == "" {
		c.Run = strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	if c.Client == nil {
		c.Client = http.DefaultClient
	}
	c.URL = strings.TrimSuffix(c.URL, "/")
	return nil
}

// Result is what a run measured.
type Result struct {
	Acked, Refused int
	// AckedIn is the time until the last acknowledgement; ClassifiedIn
	// until nothing of the tenant was pending classification any more.
	AckedIn, ClassifiedIn time.Duration
	// Latencies are the acknowledged events' latencies, sorted.
	Latencies []time.Duration
	// ResidentBytes is the daemon's resident memory at the end, from its
	// /metrics (0 when it does not say).
	ResidentBytes float64
}

// AckRate and ClassifiedRate are events a second.
func (r Result) AckRate() float64        { return float64(r.Acked) / r.AckedIn.Seconds() }
func (r Result) ClassifiedRate() float64 { return float64(r.Acked) / r.ClassifiedIn.Seconds() }

// Latency is the p-quantile (0..1) of the acknowledgement latencies.
func (r Result) Latency(p float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	return r.Latencies[min(len(r.Latencies)-1, int(p*float64(len(r.Latencies))))]
}

// Progress is told how many events were acknowledged so far, and whether
// the run is now waiting for classification (classified is then how many
// the daemon classified since the run began, by its /metrics, or -1 when
// it does not say); it is called about once a second.
type Progress func(acked int, classifying bool, classified int)

// Run sends cfg's events and waits until they are classified.
func Run(ctx context.Context, cfg Config, progress Progress) (Result, error) {
	if err := cfg.check(); err != nil {
		return Result{}, err
	}
	if progress == nil {
		progress = func(int, bool, int) {}
	}
	start := time.Now()
	before := Classified(ctx, cfg)
	var (
		mu      sync.Mutex
		res     Result
		acked   atomic.Int64
		wg      sync.WaitGroup
		errs    = make([]error, cfg.Streams)
		done    = make(chan struct{})
		tickerQ = time.NewTicker(time.Second)
	)
	defer tickerQ.Stop()
	go func() {
		for {
			select {
			case <-done:
				return
			case <-tickerQ.C:
				progress(int(acked.Load()), false, 0)
			}
		}
	}()
	for s := range cfg.Streams {
		wg.Go(func() {
			lat, bad, err := stream(ctx, cfg, s, &acked)
			mu.Lock()
			res.Latencies, res.Refused, errs[s] = append(res.Latencies, lat...), res.Refused+bad, err
			mu.Unlock()
		})
	}
	wg.Wait()
	close(done)
	if err := errors.Join(errs...); err != nil {
		return Result{}, err
	}
	res.AckedIn = time.Since(start)
	res.Acked = len(res.Latencies)
	slices.Sort(res.Latencies)

	tell := func() {
		n := Classified(ctx, cfg)
		if n >= 0 && before >= 0 {
			n -= before
		}
		progress(res.Acked, true, n)
	}
	if err := WaitClassified(ctx, cfg, tell); err != nil {
		return Result{}, err
	}
	res.ClassifiedIn = time.Since(start)
	res.ResidentBytes = ResidentMemory(ctx, cfg)
	return res, nil
}

// WaitClassified polls until none of the tenant's events is pending
// classification, calling waiting about once a second meanwhile.
func WaitClassified(ctx context.Context, cfg Config, waiting func()) error {
	if err := cfg.check(); err != nil {
		return err
	}
	last := time.Time{}
	for {
		var page struct{ Candidates []json.RawMessage }
		if err := cfg.get(ctx, "/v1/candidates?status=pending&limit=1", &page); err != nil {
			return err
		}
		if len(page.Candidates) == 0 {
			return nil
		}
		if waiting != nil && time.Since(last) > time.Second {
			waiting()
			last = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (cfg Config) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, "GET", cfg.URL+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+cfg.Key)
	res, err := cfg.Client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", path, res.Status, body)
	}
	return json.Unmarshal(body, v)
}

// stream sends its share of the events over one stream, at its share of
// the rate when there is one, and returns each acknowledged event's
// latency and how many were refused.
func stream(ctx context.Context, cfg Config, s int, acked *atomic.Int64) ([]time.Duration, int, error) {
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(ctx, "POST", cfg.URL+"/v1/events:stream", pr)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+cfg.Key)
	req.Header.Set("Content-Type", "application/x-ndjson")
	rate := cfg.Rate / float64(cfg.Streams)

	var sent sync.Map // line -> time sent
	go func() {
		w := bufio.NewWriterSize(pw, 64<<10)
		line := 0
		begin := time.Now()
		for ev := range cfg.lines(s) {
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
			sent.Store(line, time.Now())
			if _, err := w.Write(ev.Line); err != nil {
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

	res, err := cfg.Client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
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
			acked.Add(1)
		}
	}
	return lat, refused, sc.Err()
}

// ResidentMemory reads process_resident_memory_bytes from engramd's
// /metrics, or 0.
func ResidentMemory(ctx context.Context, cfg Config) float64 {
	return max(0, metric(ctx, cfg, "process_resident_memory_bytes"))
}

// Classified is how many events engramd has classified since it started
// (engram_events_classified_total over every outcome), or -1 when its
// /metrics does not say.
func Classified(ctx context.Context, cfg Config) int {
	v := metric(ctx, cfg, "engram_events_classified_total")
	if v < 0 {
		return -1
	}
	return int(v)
}

// metric sums the samples of a metric family on engramd's /metrics; -1
// when there are none, or no /metrics.
func metric(ctx context.Context, cfg Config, name string) float64 {
	req, err := http.NewRequestWithContext(ctx, "GET", strings.TrimSuffix(cfg.URL, "/")+"/metrics", nil)
	if err != nil {
		return -1
	}
	client := cfg.Client
	if client == nil {
		client = http.DefaultClient
	}
	res, err := client.Do(req)
	if err != nil {
		return -1
	}
	defer res.Body.Close()
	sum, found := 0.0, false
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		fields := strings.Fields(line)
		if f, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
			sum, found = sum+f, true
		}
	}
	if !found {
		return -1
	}
	return sum
}
