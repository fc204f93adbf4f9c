package consolidate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/consolidate"
	"github.com/engram-dev/engram/extract"
	"github.com/engram-dev/engram/internal/logtest"
	"github.com/engram-dev/engram/internal/openaitest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

const modelKey = "sk-model-test-0123456789-secret"

// secretToken is a GitHub token the model echoes in a fact.
const secretToken = "ghp_0123456789abcdefghijABCDEFGHIJ012345"

// withModel replaces e's consolidator with one whose model is the local
// server srv, logging into the returned buffer.
func (e *env) withModel(srv *openaitest.Server) *logtest.Buffer {
	e.t.Helper()
	x, err := extract.NewOpenAI(extract.Config{BaseURL: srv.URL, Model: "gpt-test", APIKey: modelKey})
	require.NoError(e.t, err)
	logs := &logtest.Buffer{}
	e.reg = prometheus.NewRegistry()
	e.cons = consolidate.New(consolidate.Config{DB: e.db.Pool, Writer: revise.New(e.db.Pool, revise.Config{}),
		Extractor: extract.Instrument(x, e.reg), Registry: e.reg, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	return logs
}

// talk is a thread in which the user says things in words and the agent
// observes some, ending with a summary.
func talk(thread, said, observed, summary string) []map[string]any {
	ev := func(kind string, fields map[string]any) map[string]any {
		m := map[string]any{"kind": kind, "agent_id": "coder", "thread_id": thread}
		for k, v := range fields {
			m[k] = v
		}
		return m
	}
	return []map[string]any{
		ev("user_input", map[string]any{"text": said}),
		ev("tool_call", map[string]any{"tool": map[string]any{"name": "shell", "arguments": map[string]any{"command": "go version"}}}),
		ev("observation", map[string]any{"text": observed}),
		ev("outcome", map[string]any{"outcome": map[string]any{"status": "success", "summary": summary}}),
	}
}

// facts answers with the facts for whichever text asks, by a word in it.
func factsByWord(answers map[string]string) func(openaitest.Request) openaitest.Reply {
	return func(r openaitest.Request) openaitest.Reply {
		for word, content := range answers {
			if strings.Contains(r.User(), word) {
				return openaitest.Completion(r.Model, content, "")
			}
		}
		return openaitest.Completion(r.Model, `{"facts": []}`, "")
	}
}

// extracted are the tenant's live facts a model found.
func (e *env) extracted() []memory.Record {
	e.t.Helper()
	page, err := store.List(context.Background(), e.db.Pool, "acme", store.Filter{
		Types: []memory.Type{memory.Semantic}, Tags: []string{consolidate.ExtractedTag}})
	require.NoError(e.t, err)
	return page.Records
}

func semanticOf(t *testing.T, r memory.Record) memory.SemanticPayload {
	t.Helper()
	var p memory.SemanticPayload
	require.NoError(t, json.Unmarshal(r.Payload, &p))
	return p
}

// A pass with a model reads the free text of a closed episode, asks the
// model once, and writes its facts through the write path: semantic
// records citing the episode and the model's reading, derived from the
// episode, the secret the model echoed redacted and the record as
// sensitive as it. A repeated pass asks nothing; one redone from scratch
// asks again and writes nothing new.
func TestModelFactsFromFreeText(t *testing.T) {
	t.Parallel()
	e := setup(t)
	srv := openaitest.NewServer(t, factsByWord(map[string]string{"backend": `{"facts": [
		{"subject": "user", "predicate": "prefers_language", "object": "go", "conditions": [{"key": "project_kind", "value": "backend"}]},
		{"subject": "staging database", "predicate": "access_token", "object": "` + secretToken + `", "conditions": []}]}`}))
	logs := e.withModel(srv)
	e.post(talk("chat-1", "I always write backend services in Go", "go version go1.26 linux/amd64", "set up the Go backend"))

	counts := e.consolidate()
	require.Equal(t, int64(2), counts["facts_extracted"], counts)
	require.Equal(t, int64(2), counts["semantic_created"], counts)

	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "user: I always write backend services in Go\nobservation: go version go1.26 linux/amd64\noutcome (success): set up the Go backend", reqs[0].User(),
		"the free text only: no tool call")
	require.Equal(t, "Bearer "+modelKey, reqs[0].Authorization)

	ep := e.episodeOf("chat-1")
	recs := e.extracted()
	require.Len(t, recs, 2)
	byPredicate := map[string]memory.Record{}
	for _, r := range recs {
		byPredicate[semanticOf(t, r).Predicate] = r
		require.Equal(t, []memory.Source{{Kind: "record", Ref: "record://" + ep.ID.String()}, {Kind: "reasoning", Ref: "model:extract"}}, r.Provenance.Sources)
		require.Equal(t, []memory.Relation{{Predicate: memory.DerivedFrom, TargetID: ep.ID}}, r.Relations)
		require.Contains(t, r.Tags, consolidate.LearnedTag)
		require.LessOrEqual(t, r.Confidence, consolidate.ModelConfidence, "a model's fact claims little")
		require.Equal(t, ep.Scope, r.Scope)
		require.Equal(t, memory.VisibilityTenant, r.Visibility, "as the episode")
		require.Empty(t, r.AgentID, "the agent did not state it")
		audit, err := store.Audit(context.Background(), e.db.Pool, "acme", r.ID)
		require.NoError(t, err)
		require.Equal(t, "consolidate", audit[0].Actor)
		require.Contains(t, audit[0].Rationale, "a language model read it in the free text of episode "+ep.ID.String())
	}
	lang := semanticOf(t, byPredicate["prefers_language"])
	require.Equal(t, "user", lang.Subject)
	require.JSONEq(t, `"go"`, string(lang.Object))
	require.Equal(t, memory.Conditional, lang.Validity.Mode)
	require.Equal(t, memory.Conditions{"project_kind": "backend"}, lang.Validity.Conditions)
	require.Len(t, lang.Evidence, 2)
	require.Equal(t, ep.Sensitivity, byPredicate["prefers_language"].Sensitivity)

	token := byPredicate["access_token"]
	require.NotContains(t, string(token.Payload), secretToken)
	require.JSONEq(t, `"[REDACTED:github_token]"`, string(semanticOf(t, token).Object))
	require.Greater(t, token.Sensitivity.Rank(), memory.Low.Rank(), "as sensitive as the secret it held")
	for _, table := range []string{"records", "record_versions", "audit_log", "reviews"} { // it is nowhere
		var leaks int
		require.NoError(t, e.db.Pool.QueryRow(context.Background(),
			"SELECT count(*) FROM "+table+" t WHERE t::text LIKE '%' || $1 || '%'", secretToken).Scan(&leaks))
		require.Zero(t, leaks, table)
	}

	// A repeated pass asks the model nothing.
	require.Equal(t, map[string]int64{"episodes": 0}, e.consolidate())
	require.Len(t, srv.Requests(), 1)

	// From scratch, the episode is asked again and the write path absorbs
	// what it already holds: nothing new.
	e.run.cursor = nil
	counts = e.consolidate()
	require.Equal(t, int64(2), counts["semantic_absorbed"], counts)
	again := e.extracted()
	require.Len(t, again, 2)
	for _, r := range again {
		require.Equal(t, 1, r.Version)
	}
	require.NotContains(t, logs.String(), modelKey)
}

// A model's fact never outranks an observed one: contradicting a fact an
// event stated, it is refused, and the observed fact stays.
func TestModelFactsDoNotOutrankObserved(t *testing.T) {
	t.Parallel()
	e := setup(t)
	srv := openaitest.NewServer(t, factsByWord(map[string]string{"python": `{"facts": [
		{"subject": "user", "predicate": "prefers_language", "object": "python", "conditions": []}]}`}))
	e.withModel(srv)
	thread := talk("chat-2", "maybe python would do", "nothing", "")
	thread = append(thread[:1], append([]map[string]any{{"kind": "fact", "agent_id": "coder", "thread_id": "chat-2",
		"fact": map[string]any{"subject": "user", "predicate": "prefers_language", "object": "go"}}}, thread[1:]...)...)
	e.post(thread)

	counts := e.consolidate()
	require.Equal(t, int64(1), counts["facts_extracted"], counts)
	require.Equal(t, int64(1), counts["semantic_refused"], counts)
	require.Empty(t, e.extracted())
	page, err := store.List(context.Background(), e.db.Pool, "acme", store.Filter{Types: []memory.Type{memory.Semantic}})
	require.NoError(t, err)
	require.Len(t, page.Records, 1)
	require.JSONEq(t, `"go"`, string(semanticOf(t, page.Records[0]).Object))
	require.Equal(t, memory.Active, page.Records[0].Status)
}

// A model failure fails neither the pass nor its watermark: an endpoint
// error is logged without the key and counted, and the tenant's other
// episodes are not asked this pass; a bad answer is the episode's alone.
func TestModelFailureKeepsThePass(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var mu sync.Mutex
	calls := 0
	srv := openaitest.NewServer(t, func(r openaitest.Request) openaitest.Reply {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		switch {
		case n == 1:
			return openaitest.Reply{Status: http.StatusInternalServerError, Body: "upstream failed for key " + modelKey}
		case strings.Contains(r.User(), "garbled"):
			return openaitest.Completion(r.Model, "Sure! Here are the facts: user likes go", "")
		default:
			return openaitest.Completion(r.Model, `{"facts": [{"subject": "team", "predicate": "uses_editor", "object": "vim", "conditions": []}]}`, "")
		}
	})
	logs := e.withModel(srv)
	fix := []map[string]any{step("shell", map[string]any{"command": "rm -rf /tmp/c"}, map[string]any{"exit_code": 0}), buildOK}
	for i := range 2 {
		e.post(episode(fmt.Sprintf("fix-%d", i), map[string]any{"os": "linux"}, "ld: cache mismatch in /tmp/x/obj.o", fix, "success"))
	}

	counts := e.consolidate()
	require.Equal(t, int64(1), counts["model_failures"], counts)
	require.Equal(t, int64(1), counts["model_skipped"], counts)
	require.Equal(t, int64(1), counts["competence_created"], counts, "the other stages did their work")
	require.Len(t, srv.Requests(), 1, "no second call to a failing endpoint")
	require.Contains(t, logs.String(), "status 500: upstream failed for key [redacted]")
	require.NotContains(t, logs.String(), modelKey)
	require.Equal(t, map[string]int64{"episodes": 0}, e.consolidate(), "the watermark moved on")

	// A bad answer: that episode has no facts, the next one does.
	e.post(talk("chat-3", "the answer will be garbled", "x", ""))
	e.post(talk("chat-4", "we edit with vim", "y", ""))
	counts = e.consolidate()
	require.Equal(t, int64(1), counts["model_failures"], counts)
	require.Zero(t, counts["model_skipped"], counts)
	require.Equal(t, int64(1), counts["semantic_created"], counts)
	recs := e.extracted()
	require.Len(t, recs, 1)
	require.Equal(t, []memory.Relation{{Predicate: memory.DerivedFrom, TargetID: e.episodeOf("chat-4").ID}}, recs[0].Relations)
	require.Equal(t, map[string]float64{"facts bad_response": 1, "facts error": 1, "facts ok": 1}, e.modelCalls())
}

// modelCalls is engram_model_calls_total by operation and outcome.
func (e *env) modelCalls() map[string]float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	require.NoError(e.t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "engram_model_calls_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out[labels["operation"]+" "+labels["outcome"]] += m.GetCounter().GetValue()
		}
	}
	return out
}
