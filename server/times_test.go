package server_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/access"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
)

func working(extra map[string]any) map[string]any {
	body := map[string]any{"type": "working", "payload": map[string]any{"kind": "working", "thread_id": "t1", "state": "planning"}}
	for k, v := range extra {
		body[k] = v
	}
	return body
}

// A client does not date a record in the future (issue 28): created_at or
// last_reinforced_at in 2999 would keep it at full salience and out of
// retention's reach. Past the clock skew allowed it is refused, naming the
// field; within it, it is read as now; a time in the past is the client's.
func TestRecordTimesAreTheServers(t *testing.T) {
	t.Parallel()
	e := setup(t)
	future := "2999-01-01T00:00:00Z"

	res := e.do("POST", "/v1/records", acmeKey, working(map[string]any{"created_at": future}))
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	p := res.problem(t)
	require.Len(t, p.Errors, 1)
	require.Equal(t, "/created_at", p.Errors[0].Pointer)
	require.Contains(t, p.Errors[0].Message, "clock skew")

	res = e.do("POST", "/v1/records", acmeKey, working(map[string]any{"lifecycle": map[string]any{"last_reinforced_at": future}}))
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	require.Equal(t, "/lifecycle/last_reinforced_at", res.problem(t).Errors[0].Pointer)
	require.Zero(t, e.count("SELECT count(*) FROM records"), "nothing was written")

	// A clock a minute fast is within the skew allowed: now, not then.
	before := time.Now().UTC()
	ahead := before.Add(time.Minute).Format(time.RFC3339Nano)
	res = e.do("POST", "/v1/records", acmeKey, working(map[string]any{"created_at": ahead, "lifecycle": map[string]any{"last_reinforced_at": ahead}}))
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	var rec memory.Record
	res.decode(t, &rec)
	require.False(t, rec.CreatedAt.After(time.Now()), "created_at %s is in the future", rec.CreatedAt)
	require.False(t, rec.Lifecycle.LastReinforcedAt.After(time.Now()), "last_reinforced_at %s is in the future", rec.Lifecycle.LastReinforcedAt)
	require.False(t, rec.CreatedAt.Before(before.Truncate(time.Microsecond)))

	// An import of what happened before keeps its time.
	past := time.Date(2020, 5, 1, 12, 0, 0, 0, time.UTC)
	res = e.do("POST", "/v1/records", acmeKey, working(map[string]any{"created_at": past.Format(time.RFC3339)}))
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	res.decode(t, &rec)
	require.True(t, past.Equal(rec.CreatedAt), "got %s", rec.CreatedAt)
}

// Keeping a record from being forgotten — pinned, or a deletion policy of
// manual_only or never — is a curator's decision (issue 28): another
// role's key is refused with the field named, and writes nothing.
func TestKeepingARecordNeedsACurator(t *testing.T) {
	t.Parallel()
	e := setupRoles(t, "", access.Budgets{})
	for pointer, lifecycle := range map[string]map[string]any{
		"/lifecycle/pinned":          {"pinned": true},
		"/lifecycle/deletion_policy": {"deletion_policy": "never"},
	} {
		res := e.do("POST", "/v1/records", orchestratorKey, working(map[string]any{"lifecycle": lifecycle}))
		require.Equal(t, http.StatusForbidden, res.status, string(res.body))
		p := res.problem(t)
		require.Equal(t, "urn:engram:problem:access-denied", p.Type)
		require.Len(t, p.Errors, 1)
		require.Equal(t, pointer, p.Errors[0].Pointer)
	}
	res := e.do("POST", "/v1/records", orchestratorKey, working(map[string]any{"lifecycle": map[string]any{"deletion_policy": "manual_only"}}))
	require.Equal(t, http.StatusForbidden, res.status, string(res.body))
	require.Zero(t, e.count("SELECT count(*) FROM records"), "nothing was written")

	// The type's default policy is no request to keep it.
	res = e.do("POST", "/v1/records", orchestratorKey, working(map[string]any{"lifecycle": map[string]any{"deletion_policy": "auto_prune"}}))
	require.Equal(t, http.StatusCreated, res.status, string(res.body))

	res = e.do("POST", "/v1/records", curatorKey, working(map[string]any{"lifecycle": map[string]any{"pinned": true, "deletion_policy": "never"}}))
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	var rec memory.Record
	res.decode(t, &rec)
	require.True(t, rec.Lifecycle.Pinned)
	require.Equal(t, memory.Never, rec.Lifecycle.DeletionPolicy)
}

// A key configured with no role has least privilege (issue 28): an
// orchestrator with clearance medium, where it was a curator with
// clearance hyper. It writes an agent's records, and neither pins one nor
// reads one above medium; role curator, named, keeps a person's powers.
func TestKeyWithNoRoleHasLeastPrivilege(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const legacyKey = "acme-legacy-0123456789"
	srv := httptest.NewServer(server.New(server.Config{DB: e.db.Pool, Writer: revise.New(e.db.Pool, revise.Config{}),
		Keys: []server.Key{{Tenant: "acme", Name: "legacy", Secret: legacyKey}, {Tenant: "acme", Name: "person", Secret: acmeKey, Role: server.RoleCurator}}}))
	t.Cleanup(srv.Close)
	e.url = srv.URL

	res := e.do("POST", "/v1/records", legacyKey, working(nil))
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	res = e.do("POST", "/v1/records", legacyKey, working(map[string]any{"lifecycle": map[string]any{"pinned": true}}))
	require.Equal(t, http.StatusForbidden, res.status, string(res.body))

	res = e.do("POST", "/v1/records", acmeKey, working(map[string]any{"sensitivity": "high"}))
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	var high memory.Record
	res.decode(t, &high)
	require.Equal(t, http.StatusOK, e.do("GET", "/v1/records/"+high.ID.String(), acmeKey, nil).status)
	res = e.do("GET", "/v1/records/"+high.ID.String(), legacyKey, nil)
	require.NotEqual(t, http.StatusOK, res.status, "above its clearance")
	res = e.do("POST", "/v1/records/"+high.ID.String()+":purge", legacyKey, nil)
	require.Equal(t, http.StatusForbidden, res.status, string(res.body))
}
