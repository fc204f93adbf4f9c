package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/buildtest"
	"github.com/engram-dev/engram/internal/logtest"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/seal"
)

// encryptionRig is one test's database, engramd and engram binaries, and
// the files their configuration names.
type encryptionRig struct {
	t      *testing.T
	db     *pgtest.Schema
	bin    string
	cli    string
	dir    string
	policy string
	d      *daemon
	log    *logtest.Buffer
}

// start (re)starts engramd with master keys (the first wraps).
func (e *encryptionRig) start(keys ...string) {
	e.t.Helper()
	e.stop()
	doc := fmt.Sprintf("policy_file: %s\nencryption:\n  master_keys: [%s]\n", e.policy, strings.Join(keys, ", "))
	e.log = &logtest.Buffer{}
	e.d = startWithYAML(e.t, e.bin, e.db, doc, e.log)
}

func (e *encryptionRig) stop() {
	if e.d != nil {
		_ = e.d.cmd.Process.Kill()
		_, _ = e.d.cmd.Process.Wait()
		e.d = nil
	}
}

// refused starts engramd with keys and returns what it said as it refused
// to start.
func (e *encryptionRig) refused(env ...string) string {
	e.t.Helper()
	conf := filepath.Join(e.dir, "refused.yaml")
	require.NoError(e.t, os.WriteFile(conf, []byte("policy_file: "+e.policy+"\n"), 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.bin, "run")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+e.db.URL, "ENGRAM_LISTEN="+freeAddr(e.t), "ENGRAM_CONFIG="+conf,
		"ENGRAM_API_KEYS=curator@acme:"+testKey)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	require.Error(e.t, err, "engramd started: %s", out)
	require.NotEqual(e.t, context.DeadlineExceeded, ctx.Err(), "engramd did not exit: %s", out)
	return string(out)
}

func (e *encryptionRig) call(method, path, key, body string) (int, string) {
	e.t.Helper()
	req, err := http.NewRequest(method, "http://"+e.d.addr+path, strings.NewReader(body))
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	if res.StatusCode == http.StatusInternalServerError {
		e.t.Logf("engramd's log: %s", e.log.String())
	}
	return res.StatusCode, string(b)
}

// engram runs the CLI against the daemon with the operator key.
func (e *encryptionRig) engram(args ...string) string {
	e.t.Helper()
	cmd := exec.Command(e.cli, args...)
	cmd.Env = append(os.Environ(), "ENGRAM_URL=http://"+e.d.addr, "ENGRAM_API_KEY="+opsKey)
	out, err := cmd.CombinedOutput()
	require.NoError(e.t, err, "%s\nengramd's log: %s", out, e.log.String())
	return string(out)
}

// dump is pg_dump of the test's schema: what the database alone reveals.
func (e *encryptionRig) dump() string {
	e.t.Helper()
	u, err := url.Parse(pgtest.URL())
	require.NoError(e.t, err)
	q := u.Query()
	q.Del("search_path")
	u.RawQuery = q.Encode()
	out, err := exec.Command("pg_dump", "--schema="+e.db.Name, "--no-owner", "-d", u.String()).Output()
	require.NoError(e.t, err)
	require.Contains(e.t, string(out), "CREATE TABLE "+e.db.Name+".records", "the dump holds the schema's tables")
	return string(out)
}

// TestEncryptionAtRest writes high-sensitivity records and streams events
// through engramd's HTTP API, and proves a pg_dump of the schema holds none
// of their words while every read path gives them back; that a wrong or
// missing master key stops engramd at start-up naming no key; and that
// every record reads back after rotate-master and after rotate-data, one
// of them cut off midway and resumed.
func TestEncryptionAtRest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs engramd and engram, and runs pg_dump")
	}
	if _, err := exec.LookPath("pg_dump"); err != nil {
		t.Skip("pg_dump is not installed")
	}
	t.Parallel()
	e := &encryptionRig{t: t, db: pgtest.NewSchema(t), bin: buildEngramd(t), dir: t.TempDir()}
	e.cli = buildtest.Command(t, "engram")
	e.policy = filepath.Join(e.dir, "policy.yaml")
	require.NoError(t, os.WriteFile(e.policy, []byte(
		"rules: [{name: medical, match: {agent: [medic]}, set: {sensitivity: high}}]\n"), 0o600))
	t.Cleanup(e.stop)

	k1, k2, k3 := seal.NewMasterKey(), seal.NewMasterKey(), seal.NewMasterKey()
	e.start(k1)

	// Words only the sensitive payloads hold; the dump must hold none of
	// them, nor their stems (the search index would show those).
	secret := []string{"quokkafact", "narwhalworking", "ocelotstream", "pangolintool", "axolotlerror", "wombatoutcome", "tapirfactevent"}
	plain := "lowvisiblecanary" // a low record's word: the dump shows it, so the search can fail

	status, body := e.call("POST", "/v1/records", testKey, `{"type": "semantic", "sensitivity": "high", "tags": ["domain:medical"],
		"payload": {"kind": "semantic", "subject": "patient-7", "predicate": "diagnosis", "object": "quokkafact syndrome", "validity": {"mode": "global"}}}`)
	require.Equal(t, http.StatusCreated, status, body)
	fact := recordID(t, body)
	require.Contains(t, body, "quokkafact", "the write's answer is in the clear")
	status, body = e.call("POST", "/v1/records", testKey, `{"type": "working", "sensitivity": "hyper", "tags": ["ward-3"],
		"payload": {"kind": "working", "thread_id": "w1", "state": "executing", "context_summary": "narwhalworking dosage notes"}}`)
	require.Equal(t, http.StatusCreated, status, body)
	working := recordID(t, body)
	status, body = e.call("POST", "/v1/records", testKey, `{"type": "semantic", "sensitivity": "low",
		"payload": {"kind": "semantic", "subject": "clinic", "predicate": "opens", "object": "lowvisiblecanary", "validity": {"mode": "global"}}}`)
	require.Equal(t, http.StatusCreated, status, body)

	// A medic's thread, streamed: the policy makes every event high.
	events := []string{
		`{"kind": "observation", "agent_id": "medic", "thread_id": "case-1", "tags": ["ward-3"], "text": "ocelotstream observed"}`,
		`{"kind": "tool_call", "agent_id": "medic", "thread_id": "case-1", "tool": {"name": "chart", "arguments": ["pangolintool"]}}`,
		`{"kind": "error", "agent_id": "medic", "thread_id": "case-1", "error": {"message": "axolotlerror in chart"}}`,
		`{"kind": "fact", "agent_id": "medic", "thread_id": "case-1", "fact": {"subject": "patient-8", "predicate": "allergy", "object": "tapirfactevent"}}`,
		`{"kind": "outcome", "agent_id": "medic", "thread_id": "case-1", "outcome": {"status": "success", "summary": "wombatoutcome reached"}}`,
	}
	req, err := http.NewRequest("POST", "http://"+e.d.addr+"/v1/events:stream", strings.NewReader(strings.Join(events, "\n")+"\n"))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testKey)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	sc := bufio.NewScanner(res.Body)
	acks := 0
	for sc.Scan() {
		require.NotContains(t, sc.Text(), `"error"`)
		acks++
	}
	res.Body.Close()
	require.Equal(t, len(events), acks)
	require.Eventually(t, func() bool {
		status, body := e.call("GET", "/v1/candidates?status=pending", testKey, "")
		return status == http.StatusOK && strings.Contains(body, `"candidates":[]`)
	}, 30*time.Second, 50*time.Millisecond, "the policy plane did not classify the events")
	status, body = e.call("GET", "/v1/candidates?status=done", testKey, "")
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, "ocelotstream", "the staged events read back in the clear")

	// Every read path gives the payloads back.
	readAll := func() {
		t.Helper()
		status, body := e.call("GET", "/v1/records/"+fact, testKey, "")
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, "quokkafact syndrome")
		status, body = e.call("GET", "/v1/records/"+working, testKey, "")
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, "narwhalworking")
		status, body = e.call("GET", "/v1/records/"+fact+"/history", testKey, "")
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, "quokkafact")
		status, body = e.call("GET", "/v1/records?limit=200", testKey, "")
		require.Equal(t, http.StatusOK, status, body)
		for _, w := range []string{"quokkafact", "narwhalworking", "ocelotstream", "axolotlerror", "tapirfactevent", "wombatoutcome", plain} {
			require.Contains(t, body, w, "the list shows %s", w)
		}
		status, body = e.call("GET", "/v1/candidates?status=done", testKey, "")
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, "pangolintool")
		// Retrieval finds the sealed fact by its tag and its subject,
		// and with a clearance above it shows it whole.
		status, body = e.call("POST", "/v1/retrieve", testKey, `{"task": {"text": "patient-7 diagnosis domain:medical"}, "trust": {"clearance": "hyper"}}`)
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, fact)
		require.Contains(t, body, "quokkafact syndrome")
	}
	readAll()

	dumpHides := func(when string) {
		t.Helper()
		d := e.dump()
		for _, w := range secret {
			require.NotContains(t, d, w[:len(w)-2], "%s: the dump shows %s", when, w)
		}
		require.Contains(t, d, plain, "%s: the dump shows the low record", when)
		require.Contains(t, d, "tenant_data_keys", when)
	}
	dumpHides("after writing")

	// Wrong or missing master key: engramd refuses to start and names the
	// key it lacks by id, never a key.
	id1 := mustKey(t, k1).ID
	e.stop()
	said := e.refused("ENGRAM_MASTER_KEY=" + k3)
	require.Contains(t, said, id1)
	for _, k := range []string{k1, k2, k3} {
		require.NotContains(t, said, k)
	}
	said = e.refused()
	require.Contains(t, said, "no master key is configured")
	require.NotContains(t, said, k1)
	said = e.refused("ENGRAM_MASTER_KEY=not-a-key-but-secret-words")
	require.Contains(t, said, "encryption.master_keys[0]")
	require.NotContains(t, said, "secret-words")

	// rotate-master: the new key first, the old one kept to unwrap; then
	// the new key alone reads everything.
	e.start(k2, k1)
	out := e.engram("keys", "rotate-master")
	require.Contains(t, out, "re-wrapped 1 data key under master key "+mustKey(t, k2).ID, out)
	e.start(k2)
	readAll()

	// rotate-data, cut off after one batch of two values, then resumed.
	out = e.engram("keys", "rotate-data", "--tenant", "acme", "--batch-size", "2", "--max-batches", "1")
	require.Contains(t, out, "data key 2: re-sealed 2", out)
	require.Contains(t, out, "stopped after 1 batch(es)", out)
	require.Greater(t, sealedUnder(t, e.db, 1), 0, "the rotation is half done")
	readAll() // old and new keys side by side
	// A daemon restarted mid-rotation goes on with the same new key.
	e.start(k2)
	out = e.engram("keys", "rotate-data", "--tenant", "acme", "--batch-size", "3")
	require.Contains(t, out, "every value is sealed under data key 2; older keys retired", out)
	require.Zero(t, sealedUnder(t, e.db, 1))
	readAll()
	dumpHides("after rotating both keys")

	// After the rotation a record written and revised is sealed under the
	// new key and reads back.
	status, body = e.call("POST", "/v1/records/"+fact+":supersede", testKey, `{"version": 1, "rationale": "reassessed",
		"record": {"type": "semantic", "sensitivity": "high", "payload": {"kind": "semantic", "subject": "patient-7",
		"predicate": "diagnosis", "object": "quokkafact variant", "validity": {"mode": "global"}}}}`)
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, "quokkafact variant")
	dumpHides("after a supersede")

	// Operator routes only; bad input is a precise problem.
	status, body = e.call("POST", "/v1/encryption:rotate-data", testKey, `{"tenant": "acme"}`)
	require.Equal(t, http.StatusForbidden, status, body)
	status, body = e.call("POST", "/v1/encryption:rotate-data", opsKey, `{"tenant": "ACME!"}`)
	require.Equal(t, http.StatusUnprocessableEntity, status, body)
	require.Contains(t, body, "/tenant")
	status, body = e.call("GET", "/v1/encryption", opsKey, "")
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, mustKey(t, k2).ID)
	require.NotContains(t, body, k2)
	require.NotContains(t, e.log.String(), k2, "no key in the log")
}

func mustKey(t *testing.T, text string) seal.MasterKey {
	t.Helper()
	k, err := seal.ParseMasterKey(text)
	require.NoError(t, err)
	return k
}

func recordID(t *testing.T, body string) string {
	t.Helper()
	var r struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(body), &r), body)
	require.NotEmpty(t, r.ID, body)
	return r.ID
}

// sealedUnder counts the values of the schema sealed under data key
// version v, in every table that holds sealed values.
func sealedUnder(t *testing.T, db *pgtest.Schema, v int) int {
	t.Helper()
	var n int
	require.NoError(t, db.Pool.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM records WHERE (payload #>> '{sealed,key}')::int = $1)
		+ (SELECT count(*) FROM record_versions WHERE (snapshot #>> '{payload,sealed,key}')::int = $1)
		+ (SELECT count(*) FROM episode_entries WHERE (entry #>> '{sealed,key}')::int = $1)
		+ (SELECT count(*) FROM candidates WHERE (event #>> '{sealed,key}')::int = $1)`, v).Scan(&n))
	return n
}
