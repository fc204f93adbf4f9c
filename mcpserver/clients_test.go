package mcpserver_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// clientDir holds the real clients, installed by `make clients`
// (scripts/clients.sh): the official TypeScript SDK and the MCP Inspector.
const clientDir = "testdata/client"

// realClients returns node's path, or skips the test when the clients are
// not installed: unless ENGRAM_REQUIRE_CLIENTS is set (make test sets it),
// which fails it instead.
func realClients(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	missing := ""
	switch {
	case err != nil:
		missing = "node is not on PATH"
	default:
		for _, p := range []string{"@modelcontextprotocol/sdk/package.json", "@modelcontextprotocol/inspector/package.json"} {
			if _, err := os.Stat(filepath.Join(clientDir, "node_modules", p)); err != nil {
				missing = "the clients are not installed (make clients)"
			}
		}
	}
	if missing == "" {
		return node
	}
	if os.Getenv("ENGRAM_REQUIRE_CLIENTS") != "" {
		t.Fatalf("real MCP clients required (ENGRAM_REQUIRE_CLIENTS): %s", missing)
	}
	t.Skipf("real MCP clients: %s; run make clients, or set ENGRAM_REQUIRE_CLIENTS to fail instead", missing)
	return ""
}

// clientReport is what client.mjs prints.
type clientReport struct {
	SDK          string         `json:"sdk"`
	Capabilities map[string]any `json:"capabilities"`
	Tools        []string       `json:"tools"`
	Valid        map[string]struct {
		IsError    bool   `json:"isError"`
		Structured bool   `json:"structured"`
		Text       string `json:"text"`
	} `json:"valid"`
	Invalid map[string]struct {
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
	} `json:"invalid"`
	Resources struct {
		List      []string `json:"list"`
		Templates []string `json:"templates"`
		Record    struct {
			MIMEType string `json:"mimeType"`
			ID       string `json:"id"`
		} `json:"record"`
		Skill struct {
			MIMEType string `json:"mimeType"`
			Starts   string `json:"starts"`
		} `json:"skill"`
	} `json:"resources"`
	Failures []string `json:"failures"`
}

// runNode runs node with args in clientDir, with a home of its own (the
// Inspector keeps a catalog there), and returns its standard output and
// error; a run that does not end in two minutes is killed.
func runNode(t *testing.T, node string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), node, args...)
	cmd.Dir = clientDir
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "NO_COLOR=1")
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := time.AfterFunc(2*time.Minute, func() { _ = cmd.Cancel() })
	defer done.Stop()
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// Real clients take engram as it is: the official TypeScript SDK over
// streamable HTTP and over stdio lists the tools (it refuses a list whose
// schemas it cannot read), calls each with valid arguments (checking each
// structured result against the tool's output schema) and with invalid
// ones (tool errors, never protocol failures), and reads the resources;
// the MCP Inspector's CLI in strict mode finds no error and no warning in
// the tool list.
func TestRealClients(t *testing.T) {
	t.Parallel()
	node := realClients(t)
	e := setup(t)
	proc, err := e.api(acmeKey).CreateRecord(t.Context(), procedureBody("clear build cache", "cache mismatch in build", 3, 0), "")
	require.NoError(t, err)
	bin, err := buildEngram()
	require.NoError(t, err)
	tools := []string{"feedback", "forget", "get_record", "list_procedures", "propose_fact", "recall", "record_audit", "record_history", "remember"}

	for name, args := range map[string][]string{
		"sdk over http":  {"client.mjs", "http", e.url + "/mcp", acmeKey},
		"sdk over stdio": {"client.mjs", "stdio", bin, e.url, acmeKey},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, stderr, err := runNode(t, node, args...)
			var r clientReport
			require.NoError(t, json.Unmarshal([]byte(out), &r), "stdout: %s\nstderr: %s", out, stderr)
			require.Empty(t, r.Failures, "stderr: %s", stderr)
			require.NoError(t, err, stderr)
			t.Logf("@modelcontextprotocol/sdk %s", r.SDK)

			require.Equal(t, map[string]any{"tools": map[string]any{}, "resources": map[string]any{}}, r.Capabilities)
			require.Equal(t, tools, r.Tools)
			for _, tool := range tools {
				v, ok := r.Valid[tool]
				require.True(t, ok, "%s was not called with valid arguments", tool)
				require.False(t, v.IsError, "%s: %s", tool, v.Text)
				require.True(t, v.Structured, tool)
				bad, ok := r.Invalid[tool]
				require.True(t, ok, "%s was not called with invalid arguments", tool)
				require.True(t, bad.IsError, "%s took invalid arguments: %s", tool, bad.Text)
				require.NotEmpty(t, bad.Text, tool)
			}
			require.Contains(t, r.Invalid["recall"].Text, "max_items")
			require.Contains(t, r.Invalid["get_record"].Text, "invalid argument id")
			require.Contains(t, r.Invalid["forget"].Text, "HTTP 404")

			require.Equal(t, []string{"engram://records/{id}", "engram://skills/{id}"}, r.Resources.Templates)
			require.Equal(t, []string{"engram://skills/" + proc.ID.String()}, r.Resources.List)
			require.Equal(t, "application/json", r.Resources.Record.MIMEType)
			require.NotEmpty(t, r.Resources.Record.ID)
			require.Equal(t, "text/markdown", r.Resources.Skill.MIMEType)
			require.Equal(t, "---\n", r.Resources.Skill.Starts)
		})
	}

	// An agent's own key (an executor's) does an agent's work through the
	// real SDK: remember, state a fact, recall it, report it served,
	// forget it; what it remembered is its key's agent's.
	t.Run("sdk as an agent", func(t *testing.T) {
		t.Parallel()
		out, stderr, err := runNode(t, node, "agent.mjs", e.url+"/mcp", execKey, "agent-thread")
		var r struct {
			Steps    []string `json:"steps"`
			Fact     string   `json:"fact"`
			Feedback []string `json:"feedback"`
			Failures []string `json:"failures"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &r), "stdout: %s\nstderr: %s", out, stderr)
		require.Empty(t, r.Failures, "stderr: %s", stderr)
		require.NoError(t, err, stderr)
		require.Equal(t, []string{"remember", "propose_fact", "recall", "feedback", "forget"}, r.Steps)
		fact, err := e.api(acmeKey).GetRecord(t.Context(), uuid.MustParse(r.Fact))
		require.NoError(t, err)
		require.Equal(t, "planner-7", fact.AgentID, "stated as the key's agent")
		require.Equal(t, "retracted", string(fact.Status), "forgotten")
		require.Equal(t, []string{r.Fact}, r.Feedback, "its feedback reached the fact")
	})

	// The Inspector's strict mode exits 6 on an error-severity finding
	// and prints every finding on standard error.
	inspector := filepath.Join("node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
	for name, args := range map[string][]string{
		"inspector over http": {inspector, "--cli", e.url + "/mcp", "--transport", "http",
			"--header", "Authorization: Bearer " + acmeKey, "--method", "tools/list", "--strict"},
		"inspector over stdio": {inspector, "--cli", "-e", "ENGRAM_URL=" + e.url, "-e", "ENGRAM_API_KEY=" + acmeKey,
			"--method", "tools/list", "--strict", bin, "mcp"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, stderr, err := runNode(t, node, args...)
			require.NoError(t, err, "stderr: %s", stderr)
			require.NotContains(t, stderr, "Error:")
			require.NotContains(t, stderr, "Warning:")
			var list struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &list), out)
			var names []string
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
			}
			require.ElementsMatch(t, tools, names)
			require.Empty(t, strings.TrimSpace(stderr), "strict mode found something")
		})
	}
}
