package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/access"
	"github.com/engram-dev/engram/api"
)

// GET /v1/whoami answers each key its own attributes: name, tenant, role
// and agent; an operator key has no tenant; no key, no answer.
func TestWhoami(t *testing.T) {
	t.Parallel()
	e := setupRoles(t, "", access.Budgets{})
	for key, want := range map[string]api.Whoami{
		executorKey:     {Key: "executor", Tenant: "acme", Role: "executor", AgentID: "exec-1"},
		orchestratorKey: {Key: "orchestrator", Tenant: "acme", Role: "orchestrator", AgentID: "orch-1"},
		curatorKey:      {Key: "curator", Tenant: "acme", Role: "curator"},
		acmeKey:         {Key: "acme-test", Tenant: "acme", Role: "curator"},
		opsKey:          {Key: "ops-test", Role: "operator"},
	} {
		res := e.do("GET", "/v1/whoami", key, nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		var got api.Whoami
		res.decode(t, &got)
		require.Equal(t, want, got)
	}
	res := e.do("GET", "/v1/whoami", "", nil)
	require.Equal(t, http.StatusUnauthorized, res.status, string(res.body))
}
