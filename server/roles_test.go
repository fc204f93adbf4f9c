package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/access"
	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/policy"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

// Keys of acme's four roles. The executor's agent is exec-1; exec-2 is
// another agent of the tenant, whose session the executor may not touch.
const (
	executorKey     = "acme-executor-0123456789"
	verifierKey     = "acme-verifier-0123456789"
	orchestratorKey = "acme-orchestrator-0123456789"
	curatorKey      = "acme-curator-0123456789"
	medicalKey      = "acme-medical-0123456789"
)

var roleKeys = map[access.Role]string{
	access.Executor: executorKey, access.Verifier: verifierKey, access.Orchestrator: orchestratorKey, access.Curator: curatorKey,
}

// rolesEnv is a server with every tenant role's key, an operator's, the
// legacy role-less tenant key (acmeKey, a curator), the operator's access
// rules and the write budgets given.
type rolesEnv struct {
	*env
	reg *prometheus.Registry
	w   *revise.Writer
	seq atomic.Int64
}

func setupRoles(t *testing.T, rules string, budgets access.Budgets) *rolesEnv {
	t.Helper()
	db := pgtest.NewSchema(t)
	reg := prometheus.NewRegistry()
	wr := revise.New(db.Pool, revise.Config{Registry: reg, Budgets: budgets})
	require.NoError(t, store.EnsureTenant(context.Background(), db.Pool, "acme"))
	pol, err := policy.Parse([]byte(rules), "test")
	require.NoError(t, err)
	settings, err := decay.NewSettings(decay.DefaultConfig())
	require.NoError(t, err)
	rs, err := retrieve.NewSettings(retrieve.DefaultConfig())
	require.NoError(t, err)
	w := ingest.NewWorker(ingest.WorkerConfig{DB: db.Pool, Writer: wr})
	keys := append([]server.Key{
		{Tenant: "acme", Name: "executor", Secret: executorKey, Role: server.RoleExecutor, Agent: "exec-1"},
		{Tenant: "acme", Name: "verifier", Secret: verifierKey, Role: server.RoleVerifier, Agent: "verifier-1"},
		{Tenant: "acme", Name: "orchestrator", Secret: orchestratorKey, Role: server.RoleOrchestrator, Agent: "orch-1"},
		{Tenant: "acme", Name: "curator", Secret: curatorKey, Role: server.RoleCurator},
		{Tenant: "acme", Name: "medical", Secret: medicalKey, Role: server.RoleExecutor, Agent: "med-1", Domains: []string{"medical"}},
	}, testKeys...)
	srv := httptest.NewServer(server.New(server.Config{
		DB: db.Pool, Writer: wr, Logger: slog.New(slog.DiscardHandler), Registry: reg,
		Policy: func() *policy.Policy { return pol },
		Ingest: ingest.New(ingest.Config{DB: db.Pool, Policy: w.Policy, Staged: w.Notify}),
		Decay:  decay.New(db.Pool, wr, settings), Retrieve: retrieve.New(db.Pool, rs),
		Keys: keys,
	}))
	t.Cleanup(srv.Close)
	return &rolesEnv{env: &env{t: t, url: srv.URL, db: db}, reg: reg, w: wr}
}

// body is a new, valid record of a layer, unique in the test (so that no
// gate takes it for a duplicate), from agent, with more fields.
func (e *rolesEnv) body(layer memory.Type, agent string, more ...any) map[string]any {
	n := e.seq.Add(1)
	var payload map[string]any
	switch layer {
	case memory.Episodic:
		payload = map[string]any{"kind": "episodic", "timeline": []any{map[string]any{"t": "2026-01-28T00:00:00Z", "event_kind": "tool_call", "ref": fmt.Sprintf("evt://%d", n)}}}
	case memory.Working:
		payload = map[string]any{"kind": "working", "thread_id": fmt.Sprintf("thread-%d", n), "state": "executing"}
	case memory.Semantic:
		payload = map[string]any{"kind": "semantic", "subject": fmt.Sprintf("service-%d", n), "predicate": "runs_on", "object": "kubernetes", "validity": map[string]any{"mode": "global"}}
	case memory.Competence:
		payload = map[string]any{"kind": "competence", "skill_name": fmt.Sprintf("clear_cache_%d", n), "triggers": []any{map[string]any{"signal": fmt.Sprintf("cache mismatch %d", n)}}, "recipe": []any{map[string]any{"step": "rm -rf cache"}}}
	case memory.PlanGraph:
		payload = map[string]any{"kind": "plan_graph", "plan_id": fmt.Sprintf("setup-%d", n), "version": "1", "nodes": []any{map[string]any{"id": "a", "op": "git_clone"}}, "edges": []any{}}
	}
	b := map[string]any{"type": string(layer), "payload": payload}
	if agent != "" {
		b["agent_id"] = agent
	}
	for i := 0; i+1 < len(more); i += 2 {
		b[more[i].(string)] = more[i+1]
	}
	return b
}

// fixture is a record the curator made: of layer, from agent.
func (e *rolesEnv) fixture(layer memory.Type, agent string, more ...any) memory.Record {
	e.t.Helper()
	res := e.do("POST", "/v1/records", curatorKey, e.body(layer, agent, more...))
	require.Equal(e.t, http.StatusCreated, res.status, string(res.body))
	var rec memory.Record
	res.decode(e.t, &rec)
	return rec
}

// denied checks a 403 access-denied problem naming rule (a prefix of it
// when rule ends in "*"), and that it shows nothing of the record.
func denied(t *testing.T, res response, rule string, secrets ...string) {
	t.Helper()
	require.Equal(t, http.StatusForbidden, res.status, string(res.body))
	p := res.problem(t)
	require.Equal(t, "urn:engram:problem:access-denied", p.Type)
	if prefix, ok := strings.CutSuffix(rule, "*"); ok {
		require.True(t, strings.HasPrefix(p.Rule, prefix), "rule %q, want %s", p.Rule, rule)
	} else {
		require.Equal(t, rule, p.Rule)
	}
	for _, s := range secrets {
		require.NotContains(t, string(res.body), s)
	}
}

// wantGrant is the matrix of write-path RFC §12.8.2 as the README states
// it, written out independently of package access.
func wantGrant(role access.Role, layer memory.Type, op access.Op) access.Grant {
	session := layer == memory.Episodic || layer == memory.Working
	own := session || layer == memory.Semantic // an agent's session and the facts it states
	switch role {
	case access.Executor:
		switch {
		case (op == access.OpRead || op == access.OpFeedback) && !session:
			return access.All
		case (op == access.OpRead || op == access.OpFeedback) && session:
			return access.Own
		case (op == access.OpWrite || op == access.OpDelete) && own:
			return access.Own
		}
	case access.Verifier:
		if op == access.OpRead || op == access.OpFeedback || op == access.OpAnnotate {
			return access.All
		}
	case access.Orchestrator:
		if op == access.OpRead || op == access.OpFeedback || op == access.OpAnnotate || op == access.OpDelete || op == access.OpWrite && own {
			return access.All
		}
	case access.Curator:
		return access.All
	}
	return access.None
}

// Each role's allowed and denied operations on each layer (write-path RFC
// §12.8.2), through the HTTP API: read (get), write (create), feedback
// (feedback), delete (soft), purge (hard) and admin (quarantine), on the
// key's own agent's records and on another agent's.
func TestRoleMatrix(t *testing.T) {
	t.Parallel()
	e := setupRoles(t, "", access.Budgets{})
	for _, role := range access.TenantRoles {
		key := roleKeys[role]
		agent := map[access.Role]string{access.Executor: "exec-1", access.Verifier: "verifier-1", access.Orchestrator: "orch-1"}[role]
		for _, layer := range memory.Types {
			for _, own := range []bool{true, false} {
				owner := "exec-2"
				if own {
					owner = agent
				}
				name := fmt.Sprintf("%s/%s/own=%v", role, layer, own)
				may := func(op access.Op) bool {
					g := wantGrant(role, layer, op)
					require.Equal(t, g, access.Permits(role, layer, op), "%s %s", name, op)
					return g == access.All || g == access.Own && own && agent != ""
				}

				// read
				rec := e.fixture(layer, owner)
				res := e.do("GET", "/v1/records/"+rec.ID.String(), key, nil)
				if may(access.OpRead) {
					require.Equal(t, http.StatusOK, res.status, "%s read: %s", name, res.body)
				} else {
					denied(t, res, "role:"+string(role)+":read:*", "payload", "kubernetes", "git_clone")
				}
				res = e.do("GET", "/v1/records/"+rec.ID.String()+"/history", key, nil)
				require.Equal(t, may(access.OpRead), res.status == http.StatusOK, "%s history: %s", name, res.body)

				// write: a new record of the layer from owner
				before := e.count("SELECT count(*) FROM records")
				res = e.do("POST", "/v1/records", key, e.body(layer, owner))
				if may(access.OpWrite) {
					require.Contains(t, []int{http.StatusCreated, http.StatusOK, http.StatusAccepted}, res.status, "%s write: %s", name, res.body)
				} else {
					denied(t, res, "role:"+string(role)+":write:*")
					require.Equal(t, before, e.count("SELECT count(*) FROM records"), "%s: a refused write writes nothing", name)
				}

				// feedback on the record
				res = e.do("POST", "/v1/feedback", key, map[string]any{"key": uuid.NewString(), "record_ids": []string{rec.ID.String()}, "outcome": "used_success"})
				if may(access.OpFeedback) {
					require.Equal(t, http.StatusOK, res.status, "%s feedback: %s", name, res.body)
				} else {
					denied(t, res, "role:"+string(role)+":feedback:*")
				}

				// admin: quarantine (feedback may have revised the record)
				e.do("GET", "/v1/records/"+rec.ID.String(), curatorKey, nil).decode(t, &rec)
				res = e.do("POST", "/v1/records/"+rec.ID.String()+":quarantine", key, map[string]any{"version": rec.Version, "rationale": "suspect"})
				if may(access.OpAdmin) {
					require.Equal(t, http.StatusOK, res.status, "%s admin: %s", name, res.body)
				} else {
					denied(t, res, "role:"+string(role)+":admin:*")
				}

				// delete (soft) and purge (hard), each on a record of its own
				rec = e.fixture(layer, owner)
				res = e.do("DELETE", "/v1/records/"+rec.ID.String(), key, nil)
				if may(access.OpDelete) {
					require.Equal(t, http.StatusOK, res.status, "%s delete: %s", name, res.body)
				} else {
					denied(t, res, "role:"+string(role)+":delete:*")
				}
				rec = e.fixture(layer, owner)
				res = e.do("DELETE", "/v1/records/"+rec.ID.String(), curatorKey, nil)
				require.Equal(t, http.StatusOK, res.status, string(res.body))
				res = e.do("POST", "/v1/records/"+rec.ID.String()+":purge", key, nil)
				if may(access.OpPurge) {
					require.Equal(t, http.StatusNoContent, res.status, "%s purge: %s", name, res.body)
				} else {
					denied(t, res, "role:"+string(role)+":purge:*")
					require.Equal(t, 1, e.count(fmt.Sprintf("SELECT count(*) FROM records WHERE id = '%s'", rec.ID)), "%s: a refused purge deletes nothing", name)
				}
			}
		}
	}

	// The matrix, spot-checked: an executor recalls the shared layers and
	// its own session, reports how what it recalled served, and writes and
	// forgets its own session and facts only; a verifier writes nothing but
	// feedback and annotations; an orchestrator writes sessions and facts
	// and soft-deletes; only a curator purges, or writes a procedure.
	require.Equal(t, access.All, access.Permits(access.Executor, memory.Competence, access.OpRead))
	require.Equal(t, access.All, access.Permits(access.Executor, memory.Competence, access.OpFeedback))
	require.Equal(t, access.None, access.Permits(access.Executor, memory.Competence, access.OpAnnotate))
	require.Equal(t, access.Own, access.Permits(access.Executor, memory.Working, access.OpWrite))
	require.Equal(t, access.Own, access.Permits(access.Executor, memory.Semantic, access.OpDelete))
	require.Equal(t, access.None, access.Permits(access.Executor, memory.Competence, access.OpWrite))
	require.Equal(t, access.None, access.Permits(access.Orchestrator, memory.PlanGraph, access.OpWrite))
	require.Equal(t, access.None, access.Permits(access.Verifier, memory.Episodic, access.OpWrite))
	require.Equal(t, access.All, access.Permits(access.Orchestrator, memory.Semantic, access.OpDelete))
	require.Equal(t, access.None, access.Permits(access.Orchestrator, memory.Semantic, access.OpPurge))
	require.Equal(t, access.None, access.Permits(access.Operator, memory.Semantic, access.OpRead))

	// A role-less tenant key, as every key was before roles, is a curator.
	rec := e.fixture(memory.Semantic, "")
	res := e.do("DELETE", "/v1/records/"+rec.ID.String(), acmeKey, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	res = e.do("POST", "/v1/records/"+rec.ID.String()+":purge", acmeKey, nil)
	require.Equal(t, http.StatusNoContent, res.status, string(res.body))

	// Denials are counted by reason.
	res = e.do("GET", "/metrics", "", nil)
	require.Regexp(t, `engram_access_denials_total\{reason="role"\} [1-9]`, string(res.body))
}

// Review decisions are validation annotations: a verifier approves a draft
// and carries out its proposal (superseding the record it replaces),
// though it may write no fact itself; an executor may not decide, nor read
// the queue.
func TestReviewDecisionsAreAnnotations(t *testing.T) {
	t.Parallel()
	e := setupRoles(t, "", access.Budgets{})
	active := e.fixture(memory.Semantic, "")
	var payload map[string]any
	e.do("GET", "/v1/records/"+active.ID.String(), curatorKey, nil).decode(t, &struct {
		Payload *map[string]any `json:"payload"`
	}{&payload})
	payload["object"] = "nomad"
	b, err := json.Marshal(payload)
	require.NoError(t, err)
	_, rv, err := e.w.SubmitForReview(context.Background(), "acme", memory.Record{Type: memory.Semantic, Confidence: 0.6, Payload: b},
		revise.Change{Actor: "agent-7"}, revise.ReviewRequest{Tier: revise.TierAsync, Risk: 0.5,
			Factors: map[string]float64{"contradiction": 1}, Reasons: []string{"contradicts"}, Proposal: &revise.Proposal{Supersedes: active.ID}})
	require.NoError(t, err)

	res := e.do("GET", "/v1/reviews", executorKey, nil)
	require.Equal(t, http.StatusForbidden, res.status, string(res.body))
	require.Equal(t, "urn:engram:problem:forbidden", res.problem(t).Type)
	require.Equal(t, http.StatusOK, e.do("GET", "/v1/reviews/"+rv.ID.String(), verifierKey, nil).status)

	denied(t, e.do("POST", "/v1/reviews/"+rv.ID.String()+":approve", executorKey, map[string]any{"justification": "looks right"}), "role:executor:annotate:semantic")
	res = e.do("POST", "/v1/reviews/"+rv.ID.String()+":approve", verifierKey, map[string]any{"justification": "confirmed"})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var old memory.Record
	e.do("GET", "/v1/records/"+active.ID.String(), curatorKey, nil).decode(t, &old)
	require.Equal(t, memory.Superseded, old.Status)
}
