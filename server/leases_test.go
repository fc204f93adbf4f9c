package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/internal/clocktest"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

// leaseEnv is a daemon's HTTP API over a fresh schema, on a controllable
// clock.
type leaseEnv struct {
	*env
	clock *clocktest.Clock
	reg   *prometheus.Registry
}

func setupLeases(t *testing.T) *leaseEnv {
	t.Helper()
	db := pgtest.NewSchema(t)
	for _, tenant := range []string{"acme", "other"} {
		require.NoError(t, store.EnsureTenant(t.Context(), db.Pool, tenant))
	}
	clk := clocktest.New(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	e := &leaseEnv{env: &env{t: t, db: db}, clock: clk}
	e.url = e.daemon()
	return e
}

// daemon starts an engramd API over the environment's schema and clock,
// as a restarted daemon would be: nothing shared with the others but the
// database.
func (e *leaseEnv) daemon() string {
	reg := prometheus.NewRegistry()
	if e.reg == nil {
		e.reg = reg
	}
	wr := revise.New(e.db.Pool, revise.Config{Now: e.clock.Now, Registry: reg})
	srv := httptest.NewServer(server.New(server.Config{DB: e.db.Pool, Writer: wr, Keys: testKeys, Registry: reg, Now: e.clock.Now}))
	e.t.Cleanup(srv.Close)
	return srv.URL
}

// acquire asks for a lease and decodes the answer.
func (e *leaseEnv) acquire(body map[string]any, status int) api.Lease {
	e.t.Helper()
	res := e.do("POST", "/v1/leases", acmeKey, body)
	require.Equal(e.t, status, res.status, string(res.body))
	var l api.Lease
	res.decode(e.t, &l)
	return l
}

// workingRecord creates a working-memory record (the type PATCH edits) in
// scope.
func (e *leaseEnv) workingRecord(scope, state string) memory.Record {
	e.t.Helper()
	return e.create(map[string]any{"type": "working", "scope": scope,
		"payload": map[string]any{"kind": "working", "thread_id": "t1", "state": "planning", "context_summary": state}})
}

// patch sets a working record's state as agent, with a fencing token
// unless token is 0.
func (e *leaseEnv) patch(id uuid.UUID, version int, state, agent string, token int64) response {
	e.t.Helper()
	headers := []string{"X-Engram-Actor", agent}
	if token != 0 {
		headers = append(headers, api.FencingTokenHeader, strconv.FormatInt(token, 10))
	}
	return e.do("PATCH", "/v1/records/"+id.String(), acmeKey, map[string]any{"version": version,
		"payload": map[string]any{"kind": "working", "thread_id": "t1", "state": "executing", "context_summary": state}}, headers...)
}

func (e *leaseEnv) state(id uuid.UUID) (string, int) {
	e.t.Helper()
	res := e.do("GET", "/v1/records/"+id.String(), acmeKey, nil)
	require.Equal(e.t, http.StatusOK, res.status, string(res.body))
	var rec struct {
		Version int `json:"version"`
		Payload struct {
			State string `json:"context_summary"`
		} `json:"payload"`
	}
	res.decode(e.t, &rec)
	return rec.Payload.State, rec.Version
}

// counter reads a counter of the first daemon's registry.
func (e *leaseEnv) counter(name, label, value string) float64 {
	e.t.Helper()
	families, err := e.reg.Gather()
	require.NoError(e.t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	e.t.Fatalf("no %s{%s=%q}", name, label, value)
	return 0
}

// The classic failure fencing tokens exist for (write-path RFC §12.8.3):
// agent A takes a lease and pauses; its lease expires; agent B takes the
// lease, with a newer token, and writes; A wakes and writes with its stale
// token. A's write is refused and the record holds B's.
func TestLeaseStaleTokenAfterExpiry(t *testing.T) {
	t.Parallel()
	e := setupLeases(t)
	rec := e.workingRecord("project-x", "start")

	// With no lease, a write without a token goes through, as before
	// leases existed.
	res := e.patch(rec.ID, 1, "unleased", "agent-c", 0)
	require.Equal(t, http.StatusOK, res.status, string(res.body))

	a := e.acquire(map[string]any{"record_id": rec.ID, "agent_id": "agent-a", "ttl_seconds": 30}, http.StatusCreated)
	require.Equal(t, api.LeaseGranted, a.Outcome)
	require.Equal(t, api.LeaseActive, a.Status)
	require.Equal(t, "agent-a", a.AgentID)
	require.Equal(t, e.clock.Now().Add(30*time.Second), a.ExpiresAt)

	// While A holds it, B is denied the lease and its writes, with A named
	// and Retry-After until A's lease runs out.
	e.clock.Advance(10 * time.Second)
	res = e.do("POST", "/v1/leases", acmeKey, map[string]any{"record_id": rec.ID, "agent_id": "agent-b"})
	require.Equal(t, http.StatusConflict, res.status, string(res.body))
	p := res.problem(t)
	require.Equal(t, "urn:engram:problem:lease-held", p.Type)
	require.Equal(t, "agent-a", p.Holder)
	require.Equal(t, a.ExpiresAt, *p.LeaseExpiresAt)
	require.Equal(t, "20", res.header.Get("Retry-After"))
	res = e.patch(rec.ID, 2, "b-without-lease", "agent-b", 0)
	require.Equal(t, http.StatusConflict, res.status, string(res.body))
	require.Equal(t, "urn:engram:problem:lease-held", res.problem(t).Type)

	// A pauses past its lease; B gets the lease with a newer token and
	// writes under it.
	e.clock.Advance(21 * time.Second)
	b := e.acquire(map[string]any{"record_id": rec.ID, "agent_id": "agent-b", "ttl_seconds": 60}, http.StatusCreated)
	require.Greater(t, b.FencingToken, a.FencingToken)
	require.NotEqual(t, a.ID, b.ID)
	res = e.patch(rec.ID, 2, "written-by-b", "agent-b", b.FencingToken)
	require.Equal(t, http.StatusOK, res.status, string(res.body))

	// A wakes and writes with its stale token, at the current version even:
	// refused, nothing written.
	res = e.patch(rec.ID, 3, "written-by-a", "agent-a", a.FencingToken)
	require.Equal(t, http.StatusConflict, res.status, string(res.body))
	p = res.problem(t)
	require.Equal(t, "urn:engram:problem:stale-fencing-token", p.Type)
	require.Equal(t, b.FencingToken, p.CurrentFencingToken)
	require.Equal(t, []uuid.UUID{rec.ID}, p.RecordIDs)
	// Its other writes too: a revision, a delete.
	hdr := []string{"X-Engram-Actor", "agent-a", api.FencingTokenHeader, strconv.FormatInt(a.FencingToken, 10)}
	res = e.do("POST", "/v1/records/"+rec.ID.String()+":retract", acmeKey, map[string]any{"rationale": "stale"}, hdr...)
	require.Equal(t, "urn:engram:problem:stale-fencing-token", res.problem(t).Type)
	res = e.do("DELETE", "/v1/records/"+rec.ID.String(), acmeKey, nil, hdr...)
	require.Equal(t, "urn:engram:problem:stale-fencing-token", res.problem(t).Type)
	// Without its token, A is a writer without the lease B holds.
	res = e.patch(rec.ID, 3, "written-by-a", "agent-a", 0)
	require.Equal(t, "urn:engram:problem:lease-held", res.problem(t).Type)

	state, version := e.state(rec.ID)
	require.Equal(t, "written-by-b", state)
	require.Equal(t, 3, version)
	res = e.do("GET", "/v1/records/"+rec.ID.String()+"/audit", acmeKey, nil)
	var trail api.AuditTrail
	res.decode(t, &trail)
	require.Len(t, trail.Entries, 3, "create, C's update, B's update: none of A's")

	require.Equal(t, 2.0, e.counter(revise.MetricLeaseRequests, "result", "granted"))
	require.Equal(t, 1.0, e.counter(revise.MetricLeaseRequests, "result", "denied"))
	require.Equal(t, 1.0, e.counter(revise.MetricLeaseRequests, "result", "expired"))
	require.Equal(t, 3.0, e.counter(revise.MetricLeaseWriteRefusals, "reason", "stale_token"))
	require.Equal(t, 2.0, e.counter(revise.MetricLeaseWriteRefusals, "reason", "lease_held"))
}

// A lease is re-entrant for its agent, renewable, released explicitly;
// its resource's fencing token only grows, across release, expiry and a
// daemon's restart.
func TestLeaseLifecycle(t *testing.T) {
	t.Parallel()
	e := setupLeases(t)
	rec := e.workingRecord("project-y", "start")
	body := map[string]any{"record_id": rec.ID, "agent_id": "agent-a"}

	first := e.acquire(body, http.StatusCreated)
	require.Equal(t, 60*time.Second, first.ExpiresAt.Sub(first.GrantedAt), "the default TTL")
	res := e.do("GET", "/v1/leases/"+first.ID.String(), acmeKey, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))

	// Re-entrant: the same lease and token, a later expiry.
	e.clock.Advance(20 * time.Second)
	again := e.acquire(body, http.StatusOK)
	require.Equal(t, api.LeaseRenewed, again.Outcome)
	require.Equal(t, first.ID, again.ID)
	require.Equal(t, first.FencingToken, again.FencingToken)
	require.Equal(t, e.clock.Now().Add(60*time.Second), again.ExpiresAt)

	// Renewal, by its holder only.
	e.clock.Advance(50 * time.Second)
	res = e.do("POST", "/v1/leases/"+first.ID.String()+":renew", acmeKey, map[string]any{"agent_id": "agent-a", "ttl_seconds": 90})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var renewed api.Lease
	res.decode(t, &renewed)
	require.Equal(t, first.FencingToken, renewed.FencingToken)
	require.Equal(t, e.clock.Now().Add(90*time.Second), renewed.ExpiresAt)
	res = e.do("POST", "/v1/leases/"+first.ID.String()+":renew", acmeKey, nil, "X-Engram-Actor", "agent-b")
	require.Equal(t, "urn:engram:problem:not-lease-holder", res.problem(t).Type)
	res = e.do("DELETE", "/v1/leases/"+first.ID.String()+"?agent_id=agent-b", acmeKey, nil)
	require.Equal(t, "urn:engram:problem:not-lease-holder", res.problem(t).Type)

	// The lease holds B off until A releases it; then B gets it at once,
	// with a larger token.
	require.Equal(t, http.StatusConflict, e.do("POST", "/v1/leases", acmeKey, map[string]any{"record_id": rec.ID, "agent_id": "agent-b"}).status)
	res = e.do("DELETE", "/v1/leases/"+first.ID.String(), acmeKey, nil, "X-Engram-Actor", "agent-a")
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var released api.Lease
	res.decode(t, &released)
	require.Equal(t, api.LeaseReleased, released.Status)
	res = e.do("POST", "/v1/leases/"+first.ID.String()+":release", acmeKey, map[string]any{"agent_id": "agent-a"})
	require.Equal(t, http.StatusOK, res.status, "releasing again changes nothing: %s", res.body)
	res = e.do("POST", "/v1/leases/"+first.ID.String()+":renew", acmeKey, map[string]any{"agent_id": "agent-a"})
	require.Equal(t, "urn:engram:problem:lease-released", res.problem(t).Type)

	b := e.acquire(map[string]any{"record_id": rec.ID, "agent_id": "agent-b", "ttl_seconds": 30}, http.StatusCreated)
	require.Greater(t, b.FencingToken, first.FencingToken, "across a release")
	// The released lease is gone with its resource's new grant.
	require.Equal(t, http.StatusNotFound, e.do("GET", "/v1/leases/"+first.ID.String(), acmeKey, nil).status)

	// B's lease runs out: it cannot renew it, and A gets the record with a
	// larger token.
	e.clock.Advance(30 * time.Second)
	res = e.do("POST", "/v1/leases/"+b.ID.String()+":renew", acmeKey, map[string]any{"agent_id": "agent-b"})
	require.Equal(t, "urn:engram:problem:lease-expired", res.problem(t).Type)
	res = e.do("GET", "/v1/leases/"+b.ID.String(), acmeKey, nil)
	var expired api.Lease
	res.decode(t, &expired)
	require.Equal(t, api.LeaseExpired, expired.Status)
	a := e.acquire(body, http.StatusCreated)
	require.Greater(t, a.FencingToken, b.FencingToken, "across an expiry")

	// A restarted daemon, sharing the database, goes on from there.
	e.url = e.daemon()
	res = e.do("DELETE", "/v1/leases/"+a.ID.String(), acmeKey, nil, "X-Engram-Actor", "agent-a")
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	c := e.acquire(map[string]any{"record_id": rec.ID, "agent_id": "agent-c"}, http.StatusCreated)
	require.Greater(t, c.FencingToken, a.FencingToken, "across a restart")

	// The database holds the tokens to it: no update may lower one.
	_, err := e.db.Pool.Exec(t.Context(), `UPDATE leases SET token = token - 1 WHERE tenant_id = 'acme'`)
	require.ErrorContains(t, err, "may not follow")
	_, err = e.db.Pool.Exec(t.Context(), `UPDATE lease_counters SET last_token = last_token - 1`)
	require.ErrorContains(t, err, "may not follow")
}

// A scope's lease covers every record of the scope, existing or new; a
// record's lease and its scope's exclude each other across agents.
func TestLeaseOnScope(t *testing.T) {
	t.Parallel()
	e := setupLeases(t)
	inScope := e.workingRecord("shared", "start")
	elsewhere := e.workingRecord("private", "start")

	s := e.acquire(map[string]any{"scope": "shared", "agent_id": "agent-a", "ttl_seconds": 120}, http.StatusCreated)
	require.Equal(t, "shared", s.Scope)
	require.Nil(t, s.RecordID)

	res := e.patch(inScope.ID, 1, "b", "agent-b", 0)
	require.Equal(t, "urn:engram:problem:lease-held", res.problem(t).Type)
	res = e.do("POST", "/v1/records", acmeKey, map[string]any{"type": "working", "scope": "shared",
		"payload": map[string]any{"kind": "working", "thread_id": "t2", "state": "planning"}}, "X-Engram-Actor", "agent-b")
	require.Equal(t, "urn:engram:problem:lease-held", res.problem(t).Type, "creating a record in the scope is writing to it")
	res = e.do("POST", "/v1/leases", acmeKey, map[string]any{"record_id": inScope.ID, "agent_id": "agent-b"})
	p := res.problem(t)
	require.Equal(t, "urn:engram:problem:lease-held", p.Type)
	require.Equal(t, "agent-a", p.Holder)

	// Outside the scope, B writes as before.
	require.Equal(t, http.StatusOK, e.patch(elsewhere.ID, 1, "b", "agent-b", 0).status)
	// The holder writes with its token, or as itself.
	require.Equal(t, http.StatusOK, e.patch(inScope.ID, 1, "a", "agent-a", s.FencingToken).status)
	require.Equal(t, http.StatusOK, e.patch(inScope.ID, 2, "a2", "agent-a", 0).status)

	// B holds a record of scope "private": A cannot lease the scope.
	r := e.acquire(map[string]any{"record_id": elsewhere.ID, "agent_id": "agent-b"}, http.StatusCreated)
	res = e.do("POST", "/v1/leases", acmeKey, map[string]any{"scope": "private", "agent_id": "agent-a"})
	p = res.problem(t)
	require.Equal(t, "agent-b", p.Holder)
	require.Equal(t, []uuid.UUID{elsewhere.ID}, p.RecordIDs)

	// A scope grant fences older record grants: once B's record lease ran
	// out and A leased the scope, B's token is stale there.
	e.clock.Advance(61 * time.Second)
	s2 := e.acquire(map[string]any{"scope": "private", "agent_id": "agent-a", "ttl_seconds": 30}, http.StatusCreated)
	require.Greater(t, s2.FencingToken, r.FencingToken)
	res = e.patch(elsewhere.ID, 2, "late", "agent-b", r.FencingToken)
	require.Equal(t, "urn:engram:problem:stale-fencing-token", res.problem(t).Type)
}

// Bad lease requests get field-level problems, and nothing is granted; a
// record of another tenant is not found; an operator key leases nothing.
func TestLeaseBadRequests(t *testing.T) {
	t.Parallel()
	e := setupLeases(t)
	rec := e.workingRecord("s", "start")
	for _, c := range []struct {
		body    map[string]any
		pointer string
	}{
		{map[string]any{"record_id": rec.ID, "agent_id": "a", "ttl_seconds": 10}, "/ttl_seconds"},
		{map[string]any{"record_id": rec.ID, "agent_id": "a", "ttl_seconds": 121}, "/ttl_seconds"},
		{map[string]any{"record_id": rec.ID, "agent_id": "a", "ttl_seconds": -5}, "/ttl_seconds"},
		{map[string]any{"record_id": rec.ID, "agent_id": "a", "ttl_seconds": 1.5}, "/ttl_seconds"},
		{map[string]any{"record_id": rec.ID}, "/agent_id"},
		{map[string]any{"agent_id": "a"}, "/record_id"},
		{map[string]any{"record_id": rec.ID, "scope": "s", "agent_id": "a"}, "/scope"},
		{map[string]any{"scope": "s", "agent_id": "a", "ttl": 60}, "/ttl"},
	} {
		res := e.do("POST", "/v1/leases", acmeKey, c.body)
		require.Equal(t, http.StatusUnprocessableEntity, res.status, "%v: %s", c.body, res.body)
		p := res.problem(t)
		require.Equal(t, "urn:engram:problem:validation-failed", p.Type)
		require.Equal(t, c.pointer, p.Errors[0].Pointer, "%v", c.body)
	}
	var n int
	require.NoError(t, e.db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM leases`).Scan(&n))
	require.Zero(t, n)

	// A malformed fencing token is refused before anything is written.
	res := e.patch(rec.ID, 1, "x", "a", 0)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	res = e.do("PATCH", "/v1/records/"+rec.ID.String(), acmeKey, map[string]any{"version": 2,
		"payload": map[string]any{"kind": "working", "thread_id": "t1", "state": "done"}}, api.FencingTokenHeader, "soon")
	require.Equal(t, http.StatusBadRequest, res.status)
	require.Equal(t, api.FencingTokenHeader, res.problem(t).Errors[0].Header)

	// Another tenant's record is not found, and its lease neither.
	res = e.do("POST", "/v1/leases", otherKey, map[string]any{"record_id": rec.ID, "agent_id": "spy"})
	require.Equal(t, http.StatusNotFound, res.status, string(res.body))
	l := e.acquire(map[string]any{"record_id": rec.ID, "agent_id": "a"}, http.StatusCreated)
	require.Equal(t, int64(1), l.FencingToken, "the other tenant's attempt took no token")
	require.Equal(t, http.StatusNotFound, e.do("GET", "/v1/leases/"+l.ID.String(), otherKey, nil).status)
	require.Equal(t, http.StatusNotFound, e.do("DELETE", "/v1/leases/"+l.ID.String(), otherKey, nil, "X-Engram-Actor", "a").status)
	res = e.do("POST", "/v1/leases/"+l.ID.String()+":renew", otherKey, map[string]any{"agent_id": "a"})
	require.Equal(t, http.StatusNotFound, res.status)
	// The other tenant's scope of the same name is its own.
	res = e.do("POST", "/v1/leases", otherKey, map[string]any{"scope": "s", "agent_id": "b"})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))

	require.Equal(t, http.StatusForbidden, e.do("POST", "/v1/leases", opsKey, map[string]any{"scope": "s", "agent_id": "a"}).status)
	require.Equal(t, http.StatusNotFound, e.do("POST", "/v1/leases/"+l.ID.String()+":steal", acmeKey, nil).status)
}

// A key bound to an agent holds leases as that agent only (write-path RFC
// §12.8.2, §12.8.3): naming another agent is refused, so no agent takes or
// releases another's lease by naming it; leaving agent_id out takes the
// key's agent. A key bound to no agent names the agent it acts for.
func TestLeaseAgentIsTheKeysAgent(t *testing.T) {
	t.Parallel()
	e := setupLeases(t)
	const plannerKey = "planner-7-key-0123456789abcdef"
	keys := append(append([]server.Key{}, testKeys...),
		server.Key{Tenant: "acme", Name: "planner-7", Secret: plannerKey, Role: server.RoleOrchestrator, Agent: "planner-7"})
	wr := revise.New(e.db.Pool, revise.Config{Now: e.clock.Now})
	srv := httptest.NewServer(server.New(server.Config{DB: e.db.Pool, Writer: wr, Keys: keys, Now: e.clock.Now}))
	t.Cleanup(srv.Close)
	e.url = srv.URL
	rec := e.workingRecord("s", "start")

	res := e.do("POST", "/v1/leases", plannerKey, map[string]any{"record_id": rec.ID, "agent_id": "someone-else"})
	require.Equal(t, http.StatusForbidden, res.status, string(res.body))
	require.Equal(t, "urn:engram:problem:access-denied", res.problem(t).Type)
	var n int
	require.NoError(t, e.db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM leases`).Scan(&n))
	require.Zero(t, n, "nothing granted")

	res = e.do("POST", "/v1/leases", plannerKey, map[string]any{"record_id": rec.ID}, "X-Engram-Actor", "someone-else")
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	var l api.Lease
	require.NoError(t, json.Unmarshal(res.body, &l))
	require.Equal(t, "planner-7", l.AgentID, "the key's agent, whatever the actor header says")

	// An unbound key naming the holder is the holder's word; naming
	// another agent finds the record held.
	res = e.do("POST", "/v1/leases", acmeKey, map[string]any{"record_id": rec.ID, "agent_id": "someone-else"})
	require.Equal(t, http.StatusConflict, res.status, string(res.body))
	require.Equal(t, "urn:engram:problem:lease-held", res.problem(t).Type)

	// The planner's key cannot release the lease as another agent either.
	res = e.do("DELETE", "/v1/leases/"+l.ID.String()+"?agent_id=someone-else", plannerKey, nil)
	require.Equal(t, http.StatusForbidden, res.status, string(res.body))
	res = e.do("DELETE", "/v1/leases/"+l.ID.String(), plannerKey, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
}
