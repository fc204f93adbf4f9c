package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
)

// Semantic update (substrate RFC §7): facts arrive as fact events through
// POST /v1/events, and every contradiction follows a revision rule of the
// write path — replace, fork, contest — or is refused; confidence follows
// the evidence. Each test runs the whole server, its ingest worker and a
// write path configured with gates, against real PostgreSQL.

// evidencePolicy is the gates with the contradiction policy evidence.
func evidencePolicy() revise.Gates {
	return revise.Gates{Contradiction: revise.ContradictionConfig{Policy: revise.PolicyEvidence}}
}

// observe sends one fact event, from a thread of its own (a distinct
// observation), and lets the policy plane classify it.
func (e *ingestEnv) observe(thread string, fact map[string]any, fields ...any) {
	e.t.Helper()
	ev := event("fact", thread, map[string]any{"fact": fact})
	for i := 0; i+1 < len(fields); i += 2 {
		ev[fields[i].(string)] = fields[i+1]
	}
	res := e.do("POST", "/v1/events", acmeKey, ev)
	require.Equal(e.t, http.StatusAccepted, res.status, string(res.body))
	e.drain()
}

func fact(subject, predicate, object string, more ...any) map[string]any {
	f := map[string]any{"subject": subject, "predicate": predicate, "object": object}
	for i := 0; i+1 < len(more); i += 2 {
		f[more[i].(string)] = more[i+1]
	}
	return f
}

// facts are the tenant's facts of a subject, in every status, by object
// (each object once: the tests give every fact its own).
func (e *env) facts(subject string) map[string]memory.Record {
	e.t.Helper()
	res := e.do("GET", "/v1/records?type=semantic&status=all&subject="+url.QueryEscape(subject), acmeKey, nil)
	require.Equal(e.t, http.StatusOK, res.status, string(res.body))
	var list struct {
		Records []memory.Record `json:"records"`
	}
	res.decode(e.t, &list)
	out := map[string]memory.Record{}
	for _, r := range list.Records {
		var p memory.SemanticPayload
		require.NoError(e.t, json.Unmarshal(r.Payload, &p))
		var obj string
		require.NoError(e.t, json.Unmarshal(p.Object, &obj))
		require.NotContains(e.t, out, obj, "one record per object")
		out[obj] = r
	}
	return out
}

func revisionOf(t *testing.T, r memory.Record) memory.Revision {
	t.Helper()
	var p memory.SemanticPayload
	require.NoError(t, json.Unmarshal(r.Payload, &p))
	if p.Revision == nil {
		return memory.Revision{}
	}
	return *p.Revision
}

func validityOf(t *testing.T, r memory.Record) memory.Validity {
	t.Helper()
	var p memory.SemanticPayload
	require.NoError(t, json.Unmarshal(r.Payload, &p))
	return p.Validity
}

// auditOf is a record's audit trail as action: rationale.
func (e *env) auditOf(id uuid.UUID) []string {
	e.t.Helper()
	res := e.do("GET", "/v1/records/"+id.String()+"/audit", acmeKey, nil)
	require.Equal(e.t, http.StatusOK, res.status, string(res.body))
	var trail struct {
		Entries []struct {
			Action    string  `json:"action"`
			Rationale *string `json:"rationale"`
		} `json:"entries"`
	}
	res.decode(e.t, &trail)
	var out []string
	for _, en := range trail.Entries {
		why := ""
		if en.Rationale != nil {
			why = *en.Rationale
		}
		out = append(out, en.Action+": "+why)
	}
	return out
}

// relatesTo reports whether the server lists a relation from source to
// target with the predicate.
func (e *env) relatesTo(source uuid.UUID, pred memory.Predicate, target uuid.UUID) bool {
	e.t.Helper()
	res := e.do("GET", "/v1/records/"+source.String()+"/relations", acmeKey, nil)
	require.Equal(e.t, http.StatusOK, res.status, string(res.body))
	return strings.Contains(string(res.body), fmt.Sprintf(`"source_id":"%s","predicate":"%s","target_id":"%s"`, source, pred, target))
}

func hasEntry(entries []string, prefix string, parts ...string) bool {
	return slices.ContainsFunc(entries, func(en string) bool {
		if !strings.HasPrefix(en, prefix) {
			return false
		}
		for _, p := range parts {
			if !strings.Contains(en, p) {
				return false
			}
		}
		return true
	})
}

// Replacement: under the policy supersede a contradicting observation
// replaces the fact in force; under the policy evidence only one whose
// evidence clearly outweighs it does — here an observation backed by a
// person's word against a bare observation — audited with what was weighed.
func TestFactsSupersede(t *testing.T) {
	t.Parallel()
	g := evidencePolicy()
	g.Contradiction.Scopes = map[string]string{"team:ops": revise.PolicySupersede}
	e := setupGates(t, g)

	e.observe("s1", fact("ci", "runner", "jenkins"), "scope", "team:ops")
	e.observe("s2", fact("ci", "runner", "actions"), "scope", "team:ops")
	ci := e.facts("ci")
	require.Equal(t, memory.Superseded, ci["jenkins"].Status)
	require.Equal(t, memory.Active, ci["actions"].Status)
	require.Equal(t, ci["actions"].ID.String(), revisionOf(t, ci["jenkins"]).SupersededBy)
	require.True(t, e.relatesTo(ci["actions"].ID, memory.Supersedes, ci["jenkins"].ID))

	e.observe("e1", fact("repo", "build_tool", "make"))
	e.observe("e2", fact("repo", "build_tool", "bazel",
		"evidence", []any{map[string]any{"kind": "human", "ref": "person://lead"}}))
	repo := e.facts("repo")
	require.Equal(t, memory.Superseded, repo["make"].Status, "a person's word clearly outweighs one observation")
	require.Equal(t, memory.Active, repo["bazel"].Status)
	require.Equal(t, repo["make"].ID.String(), revisionOf(t, repo["bazel"]).Supersedes)
	require.Equal(t, repo["bazel"].ID.String(), revisionOf(t, repo["make"]).SupersededBy)
	require.True(t, e.relatesTo(repo["bazel"].ID, memory.Supersedes, repo["make"].ID))
	require.True(t, hasEntry(e.auditOf(repo["make"].ID), "supersede: ", "2 source(s) of evidence", "against 1", "policy evidence"),
		"%v", e.auditOf(repo["make"].ID))
}

// Fork: observations with disjoint conditions coexist as conditional
// variants, and retrieval picks the one whose conditions the task meets; a
// contradiction within one branch contests that branch only.
func TestFactsFork(t *testing.T) {
	t.Parallel()
	e := setupGates(t, evidencePolicy())
	e.observe("f1", fact("user", "prefers_language", "go", "conditions", map[string]any{"project_kind": "backend"}))
	e.observe("f2", fact("user", "prefers_language", "python", "conditions", map[string]any{"project_kind": "data_science"}))
	user := e.facts("user")
	require.Equal(t, memory.Active, user["go"].Status)
	require.Equal(t, memory.Active, user["python"].Status)
	require.Equal(t, memory.Conditional, validityOf(t, user["python"]).Mode)

	retrieveFacts := func(kind string) []string {
		res := e.do("POST", "/v1/retrieve", acmeKey, map[string]any{"task": map[string]any{
			"text": "which language does the user prefer", "conditions": map[string]any{"project_kind": kind}}})
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		var out retrieve.Result
		res.decode(t, &out)
		var objs []string
		for _, l := range out.Layers {
			if l.Name != retrieve.LayerSemantic {
				continue
			}
			for _, it := range l.Items {
				var p memory.SemanticPayload
				require.NoError(t, json.Unmarshal(it.Record.Payload, &p))
				objs = append(objs, strings.Trim(string(p.Object), `"`))
			}
		}
		return objs
	}
	require.Equal(t, []string{"python"}, retrieveFacts("data_science"))
	require.Equal(t, []string{"go"}, retrieveFacts("backend"))

	e.observe("f3", fact("user", "prefers_language", "rust", "conditions", map[string]any{"project_kind": "backend"}))
	user = e.facts("user")
	require.Equal(t, memory.Contested, user["go"].Status, "one observation against one: comparable")
	require.Equal(t, memory.Contested, user["rust"].Status)
	require.Equal(t, memory.Active, user["python"].Status, "the other branch is not touched")
}

// Contest: comparable evidence on both sides contests both; another
// observation of one side outweighs the other, which it supersedes in the
// same transaction, audited with what was weighed. Rolling that
// resolution back contests both again; one more observation of the other
// side makes the evidence comparable again: still contested.
func TestFactsContestResolvedByEvidence(t *testing.T) {
	t.Parallel()
	e := setupGates(t, evidencePolicy())
	e.observe("c1", fact("api", "auth_scheme", "oauth"))
	e.observe("c2", fact("api", "auth_scheme", "api_key"))
	api := e.facts("api")
	oauth, key := api["oauth"], api["api_key"]
	require.Equal(t, memory.Contested, oauth.Status)
	require.Equal(t, memory.Contested, key.Status)
	require.Equal(t, "contested", revisionOf(t, oauth).Status)
	require.True(t, e.relatesTo(oauth.ID, memory.Contradicts, key.ID))
	require.True(t, e.relatesTo(key.ID, memory.Contradicts, oauth.ID))
	require.True(t, hasEntry(e.auditOf(oauth.ID), "contest: ", "comparable evidence", "1 source(s) of evidence", "against 1"))

	e.observe("c3", fact("api", "auth_scheme", "oauth"))
	api = e.facts("api")
	oauth, key = api["oauth"], api["api_key"]
	require.Equal(t, memory.Active, oauth.Status, "two observations against one")
	require.Equal(t, memory.Superseded, key.Status)
	require.InDelta(t, 1-0.4*0.4, oauth.Confidence, 1e-9, "its confidence follows its two observations")
	require.Equal(t, memory.Revision{Status: "active", Supersedes: key.ID.String()}, revisionOf(t, oauth))
	require.Equal(t, oauth.ID.String(), revisionOf(t, key).SupersededBy)
	require.True(t, e.relatesTo(oauth.ID, memory.Supersedes, key.ID))
	trail := e.auditOf(oauth.ID)
	require.True(t, hasEntry(trail, "resolve: ", "contest resolved by evidence", "2 source(s) of evidence", "against 1"), "%v", trail)
	require.True(t, hasEntry(e.auditOf(key.ID), "supersede: ", "contest resolved by evidence"))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM records WHERE type = 'semantic' AND status = 'active'`))

	res, rb := e.rollback(oauth.ID, map[string]any{"rationale": "the second oauth report was a misread"})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Equal(t, memory.Contested, rb.RolledBack.Status, "the winner was live before: contested again, not retracted")
	require.Len(t, rb.Reactivated, 1)
	require.Equal(t, key.ID, rb.Reactivated[0].ID)
	require.Equal(t, memory.Contested, rb.Reactivated[0].Status)
	api = e.facts("api")
	oauth, key = api["oauth"], api["api_key"]
	require.Equal(t, memory.Revision{Status: "contested"}, revisionOf(t, oauth))
	require.Equal(t, memory.Revision{Status: "contested"}, revisionOf(t, key))

	e.observe("c4", fact("api", "auth_scheme", "api_key"))
	api = e.facts("api")
	require.Equal(t, memory.Contested, api["oauth"].Status, "two observations against two: comparable")
	require.Equal(t, memory.Contested, api["api_key"].Status)
}

// A newcomer whose evidence is clearly weaker than the fact in force is
// refused with the contradiction report: no record, the fact untouched,
// the event still in its episode, the refusal counted for its agent.
func TestFactsClearlyWeakerNewcomerRefused(t *testing.T) {
	t.Parallel()
	e := setupGates(t, evidencePolicy())
	for i := range 3 {
		e.observe(fmt.Sprintf("w%d", i), fact("db", "engine", "postgres"))
	}
	e.observe("w9", fact("db", "engine", "mysql"))
	db := e.facts("db")
	require.NotContains(t, db, "mysql")
	require.Equal(t, memory.Active, db["postgres"].Status)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM candidates WHERE thread_id = 'w9' AND status = 'done'`))

	res := e.do("GET", "/v1/agents", acmeKey, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Contains(t, string(res.body), `"rejected":1`)
}

// Timeboxed facts: a fact event may bound when the fact holds; facts whose
// time boxes do not meet coexist (the same object in another period is
// another fact), retrieval returns the one that holds now, and one whose
// box meets another's contradicts it. A box that ends before it starts,
// or a time that is not one, is a 422.
func TestFactsTimeboxed(t *testing.T) {
	t.Parallel()
	e := setupGates(t, evidencePolicy())
	e.observe("t1", fact("team", "office", "berlin", "valid_from", "2020-01-01T00:00:00Z", "valid_to", "2022-12-31T23:59:59Z"))
	e.observe("t2", fact("team", "office", "paris", "valid_from", "2023-01-01T00:00:00Z"))
	e.observe("t3", fact("team", "office", "lisbon", "valid_to", "2019-12-31T23:59:59Z"))
	team := e.facts("team")
	for _, obj := range []string{"berlin", "paris", "lisbon"} {
		require.Equal(t, memory.Active, team[obj].Status, obj)
		require.Equal(t, memory.Timeboxed, validityOf(t, team[obj]).Mode, obj)
	}
	v := validityOf(t, team["berlin"])
	require.Equal(t, time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), v.Start.UTC())
	require.Equal(t, time.Date(2022, 12, 31, 23, 59, 59, 0, time.UTC), v.End.UTC())
	require.Nil(t, validityOf(t, team["paris"]).End, "open-ended")

	res := e.do("POST", "/v1/retrieve", acmeKey, map[string]any{"task": map[string]any{"text": "where is the team office"}})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var out retrieve.Result
	res.decode(t, &out)
	var now []uuid.UUID
	for _, l := range out.Layers {
		for _, it := range l.Items {
			if it.Record.Type == memory.Semantic {
				now = append(now, it.Record.ID)
			}
		}
	}
	require.Equal(t, []uuid.UUID{team["paris"].ID}, now)

	e.observe("t4", fact("team", "office", "hamburg", "valid_from", "2022-06-01T00:00:00Z", "valid_to", "2022-08-31T00:00:00Z"))
	team = e.facts("team")
	require.Equal(t, memory.Contested, team["berlin"].Status, "the boxes meet: a contradiction, comparable evidence")
	require.Equal(t, memory.Contested, team["hamburg"].Status)
	require.Equal(t, memory.Active, team["paris"].Status)

	for body, pointer := range map[string]string{
		`{"kind": "fact", "agent_id": "a", "thread_id": "t", "fact": {"subject": "s", "predicate": "p", "object": "o", "valid_from": "2024-02-01T00:00:00Z", "valid_to": "2024-01-01T00:00:00Z"}}`: "/fact/valid_to",
		`{"kind": "fact", "agent_id": "a", "thread_id": "t", "fact": {"subject": "s", "predicate": "p", "object": "o", "valid_from": "last tuesday"}}`:                                             "/fact/valid_from",
	} {
		res := e.do("POST", "/v1/events", acmeKey, body)
		require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
		require.Contains(t, pointers(res.problem(t)), pointer)
	}
}

// Confidence follows the evidence (substrate RFC §7): each new distinct
// source raises a fact's confidence by its authority (noisy-or), a
// stronger source more than a weaker one; a repeat of the same event adds
// nothing, and a lower stated confidence never lowers it.
func TestFactConfidenceFollowsEvidence(t *testing.T) {
	t.Parallel()
	e := setupGates(t, revise.Gates{})
	conf := func() float64 {
		t.Helper()
		return e.facts("deploy")["blue-green"].Confidence
	}
	e.observe("k1", fact("deploy", "strategy", "blue-green"))
	first := conf()
	e.observe("k2", fact("deploy", "strategy", "blue-green"), "idempotency_key", "k2")
	second := conf()
	require.Greater(t, second, first)
	require.InDelta(t, 1-0.4*0.4, second, 1e-9, "two events of authority 0.6")
	e.observe("k2", fact("deploy", "strategy", "blue-green"), "idempotency_key", "k2")
	require.Equal(t, second, conf(), "the same event again (a retry) is no new evidence")
	e.observe("k3", fact("deploy", "strategy", "blue-green", "confidence", 0.1,
		"evidence", []any{map[string]any{"kind": "tool_call", "ref": "call://kubectl-rollout"}}))
	third := conf()
	require.InDelta(t, 1-0.4*0.4*0.4*0.2, third, 1e-9, "another event and a tool call")
	e.observe("k4", fact("deploy", "strategy", "blue-green", "confidence", 0.1))
	require.Greater(t, conf(), third, "a low stated confidence does not lower it")
	require.LessOrEqual(t, conf(), revise.MaxEvidenceConfidence)
}

// With the default configuration, facts revise themselves by their
// evidence, with no operator (substrate RFC §7, §15B: memory is created
// and revised without approval): a contradicting fact with clearly more
// evidence supersedes the one in force; one with comparable evidence
// contests it; one with clearly less is refused, the reason named; a
// payload that asks to replace (§15A.4, revision_policy) replaces a fact
// whose evidence is not clearly stronger. Nothing waits for a reviewer.
func TestFactsRevisedByEvidenceByDefault(t *testing.T) {
	t.Parallel()
	e := setupFull(t)

	// Stronger: the user's own word that they switched editors.
	e.observe("v1", fact("user", "editor", "vim"))
	e.observe("v2", fact("user", "editor", "emacs",
		"evidence", []any{map[string]any{"kind": "human", "ref": "chat://user/42"}}))
	user := e.facts("user")
	require.Equal(t, memory.Superseded, user["vim"].Status, "a stronger contradicting fact supersedes with no operator")
	require.Equal(t, memory.Active, user["emacs"].Status)
	require.True(t, e.relatesTo(user["emacs"].ID, memory.Supersedes, user["vim"].ID))

	// Comparable: one observation against one, both contested.
	e.observe("a1", fact("api", "auth_scheme", "oauth"))
	e.observe("a2", fact("api", "auth_scheme", "api_key"))
	api := e.facts("api")
	require.Equal(t, memory.Contested, api["oauth"].Status)
	require.Equal(t, memory.Contested, api["api_key"].Status)

	// Weaker: refused, with the reason, the fact in force untouched.
	for i := range 3 {
		e.observe(fmt.Sprintf("d%d", i), fact("db", "engine", "postgres"))
	}
	res := e.do("POST", "/v1/records", acmeKey, map[string]any{"type": "semantic", "payload": map[string]any{
		"kind": "semantic", "subject": "db", "predicate": "engine", "object": "mysql", "validity": map[string]any{"mode": "global"}},
		"provenance": map[string]any{"sources": []any{map[string]any{"kind": "event", "ref": "evt://mysql"}}}})
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	p := res.problem(t)
	require.Equal(t, "contradiction", p.Reason)
	require.Contains(t, p.Detail, "clearly more evidence")
	require.Contains(t, p.Detail, "1 source(s) of evidence (weight 0.92) against 3")
	require.Equal(t, memory.Active, e.facts("db")["postgres"].Status)

	// Asked to replace, with evidence as good as the fact in force's.
	res = e.do("POST", "/v1/records", acmeKey, map[string]any{"type": "semantic", "payload": map[string]any{
		"kind": "semantic", "subject": "ci", "predicate": "runner", "object": "jenkins", "validity": map[string]any{"mode": "global"}},
		"provenance": map[string]any{"sources": []any{map[string]any{"kind": "event", "ref": "evt://ci/1"}}}})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	res = e.do("POST", "/v1/records", acmeKey, map[string]any{"type": "semantic", "payload": map[string]any{
		"kind": "semantic", "subject": "ci", "predicate": "runner", "object": "actions", "validity": map[string]any{"mode": "global"},
		"revision_policy": "replace"},
		"provenance": map[string]any{"sources": []any{map[string]any{"kind": "event", "ref": "evt://ci/2"}}}})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	ci := e.facts("ci")
	require.Equal(t, memory.Superseded, ci["jenkins"].Status)
	require.Equal(t, memory.Active, ci["actions"].Status)

	require.Zero(t, e.count(`SELECT count(*) FROM reviews`), "no write waited for a person")
	require.Zero(t, e.count(`SELECT count(*) FROM records WHERE status = 'draft'`))
}

// The payload's revision_policy (substrate RFC §15A.4) is honoured where
// the scope leaves the decision to the evidence: contest contests a fact
// it clearly outweighs, fork lets a fact whose conditions overlap but
// differ coexist; no payload revises a fact that clearly outweighs it, and
// where an operator set the scope's policy (here review), the payload does
// not override it.
func TestFactsRevisionPolicyOfThePayload(t *testing.T) {
	t.Parallel()
	g := revise.Gates{Contradiction: revise.ContradictionConfig{Scopes: map[string]string{"team:audit": revise.PolicyReview}}}
	e := setupGates(t, g)
	post := func(scope, subject, object string, conds map[string]any, policy, kind string) response {
		t.Helper()
		validity := map[string]any{"mode": "global"}
		if conds != nil {
			validity = map[string]any{"mode": "conditional", "conditions": conds}
		}
		payload := map[string]any{"kind": "semantic", "subject": subject, "predicate": "p", "object": object, "validity": validity}
		if policy != "" {
			payload["revision_policy"] = policy
		}
		return e.do("POST", "/v1/records", acmeKey, map[string]any{"type": "semantic", "scope": scope, "payload": payload,
			"provenance": map[string]any{"sources": []any{map[string]any{"kind": kind, "ref": kind + "://" + object}}}})
	}
	require.Equal(t, http.StatusCreated, post("", "a", "x", nil, "", "event").status)
	res := post("", "a", "y", nil, "contest", "human")
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	require.Equal(t, "contested", res.header.Get("Engram-Write-Outcome"), "it asked to contest, not to replace")

	require.Equal(t, http.StatusCreated, post("", "b", "x", map[string]any{"os": "linux"}, "", "event").status)
	res = post("", "b", "y", map[string]any{"arch": "arm"}, "fork", "event")
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	require.Equal(t, "created", res.header.Get("Engram-Write-Outcome"))
	b := e.facts("b")
	require.Equal(t, memory.Active, b["x"].Status, "a conditional variant coexists")
	require.Equal(t, memory.Active, b["y"].Status)

	require.Equal(t, http.StatusCreated, post("", "c", "x", nil, "", "human").status)
	res = post("", "c", "y", nil, "replace", "event")
	require.Equal(t, http.StatusUnprocessableEntity, res.status, "clearly weaker evidence revises nothing: %s", res.body)

	require.Equal(t, http.StatusCreated, post("team:audit", "d", "x", nil, "", "event").status)
	res = post("team:audit", "d", "y", nil, "replace", "human")
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	require.Equal(t, "queued", res.header.Get("Engram-Write-Outcome"), "the operator's review stands")
}

// The factual score of the adjusted confidence is the noisy-or of the
// sources (write-path RFC §12.2.3, as "Facts and evidence" tells it):
// adding evidence, however weak, never lowers it. Under the policy review
// (an operator's choice, here), a person's word that contradicts a fact in
// force goes to a reviewer, and so does the same word with the agent's
// reasoning added — the mean of the authorities would refuse it. With
// approval off, the draft's review still says why it is one: its reasons,
// its risk and the factors of R(w).
func TestFactualScoreNeverFallsWithMoreEvidence(t *testing.T) {
	t.Parallel()
	e := setupGates(t, revise.Gates{Contradiction: revise.ContradictionConfig{Policy: revise.PolicyReview}})
	body := func(subject, object string, confidence float64, kinds ...string) map[string]any {
		var srcs []any
		for _, k := range kinds {
			srcs = append(srcs, map[string]any{"kind": k, "ref": k + "://" + subject + "/" + object})
		}
		return map[string]any{"type": "semantic", "confidence": confidence, "provenance": map[string]any{"sources": srcs},
			"payload": map[string]any{"kind": "semantic", "subject": subject, "predicate": "build_tool", "object": object, "validity": map[string]any{"mode": "global"}}}
	}
	for _, subject := range []string{"alone", "with-more"} {
		res := e.do("POST", "/v1/records", acmeKey, body(subject, "make", 0.8, "tool_call"))
		require.Equal(t, http.StatusCreated, res.status, string(res.body))
	}
	res := e.do("POST", "/v1/records", acmeKey, body("alone", "bazel", 0.5, "human"))
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	res = e.do("POST", "/v1/records", acmeKey, body("with-more", "bazel", 0.5, "human", "reasoning"))
	require.Equal(t, http.StatusAccepted, res.status, "more evidence, not less credible: %s", res.body)

	res = e.do("GET", "/v1/reviews/"+res.header.Get("Engram-Review"), acmeKey, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var rv struct {
		Risk        float64            `json:"risk"`
		RiskFactors map[string]float64 `json:"risk_factors"`
		Reasons     []string           `json:"reasons"`
	}
	res.decode(t, &rv)
	require.Positive(t, rv.Risk, "a draft's risk is computed with approval off")
	require.Equal(t, 1.0, rv.RiskFactors["contradiction"])
	require.Equal(t, 0.8, rv.RiskFactors["layer"])
	require.Contains(t, rv.Reasons[0], "contradicts 1 live fact(s)")
}

// A fact observed again from a new source is reinforced in the revision
// that counts the source (substrate RFC §11, §15.6): its salience gains
// the reinforcement gain over what decay left of it, and its decay starts
// again. A retry of the same event is nothing new.
func TestFactObservedAgainIsReinforced(t *testing.T) {
	t.Parallel()
	e := setupFull(t)
	e.observe("r1", fact("cache", "backend", "redis"))
	id := e.facts("cache")["redis"].ID
	// As if it had faded for a hundred days unused.
	_, err := e.db.Pool.Exec(t.Context(), `UPDATE records SET salience = 0.3, last_reinforced_at = now() - interval '100 days' WHERE id = $1`, id)
	require.NoError(t, err)
	before := time.Now()
	left := e.facts("cache")["redis"].Salience // as it reads now, decayed
	require.Less(t, left, 0.15)

	e.observe("r2", fact("cache", "backend", "redis"), "idempotency_key", "r2")
	again := e.facts("cache")["redis"]
	require.Equal(t, id, again.ID)
	require.False(t, again.Lifecycle.LastReinforcedAt.Before(before.Add(-time.Second)), "its decay starts again")
	require.InDelta(t, left+decay.DefaultReinforcementGain, again.Salience, 0.01)

	e.observe("r2", fact("cache", "backend", "redis"), "idempotency_key", "r2")
	retried := e.facts("cache")["redis"]
	require.Equal(t, again.Version, retried.Version, "a retry is no new observation")
	require.Equal(t, again.Lifecycle.LastReinforcedAt, retried.Lifecycle.LastReinforcedAt)
}
