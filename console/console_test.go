package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	evalpkg "github.com/engram-dev/engram/eval"
	"github.com/engram-dev/engram/internal/buildtest"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
)

const (
	curatorKey = "console-curator-0123456789"
	emptyKey   = "console-empty-0123456789"
	opsKey     = "console-operator-0123456789"
)

// chromium is the browser the tests drive: $CHROMIUM, or Debian's. Without
// it the tests skip, unless ENGRAM_REQUIRE_BROWSER=1 (make test sets it),
// when they fail: scripts/browser.sh installs it.
func chromium(t *testing.T) string {
	t.Helper()
	path := cmpOr(os.Getenv("CHROMIUM"), "/usr/bin/chromium")
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("ENGRAM_REQUIRE_BROWSER") == "1" {
			t.Fatalf("no browser at %s (ENGRAM_REQUIRE_BROWSER=1): run scripts/browser.sh", path)
		}
		t.Skipf("no browser at %s: run scripts/browser.sh, or set CHROMIUM", path)
	}
	return path
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// daemon is a real engramd, built from cmd/engramd, over a fresh schema.
type daemon struct {
	t    *testing.T
	url  string
	db   *pgtest.Schema
	logs *bytes.Buffer
	// bin is the engramd binary; evalReport the curve.json its console
	// serves (console.eval_report), absent until a test puts it there.
	bin, evalReport string
}

func TestMain(m *testing.M) { buildtest.Main(m) }

func startEngramd(t *testing.T) *daemon {
	t.Helper()
	return startEngramdOn(t, pgtest.NewSchema(t), "curator@acme:"+curatorKey+",curator@empty:"+emptyKey+",*:"+opsKey)
}

// startEngramdOn starts engramd over db's schema (migrated at start) with
// the API keys keys (ENGRAM_API_KEYS).
func startEngramdOn(t *testing.T, db *pgtest.Schema, keys string) *daemon {
	t.Helper()
	dir := t.TempDir()
	bin := buildtest.Command(t, "engramd")
	conf := filepath.Join(dir, "engram.yaml")
	evalReport := filepath.Join(dir, "curve.json")
	// Consolidation and the decay sweep run when the test says, through
	// the jobs API, so what the pages show does not move under them.
	require.NoError(t, os.WriteFile(conf, []byte("jobs: {consolidate: \"off\", decay_sweep: \"off\", embedding_backfill: \"@every 1h\", retrieval_stats: \"@every 1h\"}\n"+
		"console: {eval_report: "+strconv.Quote(evalReport)+"}\n"+
		// This operator keeps contradicting facts for a person to review,
		// so that the review queue's page has a draft to show.
		"write_path: {contradiction: {policy: review}}\n"), 0o600))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	cmd := exec.Command(bin, "run", "--migrate")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+db.URL, "ENGRAM_LISTEN="+addr, "ENGRAM_CONFIG="+conf,
		"ENGRAM_API_KEYS="+keys, "ENGRAM_LOG_LEVEL=warn")
	logs := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = io.Discard, logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	d := &daemon{t: t, url: "http://" + addr, db: db, logs: logs, bin: bin, evalReport: evalReport}
	d.poll("engramd ready", 30*time.Second, func() bool {
		res, err := http.Get(d.url + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	return d
}

// poll waits for cond, failing after timeout.
func (d *daemon) poll(what string, timeout time.Duration, cond func() bool) {
	d.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			d.t.Fatalf("timed out waiting for %s; engramd said:\n%s", what, d.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// call is one API call; out, if not nil, receives the JSON answer.
func (d *daemon) call(method, path, key string, body any, out any) int {
	d.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(d.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, d.url+path, rd)
	require.NoError(d.t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(d.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(d.t, err)
	if out != nil && res.StatusCode < 300 {
		require.NoError(d.t, json.Unmarshal(b, out), string(b))
	}
	if res.StatusCode >= 300 {
		d.t.Logf("%s %s: %d %s", method, path, res.StatusCode, b)
	}
	return res.StatusCode
}

// stream sends events as NDJSON on one POST /v1/events:stream.
func (d *daemon) stream(events []memory.Event) {
	d.t.Helper()
	var buf bytes.Buffer
	for _, e := range events {
		b, err := json.Marshal(e)
		require.NoError(d.t, err)
		buf.Write(append(b, '\n'))
	}
	req, err := http.NewRequest("POST", d.url+"/v1/events:stream", &buf)
	require.NoError(d.t, err)
	req.Header.Set("Authorization", "Bearer "+curatorKey)
	req.Header.Set("Content-Type", "application/x-ndjson")
	res, err := http.DefaultClient.Do(req)
	require.NoError(d.t, err)
	acks, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(d.t, http.StatusOK, res.StatusCode, string(acks))
	require.Equal(d.t, len(events), strings.Count(string(acks), "\n"), string(acks))
	require.NotContains(d.t, string(acks), "problem", string(acks))
	d.poll("events classified", 30*time.Second, func() bool {
		var pending int
		require.NoError(d.t, d.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM candidates WHERE status = 'pending'`).Scan(&pending))
		return pending == 0
	})
}

// runJob runs a job through the jobs API and waits until it succeeded.
func (d *daemon) runJob(name string) {
	d.t.Helper()
	var started api.JobStarted
	require.Equal(d.t, http.StatusAccepted, d.call("POST", "/v1/jobs/"+name+":run", opsKey, nil, &started))
	d.poll("job "+name, 60*time.Second, func() bool {
		var status string
		require.NoError(d.t, d.db.Pool.QueryRow(context.Background(), `SELECT status FROM job_runs WHERE id = $1`, started.Run.ID).Scan(&status))
		require.Contains(d.t, []string{"running", "succeeded"}, status, "job %s", name)
		return status == "succeeded"
	})
}

// episode is one solved task as an agent streams it: the request, the
// error, the fix and its check, and the outcome.
func episode(thread string, at time.Time) []memory.Event {
	env := map[string]any{"os": "linux", "service": "billing-db"}
	ev := func(kind memory.EventKind, i int) memory.Event {
		return memory.Event{Kind: kind, AgentID: "agent-7", ThreadID: thread, Environment: env, Tags: []string{"intent:restart_db"},
			Time: at.Add(time.Duration(i) * time.Second)}
	}
	in := ev(memory.UserInput, 0)
	in.Text = "billing is down: fix the database connection"
	fail := ev(memory.ErrorEvent, 1)
	fail.Error = &memory.EventError{Message: "connection refused: billing-db:5432", Code: "ECONNREFUSED"}
	call := ev(memory.ToolCall, 2)
	call.Tool = &memory.EventTool{Name: "systemctl", CallID: "c1", Arguments: json.RawMessage(`{"action":"restart","unit":"billing-db"}`)}
	out := ev(memory.ToolOutput, 3)
	out.Tool = &memory.EventTool{Name: "systemctl", CallID: "c1", Result: json.RawMessage(`{"exit":0}`)}
	check := ev(memory.ToolCall, 4)
	check.Tool = &memory.EventTool{Name: "pg_isready", CallID: "c2", Arguments: json.RawMessage(`{"host":"billing-db"}`)}
	checked := ev(memory.ToolOutput, 5)
	checked.Tool = &memory.EventTool{Name: "pg_isready", CallID: "c2", Result: json.RawMessage(`{"accepting":true}`)}
	end := ev(memory.Outcome, 6)
	end.Outcome = &memory.EventOutcome{Status: "success", Summary: "database restarted"}
	return []memory.Event{in, fail, call, out, check, checked, end}
}

// seed streams solved episodes and facts for acme, consolidates them into
// a learned procedure, uses it, and queues a contradiction for review.
type seeded struct {
	procedure api.RecordPage
	review    api.ReviewPage
}

func seed(d *daemon) seeded {
	t := d.t
	now := time.Now().UTC()
	var events []memory.Event
	for i := range 4 {
		events = append(events, episode(fmt.Sprintf("restart-%d", i), now.Add(time.Duration(i-10)*time.Minute))...)
	}
	for i, f := range [][2]string{{"billing-db", "postgres 16"}, {"billing-api", "go 1.25"}, {"payments", "stripe"}} {
		events = append(events, memory.Event{Kind: memory.FactEvent, AgentID: "agent-7", ThreadID: "facts", Time: now.Add(time.Duration(i) * time.Second),
			Fact: &memory.EventFact{Subject: f[0], Predicate: "runs_on", Object: json.RawMessage(fmt.Sprintf("%q", f[1]))}})
	}
	d.stream(events)
	d.runJob("consolidate")

	var s seeded
	require.Equal(t, http.StatusOK, d.call("GET", "/v1/records?type=competence", curatorKey, nil, &s.procedure))
	require.Len(t, s.procedure.Records, 1, "one procedure learned from four episodes")
	proc := s.procedure.Records[0].ID.String()
	for i, outcome := range []string{"used_success", "used_success", "used_failure", "used_success"} {
		require.Equal(t, http.StatusOK, d.call("POST", "/v1/feedback", curatorKey, api.FeedbackRequest{
			Key: fmt.Sprintf("task-%d", i), RecordIDs: []string{proc}, Outcome: outcome}, nil))
	}
	// A contradiction of an active fact waits for a reviewer.
	res := d.call("POST", "/v1/records", curatorKey, map[string]any{"type": "semantic", "confidence": 0.99,
		"provenance": map[string]any{"sources": []map[string]any{{"kind": "human", "ref": "user://ops-lead"}, {"kind": "observation", "ref": "obs://inventory/billing-db"}}},
		"payload": map[string]any{
			"kind": "semantic", "subject": "billing-db", "predicate": "runs_on", "object": "mysql 8", "validity": map[string]any{"mode": "global"}}}, nil)
	require.Equal(t, http.StatusAccepted, res)
	require.Equal(t, http.StatusOK, d.call("GET", "/v1/reviews?status=pending", curatorKey, nil, &s.review))
	require.Len(t, s.review.Reviews, 1)
	return s
}

// evaluate runs `engram-eval run` on a small world (half a minute), the agents' daemons
// being the engramd under test's binary in schemas of their own, and sends
// the curve.json it wrote, or its error, on the channel.
func evaluate(t *testing.T, engramd string) <-chan evaluation {
	t.Helper()
	dir := t.TempDir()
	bin := buildtest.Command(t, "engram-eval")
	done := make(chan evaluation, 1)
	go func() {
		var stderr bytes.Buffer
		cmd := exec.Command(bin, "run", "--engramd", engramd, "--database-url", pgtest.URL(), "--out", dir,
			"--family", "a", "--seeds", "1", "--seed", "1", "--problems", "3", "--episodes", "48", "--deployment", "6", "--window", "6")
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		if err := cmd.Run(); err != nil {
			done <- evaluation{err: fmt.Errorf("engram-eval run: %w\n%s", err, stderr.String())}
			return
		}
		done <- evaluation{path: filepath.Join(dir, "curve.json")}
	}()
	return done
}

// evaluation is the curve.json an engram-eval run wrote.
type evaluation struct {
	path string
	err  error
}

// browser is a headless Chromium with a fresh profile.
func browser(t *testing.T) context.Context {
	t.Helper()
	exe := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1360, 1000),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(cancelCtx)
	require.NoError(t, chromedp.Do(ctx))
	return ctx
}

// page drives one browser tab.
type page struct {
	t   *testing.T
	ctx context.Context
	url string
}

func (p *page) run(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		body, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.body.innerText.slice(0, 4000)`))
		p.t.Fatalf("%v; the page shows:\n%s", err, body)
	}
}

// eval returns the value of a JavaScript expression.
func eval[T any](p *page, expr string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(p.t, err, expr)
	return v
}

// open navigates to a console page and waits until it shows its data.
func (p *page) open(hash string) {
	p.t.Helper()
	name, id, _ := strings.Cut(hash, "/")
	// A new hash on the same document is no reload: wait for this page's
	// section, not the last one's.
	sel := `#page section[data-page=` + name + `][data-ready]`
	if id != "" {
		sel = `#page section[data-page=` + name + `][data-id="` + id + `"][data-ready]`
	}
	p.run(chromedp.Navigate(p.url+"/console/#/"+hash), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(sel)))
	require.Empty(p.t, eval[string](p, `document.querySelector("#page section").dataset.error || ""`), "page %s", hash)
}

func (p *page) signIn(key string) {
	p.t.Helper()
	p.run(chromedp.Navigate(p.url + "/console/"))
	eval[bool](p, `sessionStorage.clear(), true`)
	p.run(chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#key`)), chromedp.SendKeys(chromedp.CSS(`#key`), key),
		chromedp.Click(chromedp.CSS(`#signin-form button`)), chromedp.WaitVisible(chromedp.CSS(`#page section[data-ready]`)))
}

// screenshot writes the page to docs/console/<name>.png when
// ENGRAM_SCREENSHOTS is set (make screenshots); name may hold a folder
// (empty/health).
func (p *page) screenshot(name string) {
	p.t.Helper()
	dir := os.Getenv("ENGRAM_SCREENSHOTS")
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(p.t, err)
	path := filepath.Join(dir, name+".png")
	require.NoError(p.t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(p.t, os.WriteFile(path, buf, 0o644))
}

// table reads a chart's text alternative: series name to its values.
func (p *page) table(chart string) map[string][]string {
	p.t.Helper()
	return eval[map[string][]string](p, fmt.Sprintf(`(() => { const o = {};
		for (const td of document.querySelectorAll('figure[data-chart=%q] table.data td')) (o[td.dataset.series] ||= []).push(td.dataset.y);
		return o; })()`, chart))
}

// lastLabel is the x label of a chart's last bucket, from its data table.
func (p *page) lastLabel(chart string) string {
	p.t.Helper()
	return eval[string](p, `(() => { const r = document.querySelectorAll('figure[data-chart=`+chart+`] table.data tbody tr th'); return r.length ? r[r.length - 1].textContent : ""; })()`)
}

// waitLoaded waits until the health page shows tenant's data, loaded.
func (p *page) waitLoaded(tenant string) {
	p.t.Helper()
	p.poll("health of "+tenant, func() bool {
		return eval[string](p, `document.getElementById('health-body').dataset.tenant || ""`) == tenant &&
			eval[bool](p, `!document.getElementById('health-body').dataset.loading`)
	})
}

// poll waits until cond holds in the page, failing after 20 seconds.
func (p *page) poll(what string, cond func() bool) {
	p.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			p.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (p *page) text(sel string) string {
	p.t.Helper()
	return eval[string](p, fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel))
}

func (p *page) count(sel string) int {
	p.t.Helper()
	return eval[int](p, fmt.Sprintf(`document.querySelectorAll(%q).length`, sel))
}

// The console against a real engramd: a tenant's curator sees its health,
// records, what was learned, the review queue and the decay preview, with
// the numbers the API has; an operator sees each tenant's health and the
// jobs, and runs one.
func TestConsole(t *testing.T) {
	chromium(t)
	d := startEngramd(t)
	// A real evaluation, run while the other pages are tested.
	evaluated := evaluate(t, d.bin)
	s := seed(d)
	p := &page{t: t, ctx: browser(t), url: d.url}

	t.Run("health", func(t *testing.T) {
		p.t = t
		p.signIn(curatorKey)
		p.open("health")
		// Day one: everything the tenant holds is from today, so the page
		// shows the last 24 hours by the hour, and says why, rather than
		// seven days of which only the last has a point.
		p.waitLoaded("acme")
		require.Equal(t, "24h", eval[string](p, `document.getElementById('health-body').dataset.range`))
		require.Equal(t, "24h", eval[string](p, `document.getElementById('health-range').value`))
		require.Contains(t, p.text(`#health-range-note`), "from today")
		var hs api.HealthStats
		now := time.Now().UTC()
		hour := now.Truncate(time.Hour)
		require.Equal(t, http.StatusOK, d.call("GET", "/v1/stats/health?bucket=hour&from="+hour.Add(-23*time.Hour).Format(time.RFC3339Nano)+"&to="+now.Format(time.RFC3339Nano), curatorKey, nil, &hs))
		require.Len(t, hs.Series, 24)
		require.Equal(t, hour.Format("01-02 15:00"), p.lastLabel("records-by-type"), "the last bucket is this hour")
		for _, typ := range []memory.Type{memory.Semantic, memory.Competence, memory.Episodic} {
			require.Positive(t, hs.Live[typ], typ)
			require.Equal(t, fmt.Sprint(hs.Live[typ]), p.text(fmt.Sprintf(`[data-live-type=%q] .n`, typ)), typ)
		}
		last := hs.Series[len(hs.Series)-1]
		records := p.table("records-by-type")
		require.Len(t, records["semantic"], len(hs.Series))
		require.Equal(t, fmt.Sprint(last.Records[memory.Semantic]), records["semantic"][len(hs.Series)-1])
		require.Equal(t, fmt.Sprint(last.Records[memory.Competence]), records["competence"][len(hs.Series)-1])
		// The competence success rate is the procedure's own, as the
		// Learning page and engram procedures show it: its uses by episode
		// and by feedback, smoothed.
		comp := p.table("competence")["competence"]
		var rec memory.Record
		require.Equal(t, http.StatusOK, d.call("GET", "/v1/records/"+s.procedure.Records[0].ID.String(), curatorKey, nil, &rec))
		var payload memory.CompetencePayload
		require.NoError(t, json.Unmarshal(rec.Payload, &payload))
		perf := payload.Performance
		require.NotNil(t, perf)
		require.NotNil(t, last.CompetenceSuccessRate)
		require.Equal(t, []int64{int64(perf.Successes), int64(perf.Failures)}, []int64{last.CompetenceSuccesses, last.CompetenceFailures})
		require.InDelta(t, memory.SuccessRate(perf.Successes, perf.Failures), *last.CompetenceSuccessRate, 1e-9)
		require.Equal(t, fmt.Sprint(*last.CompetenceSuccessRate), comp[len(comp)-1])
		require.Equal(t, fmt.Sprintf("%.2f", *last.CompetenceSuccessRate),
			eval[string](p, `[...document.querySelectorAll('figure[data-chart=competence] table.data td')].pop().textContent`))
		require.Contains(t, p.text(`figure[data-chart=competence]`), "(successes + 1) / (uses + 2)")
		// Every write taken is past the alert threshold of write acceptance,
		// scored as the API scores it, not 0.
		var war api.HealthPart
		for _, part := range hs.Score.Parts {
			if part.Name == "write_acceptance" {
				war = part
			}
		}
		require.NotNil(t, war.Normalized)
		require.Equal(t, fmt.Sprint(*war.Normalized), eval[string](p, `document.querySelector('section.score tr[data-part=write_acceptance]').dataset.normalized`))
		if *war.Value == 1 {
			require.InDelta(t, 1.0/3, *war.Normalized, 1e-9)
		}
		points := 0
		for _, b := range hs.Series {
			if b.CompetenceSuccessRate != nil {
				points++
			}
		}
		require.Equal(t, points, p.count(`figure[data-chart="competence"] circle.point`), "one point per bucket with uses")
		// Each point is reachable by keyboard and says its value; each chart
		// has its data as a table.
		require.Equal(t, points, p.count(`figure[data-chart="competence"] circle.point[tabindex="0"][aria-label]`))
		require.Equal(t, p.count(`figure.chart`), p.count(`figure.chart details.alt table`))
		require.Equal(t, hs.Score.Status, p.text(`section.score .status`))
		require.Equal(t, "Tenant acme", p.text(`#who-name`), "the health page names the key's tenant")
		require.Equal(t, 6, p.count(`section.score tr[data-part]`))
		// Counts tick at whole numbers.
		for _, chart := range []string{"growth", "records-by-type", "writes"} {
			ticks := eval[[]string](p, `[...document.querySelectorAll('figure[data-chart=`+chart+`] text[data-tick=y]')].map((t) => t.textContent)`)
			require.NotEmpty(t, ticks, chart)
			for _, tick := range ticks {
				require.Regexp(t, `^\d+$`, tick, "%s ticks at %v", chart, ticks)
			}
		}
		p.screenshot("health")

		// A week, chosen: day buckets are UTC days, today's under today's
		// date.
		p.run(chromedp.SetValue(chromedp.CSS(`#health-range`), "7d"))
		eval[bool](p, `document.getElementById('health-range').dispatchEvent(new Event('change')), true`)
		p.poll("the week", func() bool {
			return eval[string](p, `document.getElementById('health-body').dataset.range || ""`) == "7d" &&
				eval[bool](p, `!document.getElementById('health-body').dataset.loading`)
		})
		require.Equal(t, time.Now().UTC().Format("01-02"), p.lastLabel("records-by-type"), "today is labelled today")
		require.Equal(t, 7, len(p.table("records-by-type")["semantic"]))
		require.Zero(t, p.count(`#health-range-note`))
	})

	proc := s.procedure.Records[0]

	t.Run("records", func(t *testing.T) {
		p.t = t
		p.open("records")
		var all api.RecordPage
		require.Equal(t, http.StatusOK, d.call("GET", "/v1/records", curatorKey, nil, &all))
		require.Equal(t, len(all.Records), p.count(`#records-list tbody tr`))
		require.Contains(t, p.text(`#records-list tbody`), "billing-api runs_on go 1.25")
		p.screenshot("records")

		// Filter by type, as a person would.
		var facts api.RecordPage
		require.Equal(t, http.StatusOK, d.call("GET", "/v1/records?type=semantic", curatorKey, nil, &facts))
		p.run(chromedp.SetValue(chromedp.CSS(`#f-type`), "semantic"), chromedp.Click(chromedp.CSS(`form.controls button`)))
		p.poll("the semantic rows", func() bool {
			return p.count(`#records-list tbody tr`) == len(facts.Records) && p.count(`#records-list tbody tr:not([data-type=semantic])`) == 0
		})

		// The procedure's page: payload, versions as diffs, audit,
		// provenance, relations and salience curve.
		p.open("records/" + proc.ID.String())
		var hist api.RecordHistory
		var audit api.AuditTrail
		var rel api.RecordRelations
		id := proc.ID.String()
		require.Equal(t, http.StatusOK, d.call("GET", "/v1/records/"+id+"/history", curatorKey, nil, &hist))
		require.Equal(t, http.StatusOK, d.call("GET", "/v1/records/"+id+"/audit", curatorKey, nil, &audit))
		require.Equal(t, http.StatusOK, d.call("GET", "/v1/records/"+id+"/relations", curatorKey, nil, &rel))
		require.Greater(t, len(hist.Versions), 1, "feedback revised the procedure")
		require.Equal(t, len(hist.Versions), p.count(`ol.versions li[data-version]`))
		require.Positive(t, p.count(`ol.versions li[data-version] tr[data-path^="/payload/performance"]`), "a use shows as a change of its performance")
		require.Equal(t, len(audit.Entries), p.count(`table.audit tbody tr`))
		require.Equal(t, len(rel.Relations), p.count(`figure[data-chart=relations] line.edge`))
		require.Equal(t, len(rel.Relations), p.count(`figure[data-chart=relations] line.edge[data-predicate=derived_from]`), "learned from its episodes")
		require.Contains(t, p.text(`.payload[data-kind=competence]`), "systemctl")
		curve := p.table("salience-curve")["salience"]
		require.Len(t, curve, 25)
		p.screenshot("record")
	})

	t.Run("learning", func(t *testing.T) {
		p.t = t
		p.open("learning")
		var rec memory.Record
		require.Equal(t, http.StatusOK, d.call("GET", "/v1/records/"+proc.ID.String(), curatorKey, nil, &rec))
		var payload memory.CompetencePayload
		require.NoError(t, json.Unmarshal(rec.Payload, &payload))
		require.NotNil(t, payload.Performance)
		perf := payload.Performance
		row := fmt.Sprintf(`tr[data-id=%q]`, proc.ID.String())
		require.Equal(t, 1, p.count(row))
		// One success rate everywhere, smoothed as retrieval ranks by it and
		// engram procedures prints it (0.67 (3/4)); one lifecycle word, the
		// CLI's.
		n := perf.Successes + perf.Failures
		rate := memory.SuccessRate(perf.Successes, perf.Failures)
		require.Equal(t, fmt.Sprint(rate), eval[string](p, fmt.Sprintf(`document.querySelector('%s td[data-rate]').dataset.rate`, row)))
		require.Equal(t, fmt.Sprintf("%.2f (%d/%d)", rate, perf.Successes, n), p.text(row+` td[data-rate]`))
		require.Contains(t, p.text(`#rate-note`), "(successes + 1) / (uses + 2)")
		state := string(rec.Status)
		if rec.Status == memory.Active && slices.Contains(rec.Tags, memory.ProbationTag) {
			state = "probation"
		}
		require.Equal(t, state, eval[string](p, fmt.Sprintf(`document.querySelector('%s').dataset.state`, row)))
		// No evaluation report yet: the page says how to make one.
		require.Equal(t, 1, p.count(`section.evaluation[data-eval=none]`))
		require.Contains(t, p.text(`section.evaluation`), "make eval")

		// The evaluation's curve.json, where engramd's console.eval_report
		// says: the page draws each agent's curve with its points.
		ev := <-evaluated
		require.NoError(t, ev.err)
		require.NoError(t, os.Rename(ev.path, d.evalReport))
		b, err := os.ReadFile(d.evalReport)
		require.NoError(t, err)
		var curves evalpkg.Curves
		require.NoError(t, json.Unmarshal(b, &curves))
		p.open("learning")
		require.Equal(t, 1, p.count(`section.evaluation[data-eval=shown]`))
		table := p.table("eval-curve")
		var agents []string
		total := 0
		for _, a := range curves.Agents {
			agents = append(agents, a.Agent)
			var want []string
			for _, pt := range a.Points {
				want = append(want, fmt.Sprint(pt.Rate))
			}
			require.Equal(t, want, table[a.Agent], a.Agent)
			total += len(a.Points)
		}
		require.Equal(t, []string{"engram", "raw episodes", "no memory"}, agents)
		require.Equal(t, total, p.count(`figure[data-chart=eval-curve] circle.point`))
		require.Equal(t, len(curves.Agents[0].Points), p.count(`figure[data-chart=eval-curve] table.data tbody tr`))
		require.Contains(t, p.text(`section.evaluation`), curves.Command)
		require.Equal(t, curves.Made.Format(time.RFC3339Nano), eval[string](p, `document.querySelector('section.evaluation [data-made]').dataset.made`))
		p.screenshot("learning")

		p.open("learning/" + proc.ID.String())
		points := p.table("success-rate")["success_rate"]
		require.NotEmpty(t, points)
		require.Equal(t, fmt.Sprint(rate), points[len(points)-1])
		require.Equal(t, 4, p.count(`li[data-episode]`), "learned from the four episodes")
		require.Contains(t, p.text(`.payload`), "connection refused")
		p.screenshot("procedure")
	})

	t.Run("reviews", func(t *testing.T) {
		p.t = t
		p.open("reviews")
		rv := s.review.Reviews[0]
		card := fmt.Sprintf(`article[data-review=%q]`, rv.ID.String())
		require.Equal(t, 1, p.count(card))
		require.Contains(t, p.text(card), "mysql 8")
		p.screenshot("reviews")
		p.run(chromedp.SendKeys(chromedp.CSS(card+` textarea`), "the inventory says so"),
			chromedp.Click(chromedp.CSS(card+` button[data-action=approve]`)),
			chromedp.WaitVisible(chromedp.CSS(card+`[data-decided=approve]`)))
		var got api.Review
		require.Equal(t, http.StatusOK, d.call("GET", "/v1/reviews/"+rv.ID.String(), curatorKey, nil, &got))
		require.Equal(t, "approved", got.Status)
		require.Equal(t, "the inventory says so", got.Justification)
	})

	t.Run("decay", func(t *testing.T) {
		p.t = t
		p.open("decay")
		var now api.DecayPreview
		require.Equal(t, http.StatusOK, d.call("POST", "/v1/decay/preview", curatorKey, api.DecayPreviewRequest{}, &now))
		for typ, x := range now.Types {
			require.Equal(t, fmt.Sprint(x.Records), p.text(fmt.Sprintf(`#decay-summary tr[data-type=%q] td`, typ)), typ)
		}
		// The editor holds the section as the configuration file has it, in
		// YAML.
		shown := eval[string](p, `document.getElementById('decay-proposed').value`)
		require.Equal(t, now.CurrentYAML, shown)
		require.Contains(t, shown, "  semantic:\n    curve: exponential\n    half_life: 90d\n")
		// A mistake is named with its field and line, as engramd would name
		// it when loading the file.
		bad := strings.Replace(shown, "    half_life: 90d\n", "    half_life: ninety days\n", 1)
		p.run(chromedp.SetValue(chromedp.CSS(`#decay-proposed`), bad), chromedp.Click(chromedp.CSS(`form.editor button`)))
		line := strings.Count(bad[:strings.Index(bad, "ninety")], "\n") + 1
		p.poll("the error", func() bool { return p.text(`form.editor .error`) != "" })
		require.Equal(t, fmt.Sprintf(`/profiles/semantic/half_life "ninety days" is not a duration such as 90d or 36h (line %d)`, line), p.text(`form.editor .error`))
		// Propose a semantic half-life of an hour: in 30 days a sweep would
		// expire every fact, and the page says so beside the current profile.
		doc := strings.Replace(shown, "    half_life: 90d\n", "    half_life: 1h # was 90d\n", 1)
		var proposed map[string]any
		require.NoError(t, json.Unmarshal(now.Current, &proposed))
		proposed["profiles"].(map[string]any)["semantic"].(map[string]any)["half_life"] = "1h"
		asJSON, err := json.Marshal(proposed)
		require.NoError(t, err)
		var want api.DecayPreview
		require.Equal(t, http.StatusOK, d.call("POST", "/v1/decay/preview", curatorKey, api.DecayPreviewRequest{At: "+30d", Proposed: asJSON}, &want))
		require.Greater(t, want.Types[memory.Semantic].Proposed.PruneAt, want.Types[memory.Semantic].Current.PruneAt)
		p.run(chromedp.SetValue(chromedp.CSS(`#decay-proposed`), doc), chromedp.Click(chromedp.CSS(`form.editor button`)))
		row := `#decay-summary tr[data-type=semantic]`
		p.poll("the proposed preview", func() bool {
			return eval[string](p, `(document.querySelector('`+row+`') || {dataset: {}}).dataset.pruneProposed || ""`) == fmt.Sprint(want.Types[memory.Semantic].Proposed.PruneAt)
		})
		require.Equal(t, fmt.Sprint(want.Types[memory.Semantic].Current.PruneAt), eval[string](p, `document.querySelector('`+row+`').dataset.pruneCurrent`))
		at := p.table("decay-semantic-proposed")
		require.Len(t, at, 2, "now and at the horizon")
		require.Empty(t, p.text(`form.editor .error`))
		p.screenshot("decay")
	})

	t.Run("operator", func(t *testing.T) {
		p.t = t
		p.signIn(opsKey)
		require.Equal(t, []string{"health", "jobs"}, eval[[]string](p, `[...document.querySelectorAll('[data-nav]')].map((a) => a.dataset.nav)`))
		// A tenant's page, asked for by an operator's key, says so rather
		// than showing Health.
		p.run(chromedp.Navigate(p.url+"/console/#/records"), chromedp.Reload(),
			chromedp.WaitVisible(chromedp.CSS(`#page section[data-page=records][data-denied][data-ready]`)))
		require.Contains(t, p.text(`#page section`), "Sign in with a tenant's key to see records")
		p.open("health")
		require.Equal(t, "acme", eval[string](p, `document.getElementById('health-body').dataset.tenant`))
		require.Equal(t, []string{"acme", "empty"}, eval[[]string](p, `[...document.querySelectorAll('#health-tenant option')].map((o) => o.value)`))
		require.Equal(t, 1, p.count(`figure[data-chart=gate-rejections]`), "the operator sees the gates' refusals")
		p.screenshot("health-operator")

		// Switching tenants quickly: the older answer, arriving last, is not
		// the one shown. The empty tenant's answer is held back until the
		// acme one is in. inflight counts the page's requests until it has
		// read their answers and acted on them (a task after the read).
		eval[bool](p, `(() => { const f = window.fetch; window.heldBack = false; window.inflight = 0;
			window.fetch = (url, o) => {
				window.inflight++;
				const held = String(url).includes("tenant=empty");
				const wait = held ? new Promise((r) => setTimeout(r, 1500)) : Promise.resolve();
				return wait.then(() => f(url, o)).then((res) => {
					const text = res.text.bind(res);
					res.text = async () => { const v = await text(); setTimeout(() => { window.inflight--; if (held) window.heldBack = true; }, 0); return v; };
					return res;
				});
			};
			return true; })()`)
		p.run(chromedp.SetValue(chromedp.CSS(`#health-tenant`), "empty"))
		eval[bool](p, `document.getElementById('health-tenant').dispatchEvent(new Event('change')), true`)
		p.run(chromedp.SetValue(chromedp.CSS(`#health-tenant`), "acme"))
		eval[bool](p, `document.getElementById('health-tenant').dispatchEvent(new Event('change')), true`)
		p.poll("the held-back answer, read and acted on", func() bool { return eval[bool](p, `window.heldBack && window.inflight === 0`) })
		require.Equal(t, "acme", eval[string](p, `document.getElementById('health-body').dataset.tenant`), "the latest choice wins")

		// An empty tenant degrades to zeros and an unknown score.
		p.run(chromedp.SetValue(chromedp.CSS(`#health-tenant`), "empty"))
		eval[bool](p, `document.getElementById('health-tenant').dispatchEvent(new Event('change')), true`)
		p.poll("the empty tenant", func() bool {
			return eval[string](p, `document.getElementById('health-body').dataset.tenant || ""`) == "empty" &&
				eval[bool](p, `!document.getElementById('health-body').dataset.loading`)
		})
		require.Equal(t, "unknown", p.text(`section.score .status`))
		require.Equal(t, "0", p.text(`[data-live-type=semantic] .n`))
		require.Contains(t, p.text(`figure[data-chart=growth]`), "No data in this range.")

		// Jobs: every job with its last run; run one now.
		p.open("jobs")
		var jobs api.JobsOverview
		require.Equal(t, http.StatusOK, d.call("GET", "/v1/jobs", opsKey, nil, &jobs))
		require.Equal(t, len(jobs.Jobs), p.count(`tr[data-job]`))
		require.Equal(t, "succeeded", eval[string](p, `document.querySelector('tr[data-job=consolidate]').dataset.status`))
		require.Regexp(t, `^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}Z \(manual\)$`,
			eval[string](p, `document.querySelector('tr[data-job=consolidate] td:nth-of-type(3)').textContent`), "a job's time says its zone")
		p.run(chromedp.Click(chromedp.CSS(`button[data-run=decay_sweep]`)))
		p.poll("the sweep run from the page", func() bool {
			var n int
			require.NoError(t, d.db.Pool.QueryRow(context.Background(),
				`SELECT count(*) FROM job_runs WHERE job = 'decay_sweep' AND trigger = 'manual' AND status = 'succeeded'`).Scan(&n))
			return n == 1
		})
		p.open("jobs")
		require.Equal(t, "succeeded", eval[string](p, `document.querySelector('tr[data-job=decay_sweep]').dataset.status`))
		p.screenshot("jobs")
	})
}
