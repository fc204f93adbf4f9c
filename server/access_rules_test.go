package server_test

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/access"
	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/retrieve"
)

// The operator's access rules of these tests: the spec's example, an
// allow that confines medical agents' writes to medical records, and a
// deny that hides records on legal hold from verifiers.
const accessRules = `
access:
  - name: medical-writes-medical
    effect: allow
    ops: [write]
    principal: {domains: [medical]}
    record: {tags: ["domain:medical"]}
  - name: verifiers-skip-legal-hold
    effect: deny
    ops: [read]
    principal: {roles: [verifier]}
    record: {tags: [legal-hold]}
`

// An allow rule confines what it governs: agents of domain medical write
// only records tagged domain:medical — records and events alike — while
// agents it does not govern write as their role allows.
func TestAccessRuleAllow(t *testing.T) {
	t.Parallel()
	e := setupRoles(t, accessRules, access.Budgets{})

	res := e.do("POST", "/v1/records", medicalKey, e.body(memory.Working, "med-1", "tags", []string{"domain:medical"}))
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	var rec memory.Record
	res.decode(t, &rec)
	require.Equal(t, "med-1", rec.AgentID)

	records := e.count("SELECT count(*) FROM records")
	res = e.do("POST", "/v1/records", medicalKey, e.body(memory.Working, "med-1", "tags", []string{"domain:finance"}))
	denied(t, res, "medical-writes-medical")
	require.Equal(t, "rule", res.problem(t).Reason)
	require.Equal(t, records, e.count("SELECT count(*) FROM records"), "nothing written")

	// A record that names no agent is the key's agent's.
	res = e.do("POST", "/v1/records", medicalKey, e.body(memory.Working, "", "tags", []string{"domain:medical"}))
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	res.decode(t, &rec)
	require.Equal(t, "med-1", rec.AgentID)

	// Events are staged outside the write path, and checked at their door.
	staged := e.count("SELECT count(*) FROM candidates")
	medical := event("observation", "t-med", map[string]any{"agent_id": "med-1", "text": "bp 120/80", "tags": []string{"domain:medical"}})
	plain := event("observation", "t-med", map[string]any{"agent_id": "med-1", "text": "lunch"})
	res = e.do("POST", "/v1/events", medicalKey, []any{medical, plain})
	denied(t, res, "medical-writes-medical")
	require.Equal(t, staged, e.count("SELECT count(*) FROM candidates"), "a refused batch stages nothing")
	res = e.do("POST", "/v1/events", medicalKey, []any{medical})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))

	// On a stream, each line is decided on its own.
	line := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	acks := e.streamAs(medicalKey, line(medical), line(plain))
	require.Nil(t, acks[1].Error)
	require.NotEmpty(t, acks[1].ID)
	require.NotNil(t, acks[2].Error)
	require.Equal(t, "urn:engram:problem:access-denied", acks[2].Error.Type)
	require.Equal(t, "medical-writes-medical", acks[2].Error.Rule)

	// Another agent's events are not the medical executor's to send.
	res = e.do("POST", "/v1/events", medicalKey, event("observation", "t-x", map[string]any{"agent_id": "exec-2", "text": "x", "tags": []string{"domain:medical"}}))
	denied(t, res, "role:executor:write:own")

	// The rule governs medical agents only.
	res = e.do("POST", "/v1/records", executorKey, e.body(memory.Working, "exec-1"))
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	res = e.do("POST", "/v1/events", executorKey, event("observation", "t-e", map[string]any{"agent_id": "exec-1", "text": "lunch"}))
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
}

// A deny rule refuses what it selects whatever the role allows: verifiers
// read everything but records on legal hold, which a direct read refuses
// by the rule's name and a listing leaves out.
func TestAccessRuleDeny(t *testing.T) {
	t.Parallel()
	e := setupRoles(t, accessRules, access.Budgets{})
	held := e.fixture(memory.Semantic, "", "tags", []string{"legal-hold"})
	open := e.fixture(memory.Semantic, "")

	res := e.do("GET", "/v1/records/"+held.ID.String(), verifierKey, nil)
	denied(t, res, "verifiers-skip-legal-hold", "kubernetes", "service-")
	res = e.do("GET", "/v1/records/"+held.ID.String()+"/audit", verifierKey, nil)
	denied(t, res, "verifiers-skip-legal-hold")
	res = e.do("GET", "/v1/records/"+open.ID.String(), verifierKey, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))

	require.ElementsMatch(t, []uuid.UUID{open.ID}, e.list(verifierKey, "type=semantic"))
	require.ElementsMatch(t, []uuid.UUID{open.ID, held.ID}, e.list(curatorKey, "type=semantic"))
	require.ElementsMatch(t, []uuid.UUID{open.ID, held.ID}, e.list(orchestratorKey, "type=semantic"), "the rule governs verifiers only")
}

// list lists record ids with key.
func (e *rolesEnv) list(key, query string) []uuid.UUID {
	e.t.Helper()
	res := e.do("GET", "/v1/records?"+query, key, nil)
	require.Equal(e.t, http.StatusOK, res.status, string(res.body))
	var page api.RecordPage
	res.decode(e.t, &page)
	ids := []uuid.UUID{}
	for _, r := range page.Records {
		ids = append(ids, r.ID)
	}
	return ids
}

// recall retrieves with key and returns the ids answered.
func (e *rolesEnv) recall(key, text string) []uuid.UUID {
	e.t.Helper()
	res := e.do("POST", "/v1/retrieve", key, map[string]any{"task": map[string]any{"text": text}, "trust": map[string]any{"clearance": "hyper"}})
	require.Equal(e.t, http.StatusOK, res.status, string(res.body))
	var out retrieve.Result
	res.decode(e.t, &out)
	ids := []uuid.UUID{}
	for _, l := range out.Layers {
		for _, it := range l.Items {
			ids = append(ids, it.Record.ID)
		}
	}
	return ids
}

// Read visibility (write-path RFC §12.8.5): a key sees a record only when
// its role may read it, the record's classification is within the key's
// clearance and its domains are among the key's — in a listing, in
// retrieval, and read directly. The key is kept in the database, made
// through the operator's API.
func TestVisibilityByClearanceAndDomain(t *testing.T) {
	t.Parallel()
	e := setupRoles(t, "", access.Budgets{})
	res := e.do("POST", "/v1/keys", opsKey, map[string]any{"name": "finance-orchestrator", "tenant": "acme", "role": "orchestrator",
		"agent_id": "orch-9", "domains": []string{"finance"}, "clearance": "low"})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	var made api.CreatedKey
	res.decode(t, &made)
	key := made.Secret

	public := e.fixture(memory.Semantic, "", "sensitivity", "public")
	high := e.fixture(memory.Semantic, "", "sensitivity", "high")
	medical := e.fixture(memory.Semantic, "", "sensitivity", "low", "tags", []string{"domain:medical"})
	finance := e.fixture(memory.Semantic, "", "sensitivity", "low", "tags", []string{"domain:finance"})

	require.ElementsMatch(t, []uuid.UUID{public.ID, finance.ID}, e.list(key, "type=semantic"))
	require.ElementsMatch(t, []uuid.UUID{public.ID, high.ID, medical.ID, finance.ID}, e.list(curatorKey, "type=semantic"))

	require.ElementsMatch(t, []uuid.UUID{public.ID, finance.ID}, e.recall(key, "kubernetes"))
	require.ElementsMatch(t, []uuid.UUID{public.ID, high.ID, medical.ID, finance.ID}, e.recall(curatorKey, "kubernetes"))

	denied(t, e.do("GET", "/v1/records/"+high.ID.String(), key, nil), "clearance:low", "kubernetes")
	denied(t, e.do("GET", "/v1/records/"+medical.ID.String(), key, nil), "domain:medical", "kubernetes")
	require.Equal(t, http.StatusOK, e.do("GET", "/v1/records/"+finance.ID.String(), key, nil).status)
	// A key does not revise what it may not see.
	denied(t, e.do("DELETE", "/v1/records/"+high.ID.String(), key, nil), "clearance:low")
	require.Equal(t, http.StatusOK, e.do("DELETE", "/v1/records/"+finance.ID.String(), key, nil).status)

	// An executor recalls the shared layers and its own session, never
	// another agent's episodes.
	mine := e.fixture(memory.Episodic, "exec-1", "tags", []string{"kubernetes"})
	theirs := e.fixture(memory.Episodic, "exec-2", "tags", []string{"kubernetes"})
	eps := e.list(executorKey, "type=episodic")
	require.Contains(t, eps, mine.ID)
	require.NotContains(t, eps, theirs.ID)
	require.NotContains(t, e.recall(executorKey, "kubernetes evt"), theirs.ID)
	require.Contains(t, e.list(executorKey, "type=semantic"), high.ID, "the executor key has no ceiling")
}

// Write budgets (write-path RFC §12.11.2): an agent's session writes at
// most its role's budget; the write over it is refused with 429 naming the
// budget, with Retry-After, and writes nothing; another session has a
// budget of its own; events count too.
func TestWriteBudget(t *testing.T) {
	t.Parallel()
	e := setupRoles(t, "", access.Budgets{Writes: map[access.Role]int{access.Executor: 3}})
	for range 3 {
		res := e.do("POST", "/v1/records", executorKey, e.body(memory.Working, "exec-1"), "X-Engram-Session", "s1")
		require.Equal(t, http.StatusCreated, res.status, string(res.body))
	}
	records := e.count("SELECT count(*) FROM records")
	res := e.do("POST", "/v1/records", executorKey, e.body(memory.Working, "exec-1"), "X-Engram-Session", "s1")
	require.Equal(t, http.StatusTooManyRequests, res.status, string(res.body))
	p := res.problem(t)
	require.Equal(t, "urn:engram:problem:budget-exceeded", p.Type)
	require.Equal(t, "write:executor", p.Budget)
	secs, err := strconv.Atoi(res.header.Get("Retry-After"))
	require.NoError(t, err)
	require.Greater(t, secs, 0)
	require.LessOrEqual(t, secs, 3600)
	require.Equal(t, records, e.count("SELECT count(*) FROM records"), "nothing written over budget")

	res = e.do("POST", "/v1/records", executorKey, e.body(memory.Working, "exec-1"), "X-Engram-Session", "s2")
	require.Equal(t, http.StatusCreated, res.status, "another session: %s", res.body)

	staged := e.count("SELECT count(*) FROM candidates")
	evs := []any{}
	for i := range 4 {
		evs = append(evs, event("observation", "t-b", map[string]any{"agent_id": "exec-1", "text": "step " + strconv.Itoa(i)}))
	}
	res = e.do("POST", "/v1/events", executorKey, evs, "X-Engram-Session", "s3")
	require.Equal(t, http.StatusTooManyRequests, res.status, string(res.body))
	require.Equal(t, staged, e.count("SELECT count(*) FROM candidates"))
	res = e.do("POST", "/v1/events", executorKey, evs[:3], "X-Engram-Session", "s3")
	require.Equal(t, http.StatusAccepted, res.status, "a refused batch spent nothing: %s", res.body)

	// A curator (a person) is not budgeted by default.
	for range 5 {
		require.Equal(t, http.StatusCreated, e.do("POST", "/v1/records", curatorKey, e.body(memory.Working, ""), "X-Engram-Session", "s1").status)
	}
	body := string(e.do("GET", "/metrics", "", nil).body)
	require.Contains(t, body, `engram_access_denials_total{reason="budget"} 2`)
}

// Keys kept in the database: an operator makes one and sees its secret
// once; only its hash is stored; it works at once, and fails at once when
// revoked. Only an operator manages keys.
func TestKeysInTheDatabase(t *testing.T) {
	t.Parallel()
	e := setupRoles(t, "", access.Budgets{})
	res := e.do("POST", "/v1/keys", opsKey, map[string]any{"name": "planner-7", "tenant": "acme", "role": "executor", "agent_id": "planner-7"})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	require.Equal(t, "no-store", res.header.Get("Cache-Control"))
	var made api.CreatedKey
	res.decode(t, &made)
	require.NotEmpty(t, made.Secret)
	require.Equal(t, memory.Hyper, made.Clearance, "the default clearance")
	hash := sha256.Sum256([]byte(made.Secret))
	require.Equal(t, 1, e.count("SELECT count(*) FROM api_keys WHERE name = 'planner-7' AND hash = '\\x"+hexOf(hash[:])+"'"))
	require.Zero(t, e.count("SELECT count(*) FROM api_keys WHERE row_to_json(api_keys)::text LIKE '%"+made.Secret[5:20]+"%'"), "the secret is not stored")

	res = e.do("POST", "/v1/records", made.Secret, e.body(memory.Working, ""))
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	var rec memory.Record
	res.decode(t, &rec)
	require.Equal(t, "planner-7", rec.AgentID)
	denied(t, e.do("POST", "/v1/records", made.Secret, e.body(memory.Competence, "")), "role:executor:write:competence")

	res = e.do("GET", "/v1/keys", opsKey, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.NotContains(t, string(res.body), made.Secret)
	require.NotContains(t, string(res.body), "hash")
	var list api.KeyList
	res.decode(t, &list)
	require.Len(t, list.Keys, 1)
	require.Equal(t, "executor", list.Keys[0].Role)

	for _, key := range []string{curatorKey, made.Secret} {
		res = e.do("GET", "/v1/keys", key, nil)
		require.Equal(t, http.StatusForbidden, res.status)
		require.Equal(t, "urn:engram:problem:forbidden", res.problem(t).Type)
	}

	res = e.do("POST", "/v1/keys", opsKey, map[string]any{"name": "planner-7", "tenant": "acme", "role": "curator"})
	require.Equal(t, http.StatusConflict, res.status, string(res.body))
	res = e.do("POST", "/v1/keys", opsKey, map[string]any{"name": "x", "tenant": "acme", "role": "executor", "clearance": "top"})
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	var pointers []string
	for _, fe := range res.problem(t).Errors {
		pointers = append(pointers, fe.Pointer)
	}
	require.ElementsMatch(t, []string{"/agent_id", "/clearance"}, pointers)
	res = e.do("POST", "/v1/keys", opsKey, map[string]any{"name": "ops-2", "tenant": "acme", "role": "operator"})
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))

	res = e.do("POST", "/v1/keys/planner-7:revoke", opsKey, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var revoked api.APIKey
	res.decode(t, &revoked)
	require.NotNil(t, revoked.RevokedAt)
	res = e.do("GET", "/v1/records", made.Secret, nil)
	require.Equal(t, http.StatusUnauthorized, res.status, "revoked at once")
	require.Equal(t, http.StatusNotFound, e.do("POST", "/v1/keys/nope:revoke", opsKey, nil).status)
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// An event that names no agent is the agent the request acts for, as a
// lease request's is: the key's own agent (an executor's), whatever
// X-Engram-Actor says, else X-Engram-Actor; with neither it is refused for
// its missing agent_id, as before. A batch and a stream alike.
func TestEventsWithoutAnAgent(t *testing.T) {
	t.Parallel()
	e := setupRoles(t, "", access.Budgets{})
	anon := func(thread string) map[string]any {
		return map[string]any{"kind": "observation", "thread_id": thread, "text": "the build is green"}
	}
	agentOf := func(thread string) []string {
		rows, err := e.db.Pool.Query(t.Context(), "SELECT DISTINCT agent_id FROM candidates WHERE thread_id = $1", thread)
		require.NoError(t, err)
		agents, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return agents
	}

	res := e.do("POST", "/v1/events", executorKey, []any{anon("t-exec"), anon("t-exec")}, "X-Engram-Actor", "someone-else")
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	require.Equal(t, []string{"exec-1"}, agentOf("t-exec"))

	res = e.do("POST", "/v1/events", curatorKey, anon("t-cur"), "X-Engram-Actor", "desk-agent")
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	require.Equal(t, []string{"desk-agent"}, agentOf("t-cur"))

	res = e.do("POST", "/v1/events", curatorKey, anon("t-none"))
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	require.Contains(t, string(res.body), "agent_id", string(res.body))

	// An event that names its agent is decided as it names.
	named := anon("t-named")
	named["agent_id"] = "exec-2"
	denied(t, e.do("POST", "/v1/events", executorKey, named), "role:executor:write:own")

	line := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	acks := e.streamAs(executorKey, line(anon("t-stream")), "{ }")
	require.Nil(t, acks[1].Error)
	require.NotNil(t, acks[2].Error, "an empty event is refused for what it lacks besides its agent")
	require.Equal(t, []string{"exec-1"}, agentOf("t-stream"))
}
