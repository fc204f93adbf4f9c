package eval

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/memory"
)

// ConsolidateJob is the name of engramd's consolidation job, whose
// schedule a run sets.
const ConsolidateJob = "consolidate"

// DaemonConfig is how a run starts an engramd of its own.
type DaemonConfig struct {
	// Bin is the engramd binary.
	Bin string
	// DatabaseURL is a PostgreSQL database with pgvector; the daemon gets
	// a fresh schema of its own in it (Schema), migrated at start. With
	// Schema empty it uses the database as it is (migrated at start):
	// the tenant keeps a run apart from what else is there.
	DatabaseURL string
	Schema      string
	// Listen is the daemon's address; empty picks a free local port.
	Listen string
	// Consolidate is the consolidation job's schedule for the run, such
	// as "@every 1s"; "off" is a plain episode store that learns nothing.
	Consolidate string
	// Tenant is the tenant the agent's key is for (default "eval").
	Tenant string
	// Log receives the daemon's log; nil keeps only its last lines, for
	// errors.
	Log io.Writer
	// Keep leaves the schema in place after Stop, to look at with the
	// engram CLI; otherwise Stop drops it.
	Keep bool
	// Reuse migrates the schema as it is, creating it when missing,
	// instead of dropping it first: what earlier runs left stays.
	Reuse bool
}

// Daemon is an engramd process a run talks to: the agent through Client
// (a tenant key), the run through Ops (an operator key, for the jobs).
type Daemon struct {
	Client *Client
	Ops    *Client
	// URL is the daemon's database URL (its schema first on the
	// search_path).
	URL string

	cfg    DaemonConfig
	cmd    *exec.Cmd
	exited chan struct{}
	dir    string
	tail   *tailBuffer
}

// StartDaemon creates the daemon's schema and starts engramd on a free
// local port with a configuration file that sets the consolidation
// schedule, and returns once it is ready.
func StartDaemon(ctx context.Context, cfg DaemonConfig) (*Daemon, error) {
	if cfg.Tenant == "" {
		cfg.Tenant = "eval"
	}
	dbURL := cfg.DatabaseURL
	if cfg.Schema != "" {
		prepare := resetSchema
		if cfg.Reuse {
			prepare = createSchema
		}
		if err := prepare(ctx, cfg.DatabaseURL, cfg.Schema); err != nil {
			return nil, err
		}
		dbURL = withSearchPath(cfg.DatabaseURL, cfg.Schema)
	}
	addr := cfg.Listen
	if addr == "" {
		var err error
		if addr, err = freeAddr(); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp("", "engram-eval-")
	if err != nil {
		return nil, err
	}
	d := &Daemon{cfg: cfg, dir: dir, URL: dbURL, tail: &tailBuffer{}}
	if err := d.writeConfig(cfg.Consolidate); err != nil {
		return nil, err
	}
	key, ops := newKey(), newKey()
	d.cmd = exec.Command(cfg.Bin, "run", "--migrate")
	d.cmd.Env = append(os.Environ(), "DATABASE_URL="+d.URL, "ENGRAM_LISTEN="+addr, "ENGRAM_CONFIG="+d.configPath(),
		"ENGRAM_API_KEYS=curator@"+cfg.Tenant+":"+key+",*:"+ops, "ENGRAM_LOG_LEVEL=warn")
	var logTo io.Writer = d.tail
	if cfg.Log != nil {
		logTo = io.MultiWriter(d.tail, cfg.Log)
	}
	d.cmd.Stdout, d.cmd.Stderr = io.Discard, logTo
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start engramd (%s): %w", cfg.Bin, err)
	}
	d.exited = make(chan struct{})
	go func() { _ = d.cmd.Wait(); close(d.exited) }()
	base := "http://" + addr
	// A daemon that stops answering fails the run instead of hanging it.
	hc := &http.Client{Timeout: time.Minute}
	d.Client, d.Ops = &Client{BaseURL: base, Key: key, HTTP: hc}, &Client{BaseURL: base, Key: ops, HTTP: hc}
	// engramd migrates a fresh schema before it is ready: seconds on a quiet
	// machine, a minute or more on a busy one with a large catalog.
	if err := d.ready(ctx, 3*time.Minute); err != nil {
		_ = d.Stop(context.Background()) // the readiness error is the one to report
		return nil, err
	}
	return d, nil
}

// Wait returns when the daemon exits or ctx is done.
func (d *Daemon) Wait(ctx context.Context) {
	select {
	case <-d.exited:
	case <-ctx.Done():
	}
}

func (d *Daemon) configPath() string { return filepath.Join(d.dir, "engram.yaml") }

// writeConfig writes the daemon's configuration: the consolidation job's
// schedule, everything else engramd's defaults.
func (d *Daemon) writeConfig(schedule string) error {
	doc := fmt.Sprintf("# written by engram-eval\njobs:\n  %s: %q\n", ConsolidateJob, schedule)
	return os.WriteFile(d.configPath(), []byte(doc), 0o600)
}

func (d *Daemon) ready(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, d.Client.BaseURL+"/readyz", nil)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-d.exited:
			return fmt.Errorf("engramd exited at start: %s", d.tail)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("engramd not ready after %s: %s", within, d.tail)
		}
	}
}

// Stop stops the daemon (SIGTERM, then SIGKILL after 10 s) and, unless
// the configuration keeps it, drops its schema.
func (d *Daemon) Stop(ctx context.Context) error {
	if d.cmd != nil && d.cmd.Process != nil {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(10 * time.Second):
			_ = d.cmd.Process.Kill()
			<-d.exited
		}
	}
	_ = os.RemoveAll(d.dir)
	if d.cfg.Keep || d.cfg.Schema == "" {
		return nil
	}
	return dropSchema(ctx, d.cfg.DatabaseURL, d.cfg.Schema)
}

// Settle returns once the thread's episode is closed: its events are
// classified and the episode is memory a retrieval can find.
func (d *Daemon) Settle(ctx context.Context, thread string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		t, err := d.Client.Thread(ctx, thread)
		if err == nil && t.Status == "closed" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("thread %s not closed after a minute (last: %v %v)", thread, t.Status, err)
		}
		if err := d.alive(ctx, 10*time.Millisecond); err != nil {
			return err
		}
	}
}

// Learn returns once a consolidation run that started after the call has
// ended, on engramd's own schedule: the episodes settled before it are
// consolidated. With consolidation off it returns at once.
func (d *Daemon) Learn(ctx context.Context) error {
	if d.cfg.Consolidate == "off" {
		return nil
	}
	since := time.Now()
	deadline := since.Add(2 * time.Minute)
	for {
		ov, err := d.Ops.Jobs(ctx)
		if err != nil {
			return err
		}
		for _, j := range ov.Jobs {
			r := j.LastRun
			if j.Name != ConsolidateJob || r == nil || r.EndedAt == nil || !r.StartedAt.After(since) {
				continue
			}
			// A pass that failed is counted, not fatal: the report
			// states how many failed (FailedPasses).
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no consolidation run ended within 2 minutes (schedule %q)", d.cfg.Consolidate)
		}
		if err := d.alive(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// FailedPasses is the number of consolidation passes that failed, as
// engramd's /metrics counts them (engram_job_failures_total).
func (d *Daemon) FailedPasses(ctx context.Context) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.Client.BaseURL+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	res, err := d.Client.http().Do(req)
	if err != nil {
		return 0, fmt.Errorf("read metrics: %w", err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, fmt.Errorf("read metrics: %w", err)
	}
	return failuresIn(string(b), ConsolidateJob), nil
}

// failuresIn is the value of engram_job_failures_total for job in a
// Prometheus text exposition (0 when absent).
func failuresIn(metrics, job string) int {
	prefix := `engram_job_failures_total{job="` + job + `"} `
	for line := range strings.Lines(metrics) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			var n float64
			if _, err := fmt.Sscan(v, &n); err == nil {
				return int(n)
			}
		}
	}
	return 0
}

// Freeze pauses consolidation the way an operator does: the job's
// schedule set to off in the configuration file, reloaded on SIGHUP. It
// returns once GET /v1/jobs shows the job off and no run of it in
// progress.
func (d *Daemon) Freeze(ctx context.Context) error {
	if err := d.writeConfig("off"); err != nil {
		return err
	}
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		return fmt.Errorf("reload engramd: %w", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ov, err := d.Ops.Jobs(ctx)
		if err != nil {
			return err
		}
		for _, j := range ov.Jobs {
			if j.Name == ConsolidateJob && j.Schedule == "off" && (j.LastRun == nil || j.LastRun.EndedAt != nil) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return errors.New("consolidation not paused 30 s after the reload")
		}
		if err := d.alive(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// Counts are the tenant's active records by type.
func (d *Daemon) Counts(ctx context.Context) (map[string]int, error) {
	recs, err := d.Client.Records(ctx, url.Values{"type": {string(memory.Competence), string(memory.PlanGraph),
		string(memory.Semantic), string(memory.Episodic)}})
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, r := range recs {
		out[string(r.Type)]++
	}
	return out, nil
}

// alive waits for d, or returns an error when the daemon has exited or
// ctx is done.
func (d *Daemon) alive(ctx context.Context, wait time.Duration) error {
	select {
	case <-d.exited:
		return fmt.Errorf("engramd exited: %s", d.tail)
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(wait):
		return nil
	}
}

// resetSchema drops the schema, if it is there, and creates it afresh.
func resetSchema(ctx context.Context, dbURL, schema string) error {
	id := pgx.Identifier{schema}.Sanitize()
	return execAll(ctx, dbURL, "DROP SCHEMA IF EXISTS "+id+" CASCADE", "CREATE SCHEMA "+id)
}

// createSchema creates the schema unless it is there.
func createSchema(ctx context.Context, dbURL, schema string) error {
	return execAll(ctx, dbURL, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize())
}

func dropSchema(ctx context.Context, dbURL, schema string) error {
	return execAll(ctx, dbURL, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
}

// execAll runs statements on a connection of their own.
func execAll(ctx context.Context, dbURL string, stmts ...string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", redactURL(dbURL), err)
	}
	defer conn.Close(ctx)
	for _, stmt := range stmts {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}

// withSearchPath is url with schema first on the search_path, then public
// (where pgvector's type lives), in place of any search_path it had.
func withSearchPath(dbURL, schema string) string {
	base, query, _ := strings.Cut(dbURL, "?")
	var params []string
	for p := range strings.SplitSeq(query, "&") {
		if p != "" && !strings.HasPrefix(p, "search_path=") {
			params = append(params, p)
		}
	}
	return base + "?" + strings.Join(append(params, "search_path="+schema+",public"), "&")
}

// redactURL is a database URL without its password, for errors.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "the database"
	}
	return u.Redacted()
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func newKey() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return "ek_eval_" + hex.EncodeToString(b)
}

// tailBuffer keeps the last lines written to it: a daemon's log, for an
// error that says why it stopped.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailBytes = 4 << 10

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailBytes {
		t.buf = t.buf[len(t.buf)-tailBytes:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}
