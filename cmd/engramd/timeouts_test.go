package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pgtest"
)

// postFact sends a fact over HTTP as an agent would, and returns the
// answer's status and body.
func postFact(addr, predicate string) (int, []byte, error) {
	body, _ := json.Marshal(map[string]any{"type": "semantic", "payload": map[string]any{"kind": "semantic",
		"subject": "ci runner", "predicate": predicate, "object": "ubuntu-24.04", "validity": map[string]any{"mode": "global"}}})
	req, err := http.NewRequest("POST", "http://"+addr+"/v1/records", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}

// A daemon killed while its statement waits on a lock leaves nothing
// running in PostgreSQL: the server notices within the client check
// interval that the daemon is gone (here with no statement or lock
// timeout, so only that can end it). A live daemon's request that waits
// past the lock timeout is answered 503 with a problem, nothing written.
func TestKilledDaemonsQueryEnds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a daemon")
	}
	t.Parallel()
	db := pgtest.NewSchema(t)
	ctx := context.Background()
	bin := buildEngramd(t)
	dir := t.TempDir()
	config := func(name, yaml string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
		return "ENGRAM_CONFIG=" + path
	}
	unbounded := config("unbounded.yaml", "database:\n  statement_timeout: 0s\n  lock_timeout: 0s\n  client_check_interval: 200ms\n")
	d := startDaemon(t, bin, db.URL, freeAddr(t), unbounded)

	// The test holds a lock that every insert into records waits for.
	holder, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback(context.WithoutCancel(ctx)) }()
	var holderPID int
	require.NoError(t, holder.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&holderPID))
	_, err = holder.Exec(ctx, `LOCK TABLE records IN SHARE MODE`)
	require.NoError(t, err)

	go func() { _, _, _ = postFact(d.addr, "runs_on") }()
	blocked := func() []int {
		rows, err := db.Pool.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, holderPID)
		require.NoError(t, err)
		defer rows.Close()
		var pids []int
		for rows.Next() {
			var pid int
			require.NoError(t, rows.Scan(&pid))
			pids = append(pids, pid)
		}
		require.NoError(t, rows.Err())
		return pids
	}
	var waiting []int
	for deadline := time.Now().Add(60 * time.Second); len(waiting) == 0; time.Sleep(50 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "the daemon's insert never waited on the lock")
		waiting = blocked()
	}

	require.NoError(t, d.cmd.Process.Signal(syscall.SIGKILL))
	_, _ = d.cmd.Process.Wait()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var alive int
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)`, waiting).Scan(&alive))
		if alive == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the killed daemon's statement still runs in PostgreSQL, holding its place in the lock queue")
	}

	// A live daemon with a lock timeout answers a request stuck behind
	// the lock with 503, and writes nothing.
	bounded := config("bounded.yaml", "database:\n  lock_timeout: 300ms\n")
	live := startDaemon(t, bin, db.URL, freeAddr(t), bounded)
	status, body, err := postFact(live.addr, "deploys_with")
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, status, string(body))
	var p struct{ Type, Detail string }
	require.NoError(t, json.Unmarshal(body, &p))
	require.Equal(t, "urn:engram:problem:timeout", p.Type)
	require.NoError(t, holder.Rollback(ctx))
	var n int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM records`).Scan(&n))
	require.Zero(t, n, "nothing of either request was written")
	status, body, err = postFact(live.addr, "deploys_with")
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, status, string(body))
}
