//go:build ha

package hatest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	engram "github.com/engram-dev/engram/client"
	"github.com/engram-dev/engram/internal/logtest"
)

const (
	keyA     = "ha-key-a-0123456789"
	keyB     = "ha-key-b-0123456789"
	operator = "ha-operator-0123456789"
)

func env(t *testing.T, name string) string {
	v := os.Getenv(name)
	if v == "" {
		t.Skipf("%s is not set: run make test-ha", name)
	}
	return v
}

// daemon is one engramd process.
type daemon struct {
	addr string
	cmd  *exec.Cmd
	log  *logtest.Buffer
}

// migrate applies the migrations on the direct URL.
func migrate(t *testing.T, url string) {
	out, err := exec.Command(env(t, "ENGRAM_HA_BIN"), "migrate", "--database-url", url).CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// start runs engramd with extra environment and waits until it is ready.
func start(t *testing.T, extra ...string) *daemon {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	d := &daemon{addr: addr, log: &logtest.Buffer{}}
	d.cmd = exec.Command(env(t, "ENGRAM_HA_BIN"), "run")
	d.cmd.Env = append(os.Environ(), "ENGRAM_LISTEN="+addr, "ENGRAM_API_KEYS=acme:"+keyA+",acme:"+keyB+",*:"+operator,
		"ENGRAM_LOG_LEVEL=info")
	d.cmd.Env = append(d.cmd.Env, extra...)
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	require.NoError(t, d.cmd.Start())
	exited := make(chan struct{})
	go func() { _ = d.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = d.cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("engramd %s log:\n%s", addr, d.log.String())
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case <-exited:
			require.FailNow(t, "engramd exited", "%s", d.log.String())
		default:
		}
		res, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return d
			}
		}
		require.True(t, time.Now().Before(deadline), "engramd not ready:\n%s", d.log.String())
		time.Sleep(100 * time.Millisecond)
	}
}

var client = &http.Client{Timeout: 10 * time.Second}

// call sends a request and returns its status and body; status 0 is a
// transport error.
func (d *daemon) call(method, path, key, body string) (int, string) {
	req, _ := http.NewRequest(method, "http://"+d.addr+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode == http.StatusServiceUnavailable && res.Header.Get("Retry-After") == "" {
		return -503, string(b) // a 503 without Retry-After is a failure too
	}
	return res.StatusCode, string(b)
}

// metric reads the sum of a metric's samples whose labels contain match.
func (d *daemon) metric(t *testing.T, name, match string) float64 {
	res, err := client.Get("http://" + d.addr + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) || !strings.Contains(line, match) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil && (line[len(name)] == ' ' || line[len(name)] == '{') {
			sum += v
		}
	}
	return sum
}

// asPostgres runs a program — one of PostgreSQL's (PGBIN) unless its path
// is absolute — as the postgres user when the test runs as root.
func asPostgres(t *testing.T, args ...string) {
	t.Helper()
	bin := args[0]
	if !strings.HasPrefix(bin, "/") {
		bin = env(t, "PGBIN") + "/" + bin
	}
	cmd := exec.Command(bin, args[1:]...)
	if os.Getuid() == 0 {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", bin}, args[1:]...)...)
	}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %v: %s", args[0], args[1:], out)
}

func fact(subject, object string) string {
	return fmt.Sprintf(`{"type": "semantic", "payload": {"kind": "semantic", "subject": %q, "predicate": "is", "object": %q, "validity": {"mode": "global"}}}`, subject, object)
}

func retrieveBody(text string) string {
	return fmt.Sprintf(`{"task": {"text": %q}, "trust": {"clearance": "hyper"}}`, text)
}

// TestHA runs the scenarios in order: the pooler, the replica and the
// restore first, while the topology is whole (the primary archives its
// WAL), then the failover, which leaves the replica the primary.
func TestHA(t *testing.T) {
	primary, replica, bouncer := env(t, "ENGRAM_HA_PRIMARY"), env(t, "ENGRAM_HA_REPLICA"), env(t, "ENGRAM_HA_BOUNCER")
	migrate(t, primary)
	t.Run("pooler", func(t *testing.T) {
		pooler(t, "transaction", "DATABASE_URL="+bouncer, "ENGRAM_DATABASE_POOLER=transaction", "ENGRAM_LOCK_URL="+primary)
	})
	// Session mode: a server connection per client connection, so the
	// session-level locks pass the pooler, and no lock_url is needed.
	t.Run("pooler session", func(t *testing.T) {
		pooler(t, "session", "DATABASE_URL="+env(t, "ENGRAM_HA_BOUNCER_SESSION"), "ENGRAM_DATABASE_POOLER=session")
	})
	t.Run("replica lag", func(t *testing.T) { replicaLag(t, primary, replica) })
	t.Run("restore", func(t *testing.T) { restore(t, primary) })
	t.Run("failover", func(t *testing.T) { failover(t, primary, replica) })
}

// pooler: two engramd behind PgBouncer (started with extra, the mode's
// configuration): writes, listing, streaming, retrieval on both, and one
// leader.
func pooler(t *testing.T, mode string, extra ...string) {
	ds := []*daemon{}
	for range 2 {
		ds = append(ds, start(t, extra...))
	}
	for i, d := range ds {
		status, body := d.call("POST", "/v1/records", keyA, fact(fmt.Sprintf("%s-pooled-%d", mode, i), fmt.Sprintf("%sword%d", mode, i)))
		require.Equal(t, http.StatusCreated, status, body)
	}
	for i, d := range ds {
		// Each reads what the other wrote, many times over, so that
		// statements land on every server connection of the pool.
		for range 20 {
			status, body := d.call("POST", "/v1/retrieve", keyA, retrieveBody(fmt.Sprintf("%sword%d", mode, 1-i)))
			require.Equal(t, http.StatusOK, status, body)
			require.Contains(t, body, fmt.Sprintf("%s-pooled-%d", mode, 1-i))
		}
		status, body := d.call("GET", "/v1/records?type=semantic", keyA, "")
		require.Equal(t, http.StatusOK, status, body)
		events := `{"kind": "observation", "agent_id": "a", "thread_id": "` + mode + strconv.Itoa(i) + `", "text": "through the pooler"}` + "\n"
		status, body = d.call("POST", "/v1/events:stream", keyA, strings.Repeat(events, 50))
		require.Equal(t, http.StatusOK, status, body)
		require.NotContains(t, body, `"error"`)
	}
	// Leadership: exactly one of the two, once one has taken it.
	deadline := time.Now().Add(time.Minute)
	var leaders float64
	for time.Now().Before(deadline) {
		leaders = ds[0].metric(t, "engram_job_leader", "") + ds[1].metric(t, "engram_job_leader", "")
		if leaders >= 1 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.Equal(t, 1.0, leaders, "exactly one leader")
	status, body := ds[0].call("GET", "/v1/jobs", operator, "")
	require.Equal(t, http.StatusOK, status, body)
	t.Logf("figure: pooler (%s mode): 2 daemons, 40 retrievals, 100 streamed events, 2 writes: all answered; leaders: %.0f", mode, leaders)
}

// replicaLag: replay paused on the replica; retrieval, the record listing
// and the record reads go to the primary once the replica is past the
// budget, and a key's own fresh write is found at once, whatever the
// replica holds; replay resumed, the replica serves them again, and a
// key's write is still read back at once.
func replicaLag(t *testing.T, primary, replica string) {
	ctx := context.Background()
	d := start(t, "DATABASE_URL="+primary, "ENGRAM_READ_URL="+replica, "ENGRAM_STALENESS_BUDGET=1s")
	rep, err := pgx.Connect(ctx, replica)
	require.NoError(t, err)
	defer rep.Close(ctx)
	_, err = rep.Exec(ctx, "SELECT pg_wal_replay_pause()")
	require.NoError(t, err)
	defer func() { _, _ = rep.Exec(ctx, "SELECT pg_wal_replay_resume()") }()

	// ownReads writes a fact with key and reads it back at once by
	// retrieval, the listing and the record read; it returns how many of
	// the three found it.
	ownReads := func(key, subject, word string) int {
		status, body := d.call("POST", "/v1/records", key, fact(subject, word))
		require.Equal(t, http.StatusCreated, status, body)
		id := idRE.FindStringSubmatch(body)[1]
		found := 0
		status, body = d.call("POST", "/v1/retrieve", key, retrieveBody(word))
		require.Equal(t, http.StatusOK, status, body)
		if strings.Contains(body, subject) {
			found++
		}
		status, body = d.call("GET", "/v1/records?subject="+subject, key, "")
		require.Equal(t, http.StatusOK, status, body)
		if strings.Contains(body, id) {
			found++
		}
		status, body = d.call("GET", "/v1/records/"+id, key, "")
		if status == http.StatusOK {
			found++
		}
		return found
	}
	reads := func(target string) float64 { return d.metric(t, "engram_replica_reads_total", target) }

	// The primary's synchronous commit waits for the replica to write the
	// WAL, not to replay it: writes go on while replay is paused.
	found, n := 0, 20
	for i := range n {
		found += ownReads(keyA, fmt.Sprintf("lag-%d", i), fmt.Sprintf("ownwrite%dx", i))
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(t, 3*n, found, "an agent's own fresh write is always found")
	// Another key's reads, while the replica is past the budget.
	for range 5 {
		status, body := d.call("POST", "/v1/retrieve", keyB, retrieveBody("ownwrite0x"))
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, "lag-0", "past the budget, the primary answers: the write is found")
		status, body = d.call("GET", "/v1/records?subject=lag-1", keyB, "")
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, "ownwrite1x", "past the budget, the primary lists")
	}
	lag := d.metric(t, "engram_replica_lag_seconds", "")
	require.Greater(t, lag, 1.0, "replay paused: the lag grows past the budget")
	t.Logf("figure: replica lag with replay paused: %.1f s (budget 1 s); reads (retrievals, listings, record reads): %.0f on the replica, %.0f on the primary for staleness, %.0f on the primary for the reader's own write; own writes found %d/%d",
		lag, reads(`target="replica"`), reads(`reason="stale"`), reads(`reason="own_write"`), found, 3*n)

	_, err = rep.Exec(ctx, "SELECT pg_wal_replay_resume()")
	require.NoError(t, err)
	deadline := time.Now().Add(30 * time.Second)
	for d.metric(t, "engram_replica_lag_seconds", "") > 0.5 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	before := reads(`target="replica"`)
	for range 5 {
		status, body := d.call("POST", "/v1/retrieve", keyB, retrieveBody("ownwrite1x"))
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, "lag-1")
		status, body = d.call("GET", "/v1/records?subject=lag-2", keyB, "")
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, "ownwrite2x")
	}
	onReplica := reads(`target="replica"`) - before
	require.Positive(t, onReplica, "within the budget, the replica serves")
	// Read-your-writes with the replica within the budget: it may not have
	// replayed a write made a moment ago.
	beforeOwn, beforeReplica := reads(`reason="own_write"`), reads(`target="replica"`)
	found, n = 0, 10
	for i := range n {
		found += ownReads(keyB, fmt.Sprintf("fresh-%d", i), fmt.Sprintf("freshword%dx", i))
	}
	require.Equal(t, 3*n, found, "an agent's own fresh write is always found")
	t.Logf("figure: replay resumed: lag %.2f s; another key's 5 retrievals and 5 listings: %.0f of 10 on the replica; a key's %d writes each read back at once (retrieval, listing, record): found %d/%d, %.0f reads on the primary for the reader's own write, %.0f on the replica",
		d.metric(t, "engram_replica_lag_seconds", ""), onReplica, n, found, 3*n, reads(`reason="own_write"`)-beforeOwn, reads(`target="replica"`)-beforeReplica)
}

var idRE = regexp.MustCompile(`"id"\s*:\s*"([0-9a-f-]{36})"`)

// tally is what the load client saw, answer by answer: the transport under
// the Go client, so that the retries it makes are counted too.
type tally struct {
	mu        sync.Mutex
	next      http.RoundTripper
	codes     map[int]int // by status; -503 is a 503 without Retry-After, 0 a transport error
	since     time.Time   // the primary's stop
	recovered time.Time   // the first 2xx of a request sent after since
}

func (t *tally) RoundTrip(req *http.Request) (*http.Response, error) {
	sent := time.Now()
	res, err := t.next.RoundTrip(req)
	code := 0
	if err == nil {
		code = res.StatusCode
		if code == http.StatusServiceUnavailable && res.Header.Get("Retry-After") == "" {
			code = -503
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.codes[code]++
	if code >= 200 && code < 300 && !t.since.IsZero() && sent.After(t.since) && t.recovered.IsZero() {
		t.recovered = time.Now()
	}
	return res, err
}

// failover: events ingested at 500 a second (batches of 10, each event
// under its idempotency key) and retrievals at 20 a second, through the Go
// client retrying on 503 by Retry-After, and record writes at 20 a second
// (sent once: no Idempotency-Key), while the primary stops hard and the
// replica is promoted (pg_ctl promote, as a failover manager would);
// engramd follows by its multi-host URL. Every acknowledged event and
// record is then counted in the promoted database.
func failover(t *testing.T, primary, replica string) {
	ctx := context.Background()
	host := func(url string) string { return strings.Split(strings.Split(url, "@")[1], "/")[0] }
	multi := strings.Replace(primary, host(primary), host(primary)+","+host(replica), 1) +
		"&target_session_attrs=read-write&connect_timeout=2"
	d := start(t, "DATABASE_URL="+multi)

	tl := &tally{next: http.DefaultTransport, codes: map[int]int{}}
	newClient := func(key string) *engram.Client {
		c, err := engram.New(engram.Config{URL: "http://" + d.addr, Key: key, HTTPClient: &http.Client{Transport: tl, Timeout: 30 * time.Second},
			Retry: engram.Retry{Attempts: 20}})
		require.NoError(t, err)
		return c
	}
	writer, reader := newClient(keyA), newClient(keyB)

	const (
		eventRate, batch = 500, 10 // events a second, events a request
		writeRate        = 20      // record writes a second
		readRate         = 20      // retrievals a second
	)
	var (
		mu          sync.Mutex
		acked       = map[string]string{} // idempotency key -> event id
		ackedRecs   = map[string]string{} // subject -> record id
		refusedRecs []string              // subjects of record writes answered 503
		failed      []error
		slowest     time.Duration // the longest a request waited for its answer, retries included
		wg          sync.WaitGroup
	)
	done := func(began time.Time, err error) {
		mu.Lock()
		defer mu.Unlock()
		slowest = max(slowest, time.Since(began))
		if err != nil {
			failed = append(failed, err)
		}
	}
	// Open loop: each request in its own goroutine on its own tick, so the
	// offered load holds while earlier requests wait out the failover.
	every := func(period time.Duration, stop <-chan struct{}, send func(n int)) {
		defer wg.Done()
		tick := time.NewTicker(period)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			wg.Add(1)
			go func() { defer wg.Done(); send(n) }()
		}
	}
	stop := make(chan struct{})
	wg.Add(3)
	go every(time.Second*batch/eventRate, stop, func(n int) {
		events := make([]any, batch)
		keys := make([]string, batch)
		for i := range events {
			keys[i] = fmt.Sprintf("fo-%d-%d", n, i)
			events[i] = map[string]any{"kind": "observation", "agent_id": "loader", "thread_id": fmt.Sprintf("fo-%d", n%20),
				"text": "failover load event " + keys[i], "idempotency_key": keys[i]}
		}
		began := time.Now()
		staged, err := writer.PostEvents(ctx, events)
		done(began, err)
		if err == nil {
			mu.Lock()
			for i, ev := range staged.Events {
				acked[keys[i]] = ev.ID.String()
			}
			mu.Unlock()
		}
	})
	// Record writes carry no Idempotency-Key: the client sends each once,
	// and a 503 leaves it unacknowledged.
	go every(time.Second/writeRate, stop, func(n int) {
		subject := fmt.Sprintf("fo-record-%d", n)
		began := time.Now()
		rec, err := writer.CreateRecord(ctx, json.RawMessage(fact(subject, "failoverword")), "")
		var e *engram.Error
		switch {
		case err == nil:
			mu.Lock()
			ackedRecs[subject] = rec.ID.String()
			mu.Unlock()
			done(began, nil)
		case errors.As(err, &e) && e.StatusCode() == http.StatusServiceUnavailable:
			mu.Lock()
			refusedRecs = append(refusedRecs, subject)
			mu.Unlock()
			done(began, nil)
		default:
			done(began, err)
		}
	})
	go every(time.Second/readRate, stop, func(int) {
		began := time.Now()
		_, err := reader.Retrieve(ctx, api.RetrieveRequest{Task: api.Task{Text: "failoverword"}})
		done(began, err)
	})

	time.Sleep(3 * time.Second)
	dir := env(t, "ENGRAM_HA_DIR")
	stoppedAt := time.Now()
	asPostgres(t, "pg_ctl", "-D", dir+"/primary", "-m", "immediate", "stop")
	// From here no request can pass until the promotion.
	tl.mu.Lock()
	tl.since = time.Now()
	tl.mu.Unlock()
	downFor := 2 * time.Second // as a failover manager's detection would take
	time.Sleep(downFor)
	promotedAt := time.Now()
	asPostgres(t, "pg_ctl", "-D", dir+"/replica", "-w", "promote")
	// The new primary has no synchronous standby: it must not wait for one.
	conn, err := pgx.Connect(ctx, replica)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "ALTER SYSTEM SET synchronous_standby_names = ''")
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "SELECT pg_reload_conf()")
	require.NoError(t, err)
	time.Sleep(5 * time.Second)
	close(stop)
	wg.Wait()
	loadFor := time.Since(stoppedAt) + 3*time.Second

	// Every acknowledged event and record is on the new primary, once,
	// under the id it was acknowledged with.
	stored := map[string][]string{}
	rows, err := conn.Query(ctx, `SELECT event->>'idempotency_key', id::text FROM candidates WHERE tenant_id = 'acme' AND agent_id = 'loader'`)
	require.NoError(t, err)
	for rows.Next() {
		var key, id string
		require.NoError(t, rows.Scan(&key, &id))
		stored[key] = append(stored[key], id)
	}
	require.NoError(t, rows.Err())
	lost, dups := 0, 0
	for key, id := range acked {
		if ids := stored[key]; len(ids) != 1 || ids[0] != id {
			lost++
		}
	}
	for _, ids := range stored {
		dups += len(ids) - 1
	}
	recIDs := make([]string, 0, len(ackedRecs))
	for _, id := range ackedRecs {
		recIDs = append(recIDs, id)
	}
	var recsFound, recDups, refusedStored int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM records WHERE tenant_id = 'acme' AND id = ANY($1::uuid[])`, recIDs).Scan(&recsFound))
	// A write answered 503 may have committed all the same, when the
	// connection broke after its commit left: without an Idempotency-Key
	// the client cannot know (docs/operations.md).
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM records WHERE tenant_id = 'acme' AND payload->>'subject' = ANY($1)`, refusedRecs).Scan(&refusedStored))
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM (SELECT payload->>'subject' FROM records
		WHERE tenant_id = 'acme' AND payload->>'subject' LIKE 'fo-record-%' GROUP BY 1 HAVING count(*) > 1) d`).Scan(&recDups))

	tl.mu.Lock()
	defer tl.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("figure: failover under load (%.0f s; offered %d events/s in batches of %d, %d record writes/s, %d retrievals/s; the Go client retrying on 503 by Retry-After): events acknowledged %d, lost %d, duplicated %d (%d staged in all); record writes (sent once, no Idempotency-Key) acknowledged %d, lost %d, duplicated %d, answered 503 %d (of which committed all the same %d); answers by status %v; requests failed after retries %d",
		loadFor.Seconds(), eventRate, batch, writeRate, readRate, len(acked), lost, dups, len(stored), len(ackedRecs), len(ackedRecs)-recsFound, recDups, len(refusedRecs), refusedStored, tl.codes, len(failed))
	require.False(t, tl.recovered.IsZero(), "no request sent after the stop succeeded: %v", tl.codes)
	t.Logf("figure: failover: primary stopped hard, replica promoted %.1f s later; first answer to a request sent once the primary was down %.2f s after the stop (%.2f s after pg_ctl promote was run); the longest a request waited, retries included, %.2f s",
		promotedAt.Sub(stoppedAt).Seconds(), tl.recovered.Sub(stoppedAt).Seconds(), tl.recovered.Sub(promotedAt).Seconds(), slowest.Seconds())
	require.Zero(t, lost, "acknowledged events lost")
	require.Zero(t, dups, "events duplicated")
	require.Equal(t, len(ackedRecs), recsFound, "acknowledged records lost")
	require.Zero(t, recDups, "records duplicated")
	require.Empty(t, failed, "every request was answered in the end")
	require.NotZero(t, tl.codes[http.StatusServiceUnavailable], "the clients saw the outage as 503s")
	require.Zero(t, tl.codes[http.StatusInternalServerError], "500s while no primary answered")
	require.Zero(t, tl.codes[-503], "503 without Retry-After")
	require.Zero(t, tl.codes[0], "transport errors")
}

// record is what the scenarios read of a record.
type record struct {
	ID      string `json:"id"`
	Version int    `json:"version"`
	Status  string `json:"status"`
}

func recordOf(t *testing.T, body string) record {
	var rec record
	require.NoError(t, json.Unmarshal([]byte(body), &rec), body)
	return rec
}

var subjectRE = regexp.MustCompile(`restore-\d+`)

// subjects are the distinct restore-<n> subjects a body names.
func subjects(body string) map[string]bool {
	out := map[string]bool{}
	for _, m := range subjectRE.FindAllString(body, -1) {
		out[m] = true
	}
	return out
}

// restore: facts written, then a bad bulk write (one batch overwrites
// every one of them); the night's base backup is restored with the WAL
// archive to a moment between the two, on a port of its own, as an
// operator would (docs/operations.md); engramd on it serves the earlier
// state.
func restore(t *testing.T, primary string) {
	ctx := context.Background()
	dir, port := env(t, "ENGRAM_HA_DIR"), env(t, "ENGRAM_HA_RESTORE_PORT")
	d := start(t, "DATABASE_URL="+primary)
	const n = 5
	ids := make([]string, n)
	for i := range n {
		status, body := d.call("POST", "/v1/records", keyA, fact(fmt.Sprintf("restore-%d", i), "restoreword"))
		require.Equal(t, http.StatusCreated, status, body)
		ids[i] = idRE.FindStringSubmatch(body)[1]
	}
	conn, err := pgx.Connect(ctx, primary)
	require.NoError(t, err)
	defer conn.Close(ctx)
	// The moment to restore to: after the good writes committed, before
	// the bad one.
	var target string
	require.NoError(t, conn.QueryRow(ctx, "SELECT clock_timestamp()::text").Scan(&target))
	time.Sleep(100 * time.Millisecond)

	ops := make([]string, n)
	for i, id := range ids {
		ops[i] = fmt.Sprintf(`{"op": "delete", "id": %q}`, id)
	}
	status, body := d.call("POST", "/v1/records:batch", keyA, `{"operations": [`+strings.Join(ops, ",")+`], "rationale": "a bad bulk write"}`)
	require.Equal(t, http.StatusOK, status, body)
	status, body = d.call("POST", "/v1/retrieve", keyA, retrieveBody("restoreword"))
	require.Equal(t, http.StatusOK, status, body)
	require.Empty(t, subjects(body), "the bad write deleted the facts: retrieval no longer finds them")

	// Every WAL segment up to the bad write is in the archive.
	var segment string
	require.NoError(t, conn.QueryRow(ctx, "SELECT pg_walfile_name(pg_switch_wal())").Scan(&segment))
	deadline := time.Now().Add(30 * time.Second)
	for {
		var archived string
		require.NoError(t, conn.QueryRow(ctx, "SELECT coalesce(last_archived_wal, '') FROM pg_stat_archiver").Scan(&archived))
		if archived >= segment {
			break
		}
		require.True(t, time.Now().Before(deadline), "segment %s not archived (last %q)", segment, archived)
		time.Sleep(50 * time.Millisecond)
	}

	// The restore: the base backup copied, recovery to the target time
	// from the archive, then promoted.
	began := time.Now()
	restored := dir + "/restored"
	asPostgres(t, "/bin/cp", "-a", dir+"/base", restored)
	t.Cleanup(func() { asPostgres(t, "pg_ctl", "-D", restored, "-m", "immediate", "stop") })
	f, err := os.OpenFile(restored+"/postgresql.auto.conf", os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = fmt.Fprintf(f, "port = %s\narchive_mode = off\nsynchronous_standby_names = ''\nrestore_command = 'cp %s/wal/%%f %%p'\nrecovery_target_time = '%s'\nrecovery_target_action = 'promote'\n",
		port, dir, target)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	asPostgres(t, "/usr/bin/touch", restored+"/recovery.signal")
	asPostgres(t, "pg_ctl", "-D", restored, "-l", dir+"/restored.log", "-w", "start")
	url := strings.Replace(primary, strings.Split(strings.Split(primary, "@")[1], "/")[0], "127.0.0.1:"+port, 1)
	rc, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer rc.Close(ctx)
	deadline = time.Now().Add(time.Minute)
	for {
		var recovering bool
		require.NoError(t, rc.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovering))
		if !recovering {
			break
		}
		require.True(t, time.Now().Before(deadline), "the restored cluster is still recovering")
		time.Sleep(50 * time.Millisecond)
	}
	restoredIn := time.Since(began)
	var size int64
	require.NoError(t, rc.QueryRow(ctx, "SELECT pg_database_size('engram')").Scan(&size))
	// The WAL replayed: from the base backup's start to where recovery
	// stopped.
	label, err := os.ReadFile(dir + "/base/backup_label")
	require.NoError(t, err)
	startLSN := regexp.MustCompile(`START WAL LOCATION: ([0-9A-F]+/[0-9A-F]+)`).FindStringSubmatch(string(label))
	require.NotNil(t, startLSN, "%s", label)
	var replayed float64
	require.NoError(t, rc.QueryRow(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)", startLSN[1]).Scan(&replayed))

	r := start(t, "DATABASE_URL="+url)
	servedIn := time.Since(began)
	status, body = r.call("POST", "/v1/retrieve", keyA, retrieveBody("restoreword"))
	require.Equal(t, http.StatusOK, status, body)
	require.Len(t, subjects(body), n, "the restored database answers the earlier retrieval: %s", body)
	for _, id := range ids {
		status, body = r.call("GET", "/v1/records/"+id, keyA, "")
		require.Equal(t, http.StatusOK, status, body)
		rec := recordOf(t, body)
		require.Equal(t, 1, rec.Version, body)
		require.Equal(t, "active", rec.Status, body)
	}
	status, body = d.call("GET", "/v1/records/"+ids[0], keyA, "")
	require.Equal(t, http.StatusOK, status, body)
	require.NotEqual(t, "active", recordOf(t, body).Status, "the primary still holds the bad write")
	t.Logf("figure: restore to a point in time: base backup of a %.0f MB database and the archived WAL (%.0f MB of WAL positions past the backup's start) to %s (before a bad bulk delete of %d records) in %.2f s; engramd serving it %.2f s after the restore began; %d/%d records read back at their earlier version, retrieval finds all %d",
		float64(size)/(1<<20), replayed/(1<<20), target, n, restoredIn.Seconds(), servedIn.Seconds(), n, n, n)
}
