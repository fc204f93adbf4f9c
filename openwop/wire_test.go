package openwop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/openwop"
)

// Every answer the adapter gives these tests — the discovery document,
// entries, lists, get's null, delete's boolean, every error — is checked
// against the OpenWOP spec's schemas (schema/, copied from the spec) by
// ajv, the draft 2020-12 validator the spec names, with ajv-formats: the
// tests collect the answers, and TestMain runs testdata/validate.mjs on all
// of them after the tests, failing the run when one is not valid.
// Alone: make clients && go test -count=1 ./openwop/ (-v prints the count).

// nodeDir is the node package that holds ajv and ajv-formats, beside the
// MCP clients: make clients (scripts/clients.sh) installs them.
const nodeDir = "../mcpserver/testdata/client"

// answer is one answer of the adapter and the schema it must match: a
// name validate.mjs knows.
type answer struct {
	Label  string          `json:"label"`
	Schema string          `json:"schema"`
	Body   json.RawMessage `json:"body"`
}

var wire struct {
	sync.Mutex
	answers []answer
}

// routes matches a request to the adapter's route, which says what its
// success answers.
var routes = sync.OnceValue(func() *http.ServeMux {
	mux := http.NewServeMux()
	for _, rt := range openwop.Routes {
		mux.Handle(rt.Pattern, http.NotFoundHandler())
	}
	return mux
})

// schemaOf is the schema the answer of method on path with status must
// match: the error envelope for every error, else its route's answer
// (RFC 0004 §A and §B).
func schemaOf(method, path string, status int) string {
	if status >= 400 {
		return "error-envelope"
	}
	req, err := http.NewRequest(method, path, nil)
	if err != nil {
		return "unknown"
	}
	_, pattern := routes().Handler(req)
	switch pattern {
	case "GET /.well-known/openwop":
		return "capabilities"
	case "POST /openwop/v1/memory-refs":
		return "memory-ref"
	case "GET /openwop/v1/memory/{memoryRef}/entries":
		return "memory-list"
	case "POST /openwop/v1/memory/{memoryRef}/entries":
		return "memory-entry"
	case "GET /openwop/v1/memory/{memoryRef}/entries/{id}":
		return "memory-entry-or-null"
	case "DELETE /openwop/v1/memory/{memoryRef}/entries/{id}":
		return "delete-result"
	}
	// validate.mjs knows no such schema: a success the tests cannot place
	// fails the run.
	return "unknown"
}

// answered records an answer for validation.
func answered(method, path string, status int, body []byte) {
	a := answer{Label: fmt.Sprintf("%s %s → %d", method, path, status), Schema: schemaOf(method, path, status), Body: body}
	if !json.Valid(body) {
		a.Schema, a.Body = "not JSON", json.RawMessage(fmt.Sprintf("%q", body))
	}
	wire.Lock()
	defer wire.Unlock()
	wire.answers = append(wire.answers, a)
}

// ajvReport is what validate.mjs prints.
type ajvReport struct {
	Ajv       string `json:"ajv"`
	Validated int    `json:"validated"`
	Failures  []struct {
		Label  string   `json:"label"`
		Schema string   `json:"schema"`
		Errors []string `json:"errors"`
	} `json:"failures"`
}

// errNoAjv is why ajv cannot run here: node or ajv is not installed.
var errNoAjv = errors.New("ajv is not installed")

// validateWithAjv runs validate.mjs on answers.
func validateWithAjv(answers []answer) (*ajvReport, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("%w: node is not on PATH", errNoAjv)
	}
	for _, p := range []string{"ajv/package.json", "ajv-formats/package.json"} {
		if _, err := os.Stat(filepath.Join(nodeDir, "node_modules", p)); err != nil {
			return nil, fmt.Errorf("%w in %s (make clients)", errNoAjv, nodeDir)
		}
	}
	f, err := os.CreateTemp("", "openwop-answers-*.json")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	if err := json.NewEncoder(f).Encode(answers); err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	// A run that does not end in two minutes is killed: a guard, not a
	// measurement.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, node, "testdata/validate.mjs", nodeDir, "schema", f.Name())
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("validate.mjs: %w: %s", err, stderr.String())
	}
	var rep ajvReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return nil, fmt.Errorf("validate.mjs printed %q: %w", stdout.String(), err)
	}
	if rep.Validated != len(answers) {
		return nil, fmt.Errorf("validate.mjs validated %d answers of %d", rep.Validated, len(answers))
	}
	return &rep, nil
}

func TestMain(m *testing.M) {
	code := m.Run()
	// Validated even when a test failed: what ajv finds may say why.
	if v := validateAnswers(); v != 0 {
		code = v
	}
	os.Exit(code)
}

// validateAnswers validates every answer the tests collected with ajv: 0
// when each is valid (or ajv is not installed and not required), 1
// otherwise.
func validateAnswers() int {
	wire.Lock()
	answers := wire.answers
	wire.Unlock()
	if len(answers) == 0 {
		return 0
	}
	rep, err := validateWithAjv(answers)
	switch {
	case errors.Is(err, errNoAjv) && os.Getenv("ENGRAM_REQUIRE_CLIENTS") == "":
		fmt.Fprintf(os.Stderr, "openwop: ajv validation of %d answers skipped: %v; run make clients, or set ENGRAM_REQUIRE_CLIENTS to fail instead\n", len(answers), err)
		return 0
	case err != nil:
		fmt.Fprintf(os.Stderr, "--- FAIL: ajv validation of %d OpenWOP answers: %v\n", len(answers), err)
		return 1
	}
	for _, f := range rep.Failures {
		fmt.Fprintf(os.Stderr, "--- FAIL: ajv: %s does not match %s: %v\n", f.Label, f.Schema, f.Errors)
	}
	if len(rep.Failures) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d of %d OpenWOP answers do not match the spec's schemas (ajv %s)\n", len(rep.Failures), rep.Validated, rep.Ajv)
		return 1
	}
	if testing.Verbose() {
		fmt.Printf("ajv %s: the %d OpenWOP answers match the spec's schemas\n", rep.Ajv, rep.Validated)
	}
	return 0
}

// The validation can fail: ajv refuses each answer that breaks its schema
// — the discovery document as it was (nested under capabilities), a
// problem+json body for an error, an entry without createdAt or with a
// createdAt that is no date-time (ajv-formats at work), a list holding
// a field the entry schema does not have, a delete answering a string,
// an unknown schema — and accepts the valid ones.
func TestAjvFindsViolations(t *testing.T) {
	t.Parallel()
	entry := `{"id":"01a1","content":"x","tags":[],"createdAt":"2026-01-28T09:00:00Z"}`
	good := []answer{
		{"discovery", "capabilities", json.RawMessage(`{"protocolVersion":"1.0","supportedEnvelopes":[],"schemaVersions":{},"limits":{"clarificationRounds":0,"schemaRounds":0,"envelopesPerTurn":0},"agents":{"memoryBackends":["long-term"]},"memory":{"supported":true,"maxEntrySizeBytes":32768,"ttlSupported":true}}`)},
		{"error", "error-envelope", json.RawMessage(`{"error":"not_found","message":"no","details":{"field":"x"}}`)},
		{"entry", "memory-entry", json.RawMessage(entry)},
		{"list", "memory-list", json.RawMessage(`[` + entry + `]`)},
		{"null", "memory-entry-or-null", json.RawMessage(`null`)},
		{"got", "memory-entry-or-null", json.RawMessage(entry)},
		{"deleted", "delete-result", json.RawMessage(`false`)},
		{"ref", "memory-ref", json.RawMessage(`{"memoryRef":"mem_x"}`)},
	}
	bad := []answer{
		{"nested discovery", "capabilities", json.RawMessage(`{"capabilities":{"agents":{"memoryBackends":["long-term"]},"memory":{"supported":true,"maxEntrySizeBytes":32768,"ttlSupported":true}}}`)},
		{"longTerm backend", "capabilities", json.RawMessage(`{"protocolVersion":"1.0","supportedEnvelopes":[],"schemaVersions":{},"limits":{"clarificationRounds":0,"schemaRounds":0,"envelopesPerTurn":0},"agents":{"memoryBackends":["longTerm"]}}`)},
		{"problem", "error-envelope", json.RawMessage(`{"type":"urn:engram:problem:not-found","title":"Not found","status":404,"detail":"no such endpoint"}`)},
		{"empty message", "error-envelope", json.RawMessage(`{"error":"not_found","message":""}`)},
		{"no createdAt", "memory-entry", json.RawMessage(`{"id":"01a1","content":"x","tags":[]}`)},
		{"bad createdAt", "memory-entry", json.RawMessage(`{"id":"01a1","content":"x","tags":[],"createdAt":"yesterday"}`)},
		{"list with a stray field", "memory-list", json.RawMessage(`[{"id":"01a1","content":"x","tags":[],"createdAt":"2026-01-28T09:00:00Z","agentId":"p"}]`)},
		{"empty object for null", "memory-entry-or-null", json.RawMessage(`{}`)},
		{"string for a boolean", "delete-result", json.RawMessage(`"true"`)},
		{"unknown schema", "unknown", json.RawMessage(`{}`)},
	}
	rep, err := validateWithAjv(append(good, bad...))
	if errors.Is(err, errNoAjv) {
		if os.Getenv("ENGRAM_REQUIRE_CLIENTS") != "" {
			t.Fatalf("ajv required (ENGRAM_REQUIRE_CLIENTS): %v", err)
		}
		t.Skipf("%v; run make clients, or set ENGRAM_REQUIRE_CLIENTS to fail instead", err)
	}
	require.NoError(t, err)
	var failed []string
	for _, f := range rep.Failures {
		failed = append(failed, f.Label)
		require.NotEmpty(t, f.Errors, f.Label)
	}
	var want []string
	for _, a := range bad {
		want = append(want, a.Label)
	}
	require.Equal(t, want, failed)
}

// The schemas in schema/ are the spec's, unchanged: compared with the spec
// bundle beside the repository (../shared/spec/openwop) when it is there.
func TestSchemasAreTheSpecs(t *testing.T) {
	t.Parallel()
	const spec = "../../shared/spec/openwop"
	files, err := filepath.Glob(filepath.Join(spec, "*.schema.json"))
	require.NoError(t, err)
	if len(files) == 0 {
		t.Skipf("no spec bundle at %s", spec)
	}
	for _, f := range files {
		want, err := os.ReadFile(f)
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join("schema", filepath.Base(f)))
		require.NoError(t, err, "schema/ lacks the spec's %s", filepath.Base(f))
		require.Equal(t, string(want), string(got), "schema/%s differs from the spec's: copy it again", filepath.Base(f))
	}
}
