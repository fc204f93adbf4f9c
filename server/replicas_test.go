package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

// counted is a database that counts the statements sent to it.
type counted struct {
	pg.DBTX
	n atomic.Int64
}

func (c *counted) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c.n.Add(1)
	return c.DBTX.Exec(ctx, sql, args...)
}

func (c *counted) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	c.n.Add(1)
	return c.DBTX.Query(ctx, sql, args...)
}

func (c *counted) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	c.n.Add(1)
	return c.DBTX.QueryRow(ctx, sql, args...)
}

func (c *counted) Begin(ctx context.Context) (pgx.Tx, error) {
	c.n.Add(1)
	return c.DBTX.Begin(ctx)
}

func (c *counted) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	c.n.Add(1)
	return c.DBTX.SendBatch(ctx, b)
}

// router is a read router that sends a reader to the replica until it
// writes, and to the primary after (a replica that has not replayed its
// write yet).
type router struct {
	primary, replica pg.DBTX
	mu               sync.Mutex
	wrote            []string
}

func (r *router) For(reader string) pg.DBTX {
	r.mu.Lock()
	defer r.mu.Unlock()
	if slices.Contains(r.wrote, reader) {
		return r.primary
	}
	return r.replica
}

func (r *router) Wrote(reader string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wrote = append(r.wrote, reader)
}

// The record listing, the record reads and retrieval go where the read
// router says — a replica unless the key has written since — and writes
// never do.
func TestReadsGoWhereTheRouterSays(t *testing.T) {
	t.Parallel()
	db := pgtest.NewSchema(t)
	wr := revise.New(db.Pool, revise.Config{})
	require.NoError(t, store.EnsureTenant(context.Background(), db.Pool, "acme"))
	rs, err := retrieve.NewSettings(retrieve.DefaultConfig())
	require.NoError(t, err)
	replica := &counted{DBTX: db.Pool}
	rt := &router{primary: db.Pool, replica: replica}
	srv := httptest.NewServer(server.New(server.Config{
		DB: db.Pool, Writer: wr, Retrieve: retrieve.New(db.Pool, rs), Reads: rt,
		Keys: []server.Key{
			{Tenant: "acme", Name: "writer", Secret: acmeKey, Role: server.RoleCurator},
			{Tenant: "acme", Name: "reader", Secret: otherKey, Role: server.RoleCurator},
		},
	}))
	t.Cleanup(srv.Close)
	e := &env{t: t, url: srv.URL, db: db}

	res := e.do("POST", "/v1/records", acmeKey, map[string]any{"type": "semantic", "payload": map[string]any{
		"kind": "semantic", "subject": "replica", "predicate": "serves", "object": "listing", "validity": map[string]any{"mode": "global"}}})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	var rec memory.Record
	res.decode(t, &rec)
	require.Zero(t, replica.n.Load(), "a write goes to the primary")
	require.Equal(t, []string{"acme/writer"}, rt.wrote, "the router learns of the key's write")

	id := rec.ID.String()
	// Each read and the status and record id of its answer: a fact has no
	// relations, and no skill.
	reads := []struct {
		method, path string
		status       int
		names        bool
	}{
		{"GET", "/v1/records", http.StatusOK, true},
		{"GET", "/v1/records?type=semantic&as_of=2030-01-01T00:00:00Z", http.StatusOK, true},
		{"GET", "/v1/records/" + id, http.StatusOK, true},
		{"GET", "/v1/records/" + id + "?as_of=2030-01-01T00:00:00Z", http.StatusOK, true},
		{"GET", "/v1/records/" + id + "/history", http.StatusOK, true},
		{"GET", "/v1/records/" + id + "/audit", http.StatusOK, true},
		{"GET", "/v1/records/" + id + "/relations", http.StatusOK, false},
		{"GET", "/v1/records/" + id + "/skill.md", http.StatusNotFound, true},
		{"POST", "/v1/retrieve", http.StatusOK, true},
	}
	for _, rd := range reads {
		var body any
		if rd.method == "POST" {
			body = map[string]any{"task": map[string]any{"text": "replica listing"}}
		}
		// Another key of the tenant, which has written nothing: the
		// replica answers, and has the record.
		before := replica.n.Load()
		res := e.do(rd.method, rd.path, otherKey, body)
		require.Equal(t, rd.status, res.status, "%s %s: %s", rd.method, rd.path, res.body)
		require.Greater(t, replica.n.Load(), before, "%s %s reads the replica", rd.method, rd.path)
		if rd.names {
			require.Contains(t, string(res.body), id, "%s %s", rd.method, rd.path)
		}
		// The writer reads its own write on the primary.
		before = replica.n.Load()
		res = e.do(rd.method, rd.path, acmeKey, body)
		require.Equal(t, rd.status, res.status, "%s %s: %s", rd.method, rd.path, res.body)
		require.Equal(t, before, replica.n.Load(), "%s %s: the writer reads the primary", rd.method, rd.path)
	}
}
