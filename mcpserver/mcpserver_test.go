package mcpserver_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/client"
	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/embedding"
	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/internal/buildtest"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/mcpserver"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

const (
	acmeKey  = "acme-curator-0123456789"
	otherKey = "other-curator-0123456789"
	opsKey   = "operator-key-0123456789"
	// execKey is an executor's: agent planner-7 at work.
	execKey = "acme-executor-0123456789"
)

// env is a real engramd (the server over a freshly migrated PostgreSQL
// schema) with ingestion, retrieval and feedback, for two tenants.
type env struct {
	t      *testing.T
	url    string
	worker *ingest.Worker
}

func setup(t *testing.T) *env {
	t.Helper()
	db := pgtest.NewSchema(t)
	settings, err := decay.NewSettings(decay.DefaultConfig())
	require.NoError(t, err)
	wr := revise.New(db.Pool, revise.Config{Defaults: settings.Defaults})
	for _, tenant := range []string{"acme", "other"} {
		require.NoError(t, store.EnsureTenant(t.Context(), db.Pool, tenant))
	}
	rs, err := retrieve.NewSettings(retrieve.DefaultConfig())
	require.NoError(t, err)
	w := ingest.NewWorker(ingest.WorkerConfig{DB: db.Pool, Writer: wr})
	srv := httptest.NewServer(server.New(server.Config{
		DB: db.Pool, Writer: wr, Logger: slog.New(slog.DiscardHandler),
		Ingest:   ingest.New(ingest.Config{DB: db.Pool, Policy: w.Policy, Staged: w.Notify}),
		Decay:    decay.New(db.Pool, wr, settings),
		Retrieve: retrieve.New(db.Pool, rs, retrieve.WithEmbedder(embedding.NewLexical())),
		Keys: []server.Key{
			{Tenant: "acme", Name: "acme-curator", Secret: acmeKey, Role: server.RoleCurator},
			{Tenant: "other", Name: "other-curator", Secret: otherKey, Role: server.RoleCurator},
			{Name: "ops", Secret: opsKey, Role: server.RoleOperator},
			{Tenant: "acme", Name: "planner-7", Secret: execKey, Role: server.RoleExecutor, Agent: "planner-7"},
		},
	}))
	t.Cleanup(srv.Close)
	return &env{t: t, url: srv.URL, worker: w}
}

// drain runs the policy plane over every staged event.
func (e *env) drain() {
	e.t.Helper()
	_, err := e.worker.Drain(e.t.Context())
	require.NoError(e.t, err)
}

// api is a client of the API itself, to seed what the MCP tools read.
func (e *env) api(key string) *client.Client {
	c, err := client.New(client.Config{URL: e.url, Key: key})
	require.NoError(e.t, err)
	return c
}

// buildEngram builds the engram CLI once per test binary.
func buildEngram() (string, error) { return buildtest.Build("engram") }

func TestMain(m *testing.M) { buildtest.Main(m) }

// transport connects an MCP client to e with key.
type transport func(t *testing.T, e *env, key string) (*mcp.ClientSession, error)

// stdio launches `engram mcp` pointed at e, as a desktop agent does.
func stdio(t *testing.T, e *env, key string) (*mcp.ClientSession, error) {
	t.Helper()
	bin, err := buildEngram()
	require.NoError(t, err)
	cmd := exec.Command(bin, "mcp")
	cmd.Env = append(os.Environ(), "ENGRAM_URL="+e.url, "ENGRAM_API_KEY="+key, "ENGRAM_ACTOR=test-agent")
	cmd.Stderr = os.Stderr
	return mcp.NewClient(&mcp.Implementation{Name: "engram-test"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
}

// streamable connects to /mcp on e with key as a bearer token.
func streamable(t *testing.T, e *env, key string) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: bearer(key)}, MaxRetries: -1}
	return mcp.NewClient(&mcp.Implementation{Name: "engram-test"}, nil).Connect(t.Context(), tr, nil)
}

// bearer is a round tripper that sends a key.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// roundTripper is a function as an [http.RoundTripper].
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

var transports = []struct {
	name    string
	connect transport
}{{"stdio", stdio}, {"http", streamable}}

func connect(t *testing.T, tr transport, e *env, key string) *mcp.ClientSession {
	t.Helper()
	s, err := tr(t, e, key)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// call calls a tool that must succeed and decodes its structured output.
func call[T any](t *testing.T, s *mcp.ClientSession, tool string, args any) T {
	t.Helper()
	res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	require.False(t, res.IsError, "%s: %s", tool, text(res))
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var out T
	require.NoError(t, json.Unmarshal(b, &out), string(b))
	return out
}

// callError calls a tool that must fail with a tool error (not a protocol
// error) and returns its text.
func callError(t *testing.T, s *mcp.ClientSession, tool string, args any) string {
	t.Helper()
	res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err, "a tool error, not a protocol error")
	require.True(t, res.IsError, "%s succeeded: %s", tool, text(res))
	return text(res)
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// procedureBody is a competence record as an agent runtime would seed it.
func procedureBody(name, signal string, successes, failures int) map[string]any {
	return map[string]any{"type": "competence", "confidence": 0.8, "tags": []string{"learned"}, "payload": map[string]any{
		"kind": "competence", "skill_name": name, "triggers": []any{map[string]any{"signal": signal}},
		"recipe": []any{
			map[string]any{"step": "clear the build cache", "tool": "shell", "validation": "the cache directory is empty"},
			map[string]any{"step": "build again", "tool": "make"},
		},
		"failure_modes": []string{"the cache is on a read-only volume"},
		"performance":   map[string]any{"successes": successes, "failures": failures}}}
}

// Every tool is listed with its annotations and its input and output
// schemas, over both transports.
func TestMCPListTools(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			s := connect(t, tr.connect, setup(t), acmeKey)
			res, err := s.ListTools(t.Context(), nil)
			require.NoError(t, err)
			tools := map[string]*mcp.Tool{}
			for _, tool := range res.Tools {
				tools[tool.Name] = tool
				require.NotEmpty(t, tool.Description, tool.Name)
				require.NotNil(t, tool.Annotations, tool.Name)
				require.NotNil(t, tool.InputSchema, tool.Name)
				require.NotNil(t, tool.OutputSchema, tool.Name)
				out, _ := tool.OutputSchema.(map[string]any)
				require.Equal(t, "object", out["type"], tool.Name)
				require.NotNil(t, tool.Annotations.DestructiveHint, tool.Name)
				require.Equal(t, tool.Name == "forget", *tool.Annotations.DestructiveHint, "only forget withdraws memory: %s", tool.Name)
			}
			names := slices.Sorted(func(yield func(string) bool) {
				for n := range tools {
					if !yield(n) {
						return
					}
				}
			})
			require.Equal(t, []string{"feedback", "forget", "get_record", "list_procedures", "propose_fact", "recall", "record_audit", "record_history", "remember"}, names)
			for _, ro := range []string{"recall", "get_record", "record_history", "record_audit", "list_procedures"} {
				require.True(t, tools[ro].Annotations.ReadOnlyHint, ro)
			}
			for _, rw := range []string{"remember", "feedback", "propose_fact", "forget"} {
				require.False(t, tools[rw].Annotations.ReadOnlyHint, rw)
			}
			require.True(t, tools["feedback"].Annotations.IdempotentHint)
			require.True(t, tools["propose_fact"].Annotations.IdempotentHint)
			require.False(t, tools["remember"].Annotations.IdempotentHint)

			// The schemas say what the API takes: feedback's outcomes,
			// remember's event kinds.
			in, _ := tools["feedback"].InputSchema.(map[string]any)
			outcome := in["properties"].(map[string]any)["outcome"].(map[string]any)
			require.ElementsMatch(t, []any{"used_success", "used_failure", "unused"}, outcome["enum"])
			require.ElementsMatch(t, []any{"retrieval_id", "outcome"}, in["required"])
			recallOut, _ := tools["recall"].OutputSchema.(map[string]any)
			require.Contains(t, recallOut["properties"], "retrieval_id")
		})
	}
}

// An agent's loop over both transports: remember a thread's events,
// recall them, report feedback, read a record, its history and audit,
// propose facts through the gates, and be told what it did wrong.
func TestMCPAgentLoop(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			s := connect(t, tr.connect, e, acmeKey)

			// remember: a thread's events, all staged.
			thread := "deploy-" + tr.name
			rem := call[mcpserver.RememberOutput](t, s, "remember", map[string]any{
				"thread_id": thread, "agent_id": "coder",
				"events": []any{
					map[string]any{"kind": "user_input", "text": "deploy the billing service"},
					map[string]any{"kind": "tool_call", "tool": map[string]any{"name": "kubectl", "call_id": "c1", "arguments": []string{"apply", "-f", "billing.yaml"}}},
					map[string]any{"kind": "fact", "fact": map[string]any{"subject": "billing", "predicate": "deploys_with", "object": "kubectl"}},
					map[string]any{"kind": "outcome", "outcome": map[string]any{"status": "success", "summary": "billing deployed"}},
				},
			})
			require.Equal(t, 4, rem.Staged)
			require.Len(t, rem.EventIDs, 4)
			e.drain()

			// recall: the thread's episode and the fact it stated.
			rc := call[mcpserver.RecallOutput](t, s, "recall", map[string]any{
				"task": "how does billing deploy", "thread_id": thread,
			})
			require.NotEmpty(t, rc.RetrievalID)
			var factID string
			var layers []string
			for _, it := range rc.Items {
				layers = append(layers, it.Layer)
				require.NotEmpty(t, it.ID)
				require.NotEmpty(t, it.Why)
				if it.Type == "semantic" && strings.Contains(it.Summary, "billing deploys_with = kubectl") {
					factID = it.ID
				}
			}
			require.Contains(t, layers, "episodic", "the thread's episode is recalled: %+v", rc.Items)
			require.NotEmpty(t, factID, "the remembered fact is recalled: %+v", rc.Items)

			// feedback on that retrieval: applied once, then a duplicate.
			fb := call[mcpserver.FeedbackOutput](t, s, "feedback", map[string]any{
				"retrieval_id": rc.RetrievalID, "outcome": "used_success", "record_ids": []string{factID},
			})
			require.Equal(t, 1, fb.Applied)
			require.Equal(t, factID, fb.Records[0].ID)
			fb = call[mcpserver.FeedbackOutput](t, s, "feedback", map[string]any{
				"retrieval_id": rc.RetrievalID, "outcome": "used_success", "record_ids": []string{factID},
			})
			require.Equal(t, 0, fb.Applied)
			require.Equal(t, []string{factID}, fb.Duplicate)

			// get, history, audit.
			rec := call[mcpserver.Record](t, s, "get_record", map[string]any{"id": factID})
			require.Equal(t, factID, rec.ID)
			require.Equal(t, "semantic", rec.Type)
			require.Equal(t, "billing deploys_with = kubectl", rec.Summary)
			require.Equal(t, "kubectl", rec.Payload.(map[string]any)["object"])
			hist := call[mcpserver.HistoryOutput](t, s, "record_history", map[string]any{"id": factID})
			require.NotEmpty(t, hist.Versions)
			require.Equal(t, factID, hist.Versions[0].Record.ID)
			audit := call[mcpserver.AuditOutput](t, s, "record_audit", map[string]any{"id": factID})
			require.NotEmpty(t, audit.Entries)
			require.NotEmpty(t, audit.Entries[0].Action)

			// propose_fact: created, then absorbed as a duplicate, then a
			// contradiction held for review; each outcome said plainly.
			pf := call[mcpserver.ProposeFactOutput](t, s, "propose_fact", map[string]any{
				"subject": "user", "predicate": "prefers_editor", "object": "vim", "rationale": "the user said so",
			})
			require.Equal(t, "created", pf.Outcome, pf.Message)
			require.Equal(t, "active", pf.Record.Status)
			again := call[mcpserver.ProposeFactOutput](t, s, "propose_fact", map[string]any{
				"subject": "user", "predicate": "prefers_editor", "object": "vim",
			})
			require.Equal(t, "absorbed", again.Outcome)
			require.Equal(t, pf.RecordID, again.RecordID)
			require.Contains(t, again.Message, "Already known")
			// A contradiction on comparable evidence is kept, and both are
			// contested (the default evidence policy: nothing waits for an
			// operator), said plainly.
			contra := call[mcpserver.ProposeFactOutput](t, s, "propose_fact", map[string]any{
				"subject": "user", "predicate": "prefers_editor", "object": "emacs",
			})
			require.Equal(t, "contested", contra.Outcome, contra.Message)
			require.Equal(t, "contested", contra.Record.Status)
			require.Contains(t, contra.Message, "contested")
			got := call[mcpserver.Record](t, s, "get_record", map[string]any{"id": pf.RecordID})
			require.Equal(t, "contested", got.Status, "the fact it contradicts is contested too")

			// Clearly stronger evidence — the user's own word — replaces the
			// fact in force.
			shell := call[mcpserver.ProposeFactOutput](t, s, "propose_fact", map[string]any{
				"subject": "ci", "predicate": "runs_on", "object": "jenkins",
			})
			require.Equal(t, "created", shell.Outcome, shell.Message)
			moved := call[mcpserver.ProposeFactOutput](t, s, "propose_fact", map[string]any{
				"subject": "ci", "predicate": "runs_on", "object": "github actions",
				"rationale": "the team moved CI today", "evidence": []any{map[string]any{"kind": "human", "ref": "chat://user/42"}},
			})
			require.Equal(t, "created", moved.Outcome, moved.Message)
			require.Contains(t, moved.Message, shell.RecordID, "it names the fact it replaced")
			got = call[mcpserver.Record](t, s, "get_record", map[string]any{"id": shell.RecordID})
			require.Equal(t, "superseded", got.Status)
			rc = call[mcpserver.RecallOutput](t, s, "recall", map[string]any{"task": "where does ci run"})
			ids := []string{}
			for _, it := range rc.Items {
				ids = append(ids, it.ID)
			}
			require.Contains(t, ids, moved.RecordID)
			require.NotContains(t, ids, shell.RecordID, "a superseded fact is not recalled")

			// Asked to replace, on evidence as good as the fact in force's,
			// it replaces it.
			first := call[mcpserver.ProposeFactOutput](t, s, "propose_fact", map[string]any{
				"subject": "deploys", "predicate": "go_through", "object": "argo",
			})
			second := call[mcpserver.ProposeFactOutput](t, s, "propose_fact", map[string]any{
				"subject": "deploys", "predicate": "go_through", "object": "flux", "revision_policy": "replace",
			})
			require.Equal(t, "created", second.Outcome, second.Message)
			require.Contains(t, second.Message, first.RecordID)

			// The record resource is the API's JSON.
			rr, err := s.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "engram://records/" + pf.RecordID})
			require.NoError(t, err)
			require.Equal(t, "application/json", rr.Contents[0].MIMEType)
			var asJSON memory.Record
			require.NoError(t, json.Unmarshal([]byte(rr.Contents[0].Text), &asJSON))
			require.Equal(t, pf.RecordID, asJSON.ID.String())

			// Bad input is a tool error an agent can act on.
			msg := callError(t, s, "get_record", map[string]any{"id": "not-an-id"})
			require.Contains(t, msg, "invalid argument id")
			require.Contains(t, msg, "UUID")
			msg = callError(t, s, "get_record", map[string]any{"id": "0190a1b2-0000-7000-8000-000000000000"})
			require.Contains(t, msg, "HTTP 404")
			require.Contains(t, msg, "check the id")
			msg = callError(t, s, "feedback", map[string]any{"retrieval_id": rc.RetrievalID, "outcome": "great"})
			require.Contains(t, msg, "outcome")
			msg = callError(t, s, "propose_fact", map[string]any{"predicate": "prefers_editor", "object": "vim"})
			require.Contains(t, msg, "subject")
			// The API's field errors are located in the tool's arguments.
			msg = callError(t, s, "remember", map[string]any{"thread_id": thread, "events": []any{
				map[string]any{"kind": "observation", "text": "fine"},
				map[string]any{"kind": "user_input"},
			}})
			require.Contains(t, msg, "HTTP 422")
			require.Contains(t, msg, "events/1")
			require.Contains(t, msg, "Fix the arguments")
			require.NotContains(t, msg, acmeKey)
		})
	}
}

// A learned procedure is listed by list_procedures and as a resource, and
// reads as an Agent Skills SKILL.md.
func TestMCPSkills(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			good, err := e.api(acmeKey).CreateRecord(t.Context(), procedureBody("clear build cache", "cache mismatch in build", 8, 0), "")
			require.NoError(t, err)
			poor, err := e.api(acmeKey).CreateRecord(t.Context(), procedureBody("reboot the runner", "runner is stuck", 0, 4), "")
			require.NoError(t, err)
			s := connect(t, tr.connect, e, acmeKey)

			all := call[mcpserver.ListProceduresOutput](t, s, "list_procedures", map[string]any{})
			require.Len(t, all.Procedures, 2)
			best := call[mcpserver.ListProceduresOutput](t, s, "list_procedures", map[string]any{"min_success_rate": 0.8})
			require.Len(t, best.Procedures, 1)
			p := best.Procedures[0]
			require.Equal(t, good.ID.String(), p.ID)
			require.Equal(t, "clear build cache", p.SkillName)
			require.Equal(t, []string{"cache mismatch in build"}, p.Triggers)
			require.Equal(t, 8, p.Successes)
			require.InDelta(t, 0.9, p.SuccessRate, 0.001)
			require.Equal(t, "engram://skills/"+good.ID.String(), p.SkillURI)
			msg := callError(t, s, "list_procedures", map[string]any{"min_success_rate": 2})
			require.Contains(t, msg, "min_success_rate")

			// Listed as resources, one per procedure.
			res, err := s.ListResources(t.Context(), nil)
			require.NoError(t, err)
			uris := map[string]*mcp.Resource{}
			for _, r := range res.Resources {
				uris[r.URI] = r
			}
			require.Contains(t, uris, "engram://skills/"+poor.ID.String())
			r := uris[p.SkillURI]
			require.NotNil(t, r, "%+v", res.Resources)
			require.Equal(t, p.Name, r.Name)
			require.Equal(t, "text/markdown", r.MIMEType)
			tpl, err := s.ListResourceTemplates(t.Context(), nil)
			require.NoError(t, err)
			var templates []string
			for _, tt := range tpl.ResourceTemplates {
				templates = append(templates, tt.URITemplate)
			}
			require.ElementsMatch(t, []string{"engram://records/{id}", "engram://skills/{id}"}, templates)

			// Read as the SKILL.md the API renders.
			rr, err := s.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: p.SkillURI})
			require.NoError(t, err)
			md := rr.Contents[0].Text
			require.Equal(t, "text/markdown", rr.Contents[0].MIMEType)
			require.True(t, strings.HasPrefix(md, "---\nname: "+p.Name+"\n"), md)
			require.Contains(t, md, "clear the build cache")
			require.Contains(t, md, "description: ")
			require.Contains(t, md, good.ID.String(), "links back to its evidence in engram")
			var api []byte
			require.NoError(t, e.api(acmeKey).Do(t.Context(), "GET", "/v1/records/"+good.ID.String()+"/skill.md", nil, nil, &api))
			require.Equal(t, string(api), md)

			// A record that is no procedure has no skill.
			fact, err := e.api(acmeKey).CreateRecord(t.Context(), map[string]any{"type": "semantic", "payload": map[string]any{
				"kind": "semantic", "subject": "user", "predicate": "likes", "object": "tea", "validity": map[string]any{"mode": "global"}}}, "")
			require.NoError(t, err)
			_, err = s.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "engram://skills/" + fact.ID.String()})
			require.Error(t, err)
		})
	}
}

// Each key sees its own tenant only: tenant other's key cannot read
// acme's record by tool or resource, nor list its procedures; an unknown
// key is refused.
func TestMCPTenantsAndKeys(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			proc, err := e.api(acmeKey).CreateRecord(t.Context(), procedureBody("clear build cache", "cache mismatch", 2, 0), "")
			require.NoError(t, err)

			acme := connect(t, tr.connect, e, acmeKey)
			require.Equal(t, proc.ID.String(), call[mcpserver.Record](t, acme, "get_record", map[string]any{"id": proc.ID.String()}).ID)

			other := connect(t, tr.connect, e, otherKey)
			msg := callError(t, other, "get_record", map[string]any{"id": proc.ID.String()})
			require.Contains(t, msg, "HTTP 404")
			require.NotContains(t, msg, "clear build cache")
			callError(t, other, "record_history", map[string]any{"id": proc.ID.String()})
			callError(t, other, "record_audit", map[string]any{"id": proc.ID.String()})
			_, err = other.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "engram://records/" + proc.ID.String()})
			require.Error(t, err)
			_, err = other.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "engram://skills/" + proc.ID.String()})
			require.Error(t, err)
			require.Empty(t, call[mcpserver.ListProceduresOutput](t, other, "list_procedures", map[string]any{}).Procedures)
			res, err := other.ListResources(t.Context(), nil)
			require.NoError(t, err)
			require.Empty(t, res.Resources)

			// An unknown key: over HTTP no session opens; over stdio every
			// call is refused with what to fix, never the key.
			const unknown = "no-such-key-0123456789"
			if tr.name == "http" {
				_, err := streamable(t, e, unknown)
				require.Error(t, err)

				// Each request is served with its own key: a client that
				// changes its key mid-session acts with the new one.
				var key atomic.Pointer[string]
				key.Store(new(acmeKey))
				hc := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
					return bearer(*key.Load()).RoundTrip(r)
				})}
				s, err := mcp.NewClient(&mcp.Implementation{Name: "engram-test"}, nil).Connect(t.Context(),
					&mcp.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
				require.NoError(t, err)
				defer s.Close()
				call[mcpserver.Record](t, s, "get_record", map[string]any{"id": proc.ID.String()})
				key.Store(new(otherKey))
				require.Contains(t, callError(t, s, "get_record", map[string]any{"id": proc.ID.String()}), "HTTP 404")
				return
			}
			s := connect(t, tr.connect, e, unknown)
			msg = callError(t, s, "recall", map[string]any{"task": "anything"})
			require.Contains(t, msg, "HTTP 401")
			require.Contains(t, msg, "ENGRAM_API_KEY")
			require.NotContains(t, msg, unknown)
		})
	}
}

// /mcp is authenticated like the API: a missing or unknown key gets the
// API's 401 problem, and an operator's key (no tenant) its 403, before any
// MCP message is read.
func TestMCPHTTPAuth(t *testing.T) {
	t.Parallel()
	e := setup(t)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`
	post := func(key string, body ...string) (*http.Response, string) {
		msg := initialize
		if len(body) > 0 {
			msg = body[0]
		}
		req, err := http.NewRequest("POST", e.url+"/mcp", strings.NewReader(msg))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res, string(b)
	}
	for _, key := range []string{"", "no-such-key-0123456789"} {
		res, body := post(key)
		require.Equal(t, http.StatusUnauthorized, res.StatusCode, body)
		require.Equal(t, "application/problem+json", res.Header.Get("Content-Type"))
		require.Contains(t, body, "urn:engram:problem:unauthorized")
		if key != "" {
			require.NotContains(t, body, key)
		}
	}
	res, body := post(opsKey)
	require.Equal(t, http.StatusForbidden, res.StatusCode, body)
	require.Contains(t, body, "urn:engram:problem:forbidden")

	res, body = post(acmeKey)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	require.Contains(t, body, `"serverInfo"`)
	require.Contains(t, body, `"engram"`)

	// The README's curl: a tool call with no session, answered as JSON.
	res, body = post(acmeKey, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"recall","arguments":{"task":"the build fails","signals":["ld: cache mismatch in /tmp/a1/obj.o"]}}}`)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	require.Equal(t, "application/json", res.Header.Get("Content-Type"))
	var rpc struct {
		Result struct {
			IsError           bool                   `json:"isError"`
			StructuredContent mcpserver.RecallOutput `json:"structuredContent"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &rpc), body)
	require.False(t, rpc.Result.IsError, body)
	require.NotEmpty(t, rpc.Result.StructuredContent.RetrievalID, body)
}

// `engram mcp` answers every request it was sent before it exits at the
// end of its input, as when a script pipes requests in and closes them.
func TestMCPStdioAnswersBeforeEOF(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bin, err := buildEngram()
	require.NoError(t, err)
	cmd := exec.Command(bin, "mcp")
	cmd.Env = append(os.Environ(), "ENGRAM_URL="+e.url, "ENGRAM_API_KEY="+acmeKey)
	cmd.Stderr = os.Stderr
	cmd.Stdin = strings.NewReader(strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"recall","arguments":{"task":"deploy the billing service"}}}`,
		`{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"list_procedures","arguments":{}}}`,
	}, "\n") + "\n")
	out, err := cmd.Output()
	require.NoError(t, err)
	answers := map[string]string{}
	for line := range strings.Lines(string(out)) {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &msg), line)
		answers[string(msg.ID)] = string(msg.Result)
	}
	require.Len(t, answers, 3, "%s", out)
	for _, id := range []string{`1`, `2`, `"three"`} {
		require.NotEmpty(t, answers[id], "request %s unanswered: %s", id, out)
		require.NotContains(t, answers[id], `"isError":true`, id)
	}
}

// An executor's key works as its own agent: remember names no agent and
// writes the key's, recall finds the thread's memory, and forget withdraws
// its working memory. What is not its own session's it may not touch, and
// the refusal says so in words.
func TestMCPExecutor(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			s := connect(t, tr.connect, e, execKey)
			thread := "exec-" + tr.name
			rem := call[mcpserver.RememberOutput](t, s, "remember", map[string]any{
				"thread_id": thread,
				"events": []any{
					map[string]any{"kind": "user_input", "text": "rotate the billing certificates"},
					map[string]any{"kind": "tool_call", "tool": map[string]any{"name": "certctl", "arguments": map[string]any{"rotate": "billing"}}},
				},
			})
			require.Equal(t, 2, rem.Staged)
			e.drain()

			rc := call[mcpserver.RecallOutput](t, s, "recall", map[string]any{"task": "rotate the billing certificates", "thread_id": thread})
			var working, episode string
			for _, it := range rc.Items {
				switch it.Type {
				case "working":
					working = it.ID
				case "episodic":
					episode = it.ID
				}
			}
			require.NotEmpty(t, working, "the thread's working memory: %+v", rc.Items)
			require.NotEmpty(t, episode, "the thread's episode: %+v", rc.Items)
			rec := call[mcpserver.Record](t, s, "get_record", map[string]any{"id": episode})
			require.Equal(t, "planner-7", rec.AgentID, "written as the key's agent")

			// It reports how what it recalled served (write-path RFC
			// §12.8.2's matrix as package access widens it for agents).
			fb := call[mcpserver.FeedbackOutput](t, s, "feedback", map[string]any{
				"retrieval_id": rc.RetrievalID, "outcome": "used_success", "record_ids": []string{working},
			})
			require.Len(t, fb.Records, 1, "%+v", fb)

			gone := call[mcpserver.ForgetOutput](t, s, "forget", map[string]any{"id": working, "rationale": "the rotation is done"})
			require.Equal(t, "retracted", gone.Record.Status)
			rc = call[mcpserver.RecallOutput](t, s, "recall", map[string]any{"task": "rotate the billing certificates", "thread_id": thread})
			for _, it := range rc.Items {
				require.NotEqual(t, working, it.ID, "a forgotten record is not recalled")
			}

			// Another agent's session and the shared layers are not its to
			// write: refused, in words.
			msg := callError(t, s, "remember", map[string]any{"thread_id": thread, "agent_id": "someone-else",
				"events": []any{map[string]any{"kind": "observation", "text": "hello"}}})
			require.Contains(t, msg, "HTTP 403")
			require.Contains(t, msg, "an executor key may write only its own agent's episodic memory")
			fact, err := e.api(acmeKey).CreateRecord(t.Context(), map[string]any{"type": "semantic", "payload": map[string]any{
				"kind": "semantic", "subject": "billing", "predicate": "certificates_from", "object": "vault", "validity": map[string]any{"mode": "global"}}}, "")
			require.NoError(t, err)
			msg = callError(t, s, "forget", map[string]any{"id": fact.ID.String()})
			require.Contains(t, msg, "HTTP 403")
			require.Contains(t, msg, "an executor key may write only its own agent's semantic memory")

			// Its own episode it may forget: deleted, no longer recalled.
			gone = call[mcpserver.ForgetOutput](t, s, "forget", map[string]any{"id": episode, "rationale": "done"})
			require.Equal(t, "deleted", gone.Outcome)
		})
	}
}
