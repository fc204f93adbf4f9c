package retrieve_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/embedding"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/jobs/jobstest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/store"
)

type bundle struct {
	ctx       context.Context
	db        *pgtest.Schema
	w         *revise.Writer
	retriever *retrieve.Retriever
	backfill  *embedding.Backfiller
	tenant    string
	ch        revise.Change
}

func setup(t *testing.T, opts ...retrieve.Option) *bundle {
	t.Helper()
	db := pgtest.NewSchema(t)
	ctx := context.Background()
	require.NoError(t, store.EnsureTenant(ctx, db.Pool, "acme"))
	require.NoError(t, store.EnsureTenant(ctx, db.Pool, "globex"))
	settings, err := retrieve.NewSettings(retrieve.DefaultConfig())
	require.NoError(t, err)
	lex := embedding.NewLexical()
	r := retrieve.New(db.Pool, settings, append([]retrieve.Option{retrieve.WithEmbedder(lex)}, opts...)...)
	return &bundle{ctx: ctx, db: db, w: revise.New(db.Pool, revise.Config{}), retriever: r, backfill: embedding.NewBackfiller(db.Pool, lex, 100, nil),
		tenant: "acme", ch: revise.Change{Actor: "test"}}
}

func (b *bundle) create(t *testing.T, r memory.Record) memory.Record {
	t.Helper()
	out, err := b.w.Create(b.ctx, b.tenant, r, b.ch)
	require.NoError(t, err)
	return out
}

// index runs what the daemon's jobs do: BM25 statistics and the vector
// backfill.
func (b *bundle) index(t *testing.T) {
	t.Helper()
	require.NoError(t, b.retriever.RefreshStats(b.ctx, &jobstest.Run{}))
	require.NoError(t, b.backfill.Backfill(b.ctx, &jobstest.Run{}))
}

func (b *bundle) retrieve(t *testing.T, req retrieve.Request) retrieve.Result {
	t.Helper()
	res, err := b.retriever.Retrieve(b.ctx, b.tenant, req)
	require.NoError(t, err)
	return res
}

func payload(v map[string]any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func fact(subject, predicate string, object any, conds map[string]any) memory.Record {
	validity := map[string]any{"mode": "global"}
	if conds != nil {
		validity = map[string]any{"mode": "conditional", "conditions": conds}
	}
	return memory.Record{Type: memory.Semantic, Confidence: 0.8, Payload: payload(map[string]any{
		"kind": "semantic", "subject": subject, "predicate": predicate, "object": object, "validity": validity})}
}

func procedure(skill, signal string, conds map[string]any, successes, failures int, steps ...string) memory.Record {
	var recipe []any
	for _, s := range steps {
		recipe = append(recipe, map[string]any{"step": s})
	}
	trig := map[string]any{"signal": signal}
	if conds != nil {
		trig["conditions"] = conds
	}
	return memory.Record{Type: memory.Competence, Confidence: 0.7, Payload: payload(map[string]any{
		"kind": "competence", "skill_name": skill, "triggers": []any{trig}, "recipe": recipe,
		"performance": map[string]any{"successes": successes, "failures": failures}})}
}

func plan(id, intent string, ops ...string) memory.Record {
	var nodes []any
	for i, op := range ops {
		nodes = append(nodes, map[string]any{"id": string(rune('a' + i)), "op": op})
	}
	return memory.Record{Type: memory.PlanGraph, Confidence: 0.7, Payload: payload(map[string]any{
		"kind": "plan_graph", "plan_id": id, "version": "1", "intent": intent, "nodes": nodes, "edges": []any{}})}
}

func episode(outcome string, summaries ...string) memory.Record {
	var tl []any
	for i, s := range summaries {
		tl = append(tl, map[string]any{"t": time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC), "event_kind": "observation", "ref": "evt://x", "summary": s})
	}
	return memory.Record{Type: memory.Episodic, Payload: payload(map[string]any{"kind": "episodic", "timeline": tl, "outcome": outcome})}
}

// startThread opens a thread with its working memory, as the policy plane
// does.
func (b *bundle) startThread(t *testing.T, thread, summary string) memory.Record {
	t.Helper()
	var w memory.Record
	err := b.w.InTx(b.ctx, func(ctx context.Context, tx *revise.Tx) error {
		ep, err := tx.Create(ctx, b.tenant, memory.Record{Type: memory.Episodic, Payload: payload(map[string]any{"kind": "episodic", "timeline": []any{}})}, b.ch)
		if err != nil {
			return err
		}
		if w, err = tx.Create(ctx, b.tenant, memory.Record{Type: memory.Working, Payload: payload(map[string]any{
			"kind": "working", "thread_id": thread, "state": "executing", "context_summary": summary})}, b.ch); err != nil {
			return err
		}
		_, err = store.InsertThread(ctx, tx.Exec(), b.tenant, thread, "coder", ep.ID, w.ID)
		return err
	})
	require.NoError(t, err)
	return w
}

func layer(res retrieve.Result, name retrieve.LayerName) retrieve.Layer {
	for _, l := range res.Layers {
		if l.Name == name {
			return l
		}
	}
	return retrieve.Layer{}
}

func layerIDs(l retrieve.Layer) []uuid.UUID {
	var out []uuid.UUID
	for _, it := range l.Items {
		out = append(out, it.Record.ID)
	}
	return out
}

// The answer comes in the layers of §15.8, in order: the thread's working
// memory, facts, procedures, plans, episodes.
func TestLayersInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := b.startThread(t, "task-42", "fixing the broken docker build")
	f := b.create(t, fact("docker", "build_cache_dir", "/var/lib/docker/buildkit", nil))
	p := b.create(t, procedure("clear-docker-cache", "docker build failed: cache mismatch", nil, 3, 0, "docker builder prune"))
	g := b.create(t, plan("rebuild-image", "fix_build", "docker_prune", "docker_build"))
	e := b.create(t, episode("success", "docker build failed with a cache mismatch", "pruned the builder cache"))
	b.index(t)

	res := b.retrieve(t, retrieve.Request{Task: retrieve.Task{
		Text: "the docker build fails", Intent: "fix_build", Signals: []string{"cache mismatch"}, ThreadID: "task-42",
	}})
	var names []retrieve.LayerName
	for _, l := range res.Layers {
		names = append(names, l.Name)
	}
	require.Equal(t, retrieve.Layers, names)
	require.Equal(t, []uuid.UUID{w.ID}, layerIDs(layer(res, retrieve.LayerWorking)))
	require.Equal(t, []uuid.UUID{f.ID}, layerIDs(layer(res, retrieve.LayerSemantic)))
	require.Equal(t, []uuid.UUID{p.ID}, layerIDs(layer(res, retrieve.LayerCompetence)))
	require.Equal(t, []uuid.UUID{g.ID}, layerIDs(layer(res, retrieve.LayerPlan)))
	require.Equal(t, []uuid.UUID{e.ID}, layerIDs(layer(res, retrieve.LayerEpisodic)))
	require.False(t, res.LexicalOnly)
	require.True(t, layer(res, retrieve.LayerPlan).Items[0].Why.IntentMatch)
	require.NotNil(t, layer(res, retrieve.LayerCompetence).Items[0].Why.Vector, "found by the vector half too")
	require.Equal(t, 5, res.Budget.Items)
	require.NotEqual(t, uuid.Nil, res.RetrievalID)

	// Episodes only where the layers above leave the budget unspent.
	four := 4
	res = b.retrieve(t, retrieve.Request{Task: retrieve.Task{
		Text: "the docker build fails", Intent: "fix_build", Signals: []string{"cache mismatch"}, ThreadID: "task-42",
	}, Budget: retrieve.Budget{Items: &four}})
	require.Empty(t, layer(res, retrieve.LayerEpisodic).Items)
	require.Equal(t, 1, layer(res, retrieve.LayerEpisodic).Omitted)
}

// Conditional facts are chosen by the task's conditions (§7): the variant
// for another context is not returned; one whose conditions the task does
// not name is, ranked below the one it satisfies.
func TestConditionalFactsChosenByConditions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	goFact := b.create(t, fact("user", "prefers_language", "go", map[string]any{"project_kind": "backend"}))
	py := b.create(t, fact("user", "prefers_language", "python", map[string]any{"project_kind": "data_science"}))
	b.index(t)

	for kind, want := range map[string]uuid.UUID{"backend": goFact.ID, "data_science": py.ID} {
		res := b.retrieve(t, retrieve.Request{Task: retrieve.Task{
			Text: "which language does the user prefer", Conditions: map[string]any{"project_kind": kind},
		}})
		sem := layer(res, retrieve.LayerSemantic)
		require.Equal(t, []uuid.UUID{want}, layerIDs(sem), kind)
		require.Equal(t, []string{"project_kind"}, sem.Items[0].Why.MatchedConditions)
	}
	res := b.retrieve(t, retrieve.Request{Task: retrieve.Task{Text: "which language does the user prefer"}})
	sem := layer(res, retrieve.LayerSemantic)
	require.Len(t, sem.Items, 2)
	require.Equal(t, []string{"project_kind"}, sem.Items[0].Why.UnknownConditions)
}

// The procedure for an error is found from a differently worded message of
// the same signature.
func TestCompetenceFoundFromDifferentWording(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fix := b.create(t, procedure("fix-npm-eresolve", "npm ERR! code ERESOLVE unable to resolve dependency tree", nil, 5, 1,
		"rerun npm install with --legacy-peer-deps"))
	b.create(t, procedure("free-disk", "ENOSPC: no space left on device", nil, 2, 0, "remove old docker images"))
	b.create(t, procedure("fix-ssh", "Permission denied (publickey)", nil, 2, 0, "add the deploy key"))
	b.index(t)

	res := b.retrieve(t, retrieve.Request{Task: retrieve.Task{
		Signals: []string{"npm error ERESOLVE could not resolve the dependency tree"},
	}})
	comp := layer(res, retrieve.LayerCompetence)
	require.NotEmpty(t, comp.Items)
	require.Equal(t, fix.ID, comp.Items[0].Record.ID)
	require.Equal(t, "npm ERR! code ERESOLVE unable to resolve dependency tree", comp.Items[0].Why.MatchedSignal)
	require.Contains(t, comp.Items[0].Why.Terms, "eresolv")
	require.InDelta(t, 6.0/8, *comp.Items[0].Why.SuccessRate, 1e-9)
}

// Two procedures equally good for the task are returned ranked with
// needs_disambiguation and the key that separates them; given that key,
// one is chosen.
func TestTieNeedsDisambiguation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	linux := b.create(t, procedure("fix-linker-linux", "ld: cannot find -lssl", map[string]any{"os": "linux"}, 4, 1, "apt install libssl-dev"))
	mac := b.create(t, procedure("fix-linker-mac", "ld: cannot find -lssl", map[string]any{"os": "darwin"}, 4, 1, "brew install openssl"))
	b.index(t)

	res := b.retrieve(t, retrieve.Request{Task: retrieve.Task{Signals: []string{"ld: cannot find -lssl"}}})
	comp := layer(res, retrieve.LayerCompetence)
	require.ElementsMatch(t, []uuid.UUID{linux.ID, mac.ID}, layerIDs(comp))
	require.True(t, comp.NeedsDisambiguation)
	require.Equal(t, []string{"os"}, comp.SeparatingKeys)

	res = b.retrieve(t, retrieve.Request{Task: retrieve.Task{Signals: []string{"ld: cannot find -lssl"}, Conditions: map[string]any{"os": "darwin"}}})
	comp = layer(res, retrieve.LayerCompetence)
	require.Equal(t, []uuid.UUID{mac.ID}, layerIDs(comp))
	require.False(t, comp.NeedsDisambiguation)
}

// Twenty successes beat one lucky one: the rate is smoothed.
func TestSuccessRateIsSmoothed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	proven := b.create(t, procedure("restart-proven", "connection reset by peer", nil, 20, 1, "restart the proxy"))
	lucky := b.create(t, procedure("restart-lucky", "connection reset by peer", nil, 1, 0, "reboot the host"))
	b.index(t)
	res := b.retrieve(t, retrieve.Request{Task: retrieve.Task{Signals: []string{"connection reset by peer"}}})
	require.Equal(t, []uuid.UUID{proven.ID, lucky.ID}, layerIDs(layer(res, retrieve.LayerCompetence)))
}

// A high record is invisible to a medium caller, counted as withheld,
// never named; with high clearance it comes summarised (at the limit), and
// the stored record is unchanged.
func TestTrustGating(t *testing.T) {
	t.Parallel()
	b := setup(t)
	open := b.create(t, fact("deploy", "uses_tool", "kubectl apply", nil))
	secret := fact("deploy", "token_location", "vault kv get secret/deploy", nil)
	secret.Sensitivity = memory.High
	s := b.create(t, secret)
	b.index(t)

	task := retrieve.Task{Text: "how do we deploy"}
	res := b.retrieve(t, retrieve.Request{Task: task, Trust: retrieve.Trust{Clearance: memory.Medium}})
	require.Equal(t, []uuid.UUID{open.ID}, layerIDs(layer(res, retrieve.LayerSemantic)))
	require.Equal(t, 1, res.Withheld)
	raw, err := json.Marshal(res)
	require.NoError(t, err)
	require.NotContains(t, string(raw), s.ID.String())
	require.NotContains(t, string(raw), "vault")

	res = b.retrieve(t, retrieve.Request{Task: task, Trust: retrieve.Trust{Clearance: memory.High}})
	sem := layer(res, retrieve.LayerSemantic)
	require.Len(t, sem.Items, 2)
	var got retrieve.Item
	for _, it := range sem.Items {
		if it.Record.ID == s.ID {
			got = it
		}
	}
	require.Equal(t, retrieve.Summarise, got.Gating)
	var p map[string]any
	require.NoError(t, json.Unmarshal(got.Record.Payload, &p))
	require.Equal(t, "deploy", p["subject"])
	require.Equal(t, retrieve.Withheld, p["object"])
	stored, err := store.Get(b.ctx, b.db.Pool, b.tenant, s.ID)
	require.NoError(t, err)
	require.Contains(t, string(stored.Payload), "vault kv get")

	// An unauthenticated caller, or a shared screen, sees less.
	no := false
	res = b.retrieve(t, retrieve.Request{Task: task, Trust: retrieve.Trust{Clearance: memory.High, Authenticated: &no}})
	require.Equal(t, memory.Public, res.Clearance)
	res = b.retrieve(t, retrieve.Request{Task: task, Trust: retrieve.Trust{Clearance: memory.High, Environment: "shared_screen"}})
	require.Equal(t, memory.Low, res.Clearance)
	require.Equal(t, []uuid.UUID{open.ID}, layerIDs(layer(res, retrieve.LayerSemantic)))

	// Another tenant sees none of it.
	other, err := b.retriever.Retrieve(b.ctx, "globex", retrieve.Request{Task: task, Trust: retrieve.Trust{Clearance: memory.Hyper}})
	require.NoError(t, err)
	require.Empty(t, layer(other, retrieve.LayerSemantic).Items)
	require.Zero(t, other.Withheld)
}

// Retrieval works, lexically, without the vector index, without the vector
// table, and with the embedding endpoint down — and says so.
func TestRetrievalWithoutVectors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.create(t, fact("postgres", "listens_on", "port 5432", nil))
	b.index(t)
	task := retrieve.Request{Task: retrieve.Task{Text: "which port does postgres listen on"}}

	_, err := b.db.Pool.Exec(b.ctx, "DROP INDEX record_vectors_feature_keys")
	require.NoError(t, err)
	res := b.retrieve(t, task)
	require.Equal(t, []uuid.UUID{f.ID}, layerIDs(layer(res, retrieve.LayerSemantic)))
	require.False(t, res.LexicalOnly, "an exact scan replaces the index")

	_, err = b.db.Pool.Exec(b.ctx, "DROP TABLE record_vectors")
	require.NoError(t, err)
	res = b.retrieve(t, task)
	require.Equal(t, []uuid.UUID{f.ID}, layerIDs(layer(res, retrieve.LayerSemantic)))
	require.True(t, res.LexicalOnly)
	require.Contains(t, res.Notes, "vector search unavailable: the vector index could not be read")

	down := embedding.Funcs{ModelFunc: func() string { return "openai:down:8" },
		EmbedFunc: func(context.Context, []string) ([]embedding.Vector, error) {
			return nil, errors.New("connection refused")
		}}
	settings, err := retrieve.NewSettings(retrieve.DefaultConfig())
	require.NoError(t, err)
	r := retrieve.New(b.db.Pool, settings, retrieve.WithEmbedder(down))
	res, err = r.Retrieve(b.ctx, b.tenant, task)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{f.ID}, layerIDs(layer(res, retrieve.LayerSemantic)))
	require.True(t, res.LexicalOnly)
	require.Equal(t, []string{"vector search unavailable: the embedder failed (openai:down:8)"}, res.Notes)
}

// A record without a vector yet is still found lexically; a misspelt
// query the lexical index cannot match is still found by the vector half.
func TestHybridHalves(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.create(t, fact("kubernetes", "namespace_for", "staging workloads", nil))
	require.NoError(t, b.retriever.RefreshStats(b.ctx, &jobstest.Run{}))
	res := b.retrieve(t, retrieve.Request{Task: retrieve.Task{Text: "kubernetes namespace"}})
	it := layer(res, retrieve.LayerSemantic).Items
	require.Equal(t, []uuid.UUID{f.ID}, layerIDs(layer(res, retrieve.LayerSemantic)))
	require.Nil(t, it[0].Why.Vector, "no vector yet")

	p := &jobstest.Run{}
	require.NoError(t, b.backfill.Backfill(b.ctx, p))
	require.Equal(t, int64(1), p.Count("embedded"))
	res = b.retrieve(t, retrieve.Request{Task: retrieve.Task{Text: "kubernetess namespaec"}})
	it = layer(res, retrieve.LayerSemantic).Items
	require.Equal(t, []uuid.UUID{f.ID}, layerIDs(layer(res, retrieve.LayerSemantic)))
	require.Zero(t, it[0].Why.BM25, "no lexeme matches the misspelling")
	require.Greater(t, *it[0].Why.Vector, 0.0)

	// A backfill pass over unchanged records writes nothing.
	p = &jobstest.Run{}
	require.NoError(t, b.backfill.Backfill(b.ctx, p))
	require.Zero(t, p.Count("embedded"))
}

// Bad requests are refused with a violation per field, and nothing is
// logged.
func TestBadRequests(t *testing.T) {
	t.Parallel()
	b := setup(t)
	zero, huge := 0, 1_000_000
	for name, tc := range map[string]struct {
		req  retrieve.Request
		want []schemas.Violation
	}{
		"empty descriptor": {retrieve.Request{}, []schemas.Violation{{Pointer: "/task", Message: "is empty: give text, an intent, signals, tools or a thread_id"}}},
		"unknown clearance": {retrieve.Request{Task: retrieve.Task{Text: "x"}, Trust: retrieve.Trust{Clearance: "secret"}},
			[]schemas.Violation{{Pointer: "/trust/clearance", Message: `"secret" is not a sensitivity level (public, low, medium, high, hyper)`}}},
		"zero budget": {retrieve.Request{Task: retrieve.Task{Text: "x"}, Budget: retrieve.Budget{Items: &zero, Tokens: &huge}},
			[]schemas.Violation{{Pointer: "/budget/items", Message: "must be between 1 and 200"}, {Pointer: "/budget/tokens", Message: "must be between 1 and 200000"}}},
		"bad layer budget": {retrieve.Request{Task: retrieve.Task{Text: "x"}, Budget: retrieve.Budget{Layers: map[retrieve.LayerName]int{"semantic": 0, "gossip": 1}}},
			[]schemas.Violation{{Pointer: "/budget/layers/gossip", Message: "is not a layer (working, semantic, competence, plan, episodic)"}, {Pointer: "/budget/layers/semantic", Message: "must be between 1 and 100"}}},
		"non-scalar condition": {retrieve.Request{Task: retrieve.Task{Text: "x", Conditions: map[string]any{"os": map[string]any{"name": "linux"}, "tags": []any{"a"}}}},
			[]schemas.Violation{{Pointer: "/task/conditions/os", Message: "is an object: a condition's value is a string, number or boolean"}, {Pointer: "/task/conditions/tags", Message: "is an array: a condition's value is a string, number or boolean"}}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := b.retriever.Retrieve(b.ctx, b.tenant, tc.req)
			var ve *schemas.ValidationError
			require.ErrorAs(t, err, &ve)
			require.Equal(t, tc.want, ve.Violations)
		})
	}
	var n int
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, "SELECT count(*) FROM retrievals").Scan(&n))
	require.Zero(t, n)
}

// Every answer is logged with the records it returned.
func TestRetrievalsAreLogged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.create(t, fact("redis", "eviction_policy", "allkeys-lru", nil))
	b.index(t)
	res := b.retrieve(t, retrieve.Request{Task: retrieve.Task{Text: "redis eviction", AgentID: "coder", ThreadID: "t1"}})
	logged, err := store.GetRetrieval(b.ctx, b.db.Pool, b.tenant, res.RetrievalID)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{f.ID}, logged.RecordIDs)
	require.Equal(t, "coder", logged.AgentID)
	_, err = store.GetRetrieval(b.ctx, b.db.Pool, "globex", res.RetrievalID)
	require.ErrorIs(t, err, store.ErrNotFound)
}

// A record private to an agent or a thread is found by that agent or in
// that thread only, and never counted as withheld elsewhere (after 003
// §12.8.5).
func TestVisibility(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mine := fact("staging", "db_password_hint", "ask the ops channel", nil)
	mine.Visibility, mine.AgentID = memory.VisibilityAgent, "coder"
	m := b.create(t, mine)
	thread := fact("ticket-9", "reproduced_with", "staging db restore", nil)
	thread.Visibility, thread.ThreadID = memory.VisibilityThread, "task-9"
	th := b.create(t, thread)
	shared := b.create(t, fact("staging", "db_host", "db.staging.internal", nil))
	b.index(t)

	for _, tc := range []struct {
		agent, thread string
		want          []uuid.UUID
	}{
		{"coder", "", []uuid.UUID{m.ID, shared.ID}},
		{"reviewer", "", []uuid.UUID{shared.ID}},
		{"", "", []uuid.UUID{shared.ID}},
		{"reviewer", "task-9", []uuid.UUID{th.ID, shared.ID}},
	} {
		res := b.retrieve(t, retrieve.Request{Task: retrieve.Task{Text: "staging db", AgentID: tc.agent, ThreadID: tc.thread}})
		require.ElementsMatch(t, tc.want, layerIDs(layer(res, retrieve.LayerSemantic)), "agent %q thread %q", tc.agent, tc.thread)
		require.Zero(t, res.Withheld)
	}
}

// Of two procedures alike in all but probation (and their disjoint
// conditions, which the task does not name), the proved one comes first
// (substrate RFC §8).
func TestProbationRanksBelowProved(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The one on probation has somewhat better statistics (3 successes to
	// 2: a smoothed rate of 0.8 to 0.75), and both triggers are the task's
	// problem: without the probation factor it would rank first.
	proved := b.create(t, procedure("clear-cache-darwin", "cache mismatch in obj", map[string]any{"os": "darwin"}, 2, 0, "rm -rf cache"))
	rec := procedure("clear-cache-linux", "cache mismatch in obj", map[string]any{"os": "linux"}, 3, 0, "rm -rf cache")
	rec.Tags = []string{memory.ProbationTag}
	probation := b.create(t, rec)
	b.index(t)
	res := b.retrieve(t, retrieve.Request{Task: retrieve.Task{Signals: []string{"cache mismatch in obj"}}})
	require.Equal(t, []uuid.UUID{proved.ID, probation.ID}, layerIDs(layer(res, retrieve.LayerCompetence)))
}
