package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/client"
	"github.com/engram-dev/engram/mcpserver"
)

// inMemory connects to a server of [mcpserver.New] over an in-memory
// transport, with a client of no engramd: for what calls no API.
func inMemory(t *testing.T) *mcp.ClientSession {
	t.Helper()
	c, err := client.New(client.Config{URL: "http://engramd.invalid", Key: "unused-key-0123456789"})
	require.NoError(t, err)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := mcpserver.New(c, mcpserver.Options{}).Connect(t.Context(), st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "engram-test"}, nil).Connect(t.Context(), ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// listTools lists the tools of a server of [mcpserver.New].
func listTools(t *testing.T) []*mcp.Tool {
	t.Helper()
	res, err := inMemory(t).ListTools(t.Context(), nil)
	require.NoError(t, err)
	return res.Tools
}

// The server advertises what it serves, and nothing more: tools and
// resources, whose lists never announce a change (no session outlives a
// request over HTTP, and the tools never change); no prompts, logging,
// completions or subscriptions, whose methods are not found.
func TestCapabilities(t *testing.T) {
	t.Parallel()
	s := inMemory(t)
	caps, err := json.Marshal(s.InitializeResult().Capabilities)
	require.NoError(t, err)
	require.JSONEq(t, `{"tools":{},"resources":{}}`, string(caps))
	notFound := func(err error) {
		t.Helper()
		var werr *jsonrpc.Error
		require.ErrorAs(t, err, &werr)
		require.Equal(t, int64(jsonrpc.CodeMethodNotFound), werr.Code, werr.Message)
	}
	_, err = s.ListPrompts(t.Context(), nil)
	notFound(err)
	_, err = s.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "any"})
	notFound(err)
	notFound(s.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"})) //nolint:staticcheck // logging is not served: this checks that
	_, err = s.Complete(t.Context(), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "engram://records/{id}"},
		Argument: mcp.CompleteParamsArgument{Name: "id", Value: "0"}})
	notFound(err)
}

// Every tool's input and output schema is a JSON Schema every client
// takes: each subschema an object (never a bare true or false, which the
// TypeScript SDK and the MCP Inspector's strict mode refuse), each with one
// type (a value of several types is an anyOf of single types: clients that
// map schemas onto a single-type dialect drop a type array), so the
// Inspector finds nothing to warn about either. additionalProperties may
// be false: that closes an object, and every validator reads it.
func TestSchemasAreObjectsWithTypes(t *testing.T) {
	t.Parallel()
	for _, tool := range listTools(t) {
		for kind, schema := range map[string]any{"inputSchema": tool.InputSchema, "outputSchema": tool.OutputSchema} {
			b, err := json.Marshal(schema)
			require.NoError(t, err)
			var root any
			require.NoError(t, json.Unmarshal(b, &root))
			for _, problem := range schemaProblems(root, kind, "") {
				t.Errorf("tool %s: %s", tool.Name, problem)
			}
		}
	}
}

// schemaProblems walks a schema and names each subschema that is not an
// object with exactly one type, or an anyOf of such.
func schemaProblems(node any, path, keyword string) []string {
	s, ok := node.(map[string]any)
	if !ok {
		if b, isBool := node.(bool); isBool && keyword == "additionalProperties" && !b {
			return nil
		}
		return []string{fmt.Sprintf("%s: %v is not a schema object", path, node)}
	}
	var out []string
	switch typ := s["type"].(type) {
	case string:
	case nil:
		if _, ok := s["anyOf"]; !ok {
			out = append(out, path+": no type")
		}
	default:
		out = append(out, fmt.Sprintf("%s: type %v is not one type (use anyOf)", path, typ))
	}
	for _, key := range []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"} {
		m, _ := s[key].(map[string]any)
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range m {
				if !yield(k) {
					return
				}
			}
		}) {
			out = append(out, schemaProblems(m[name], path+"."+key+"."+name, key)...)
		}
	}
	for _, key := range []string{"anyOf", "oneOf", "allOf", "prefixItems"} {
		list, _ := s[key].([]any)
		for i, sub := range list {
			out = append(out, schemaProblems(sub, path+"."+key+"["+strconv.Itoa(i)+"]", key)...)
		}
	}
	for _, key := range []string{"items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else"} {
		if sub, ok := s[key]; ok {
			out = append(out, schemaProblems(sub, path+"."+key, key)...)
		}
	}
	return out
}

// bounds finds "N to M" in a description.
var bounds = regexp.MustCompile(`\b(\d+(?:\.\d+)?) to (\d+(?:\.\d+)?)\b`)

// A description that gives bounds has them in the schema too, where the
// SDK enforces them.
func TestSchemasHoldTheBoundsTheyDescribe(t *testing.T) {
	t.Parallel()
	for _, tool := range listTools(t) {
		b, err := json.Marshal(tool.InputSchema)
		require.NoError(t, err)
		var root any
		require.NoError(t, json.Unmarshal(b, &root))
		walkSchemas(root, tool.Name, func(path string, s map[string]any) {
			desc, _ := s["description"].(string)
			m := bounds.FindStringSubmatch(desc)
			if m == nil {
				return
			}
			lo, _ := strconv.ParseFloat(m[1], 64)
			hi, _ := strconv.ParseFloat(m[2], 64)
			require.Equal(t, lo, s["minimum"], "%s: %q", path, desc)
			require.Equal(t, hi, s["maximum"], "%s: %q", path, desc)
		})
	}
}

// walkSchemas calls visit with each object schema under node, through
// properties, items and additionalProperties.
func walkSchemas(node any, path string, visit func(path string, s map[string]any)) {
	s, ok := node.(map[string]any)
	if !ok {
		return
	}
	visit(path, s)
	props, _ := s["properties"].(map[string]any)
	for name, p := range props {
		walkSchemas(p, path+"."+name, visit)
	}
	walkSchemas(s["items"], path+"[]", visit)
	walkSchemas(s["additionalProperties"], path+".*", visit)
}

// The bounds a schema states are enforced: a call outside them is a tool
// error naming the argument, and never reaches the API.
func TestBoundsEnforced(t *testing.T) {
	t.Parallel()
	s := inMemory(t)
	for _, args := range []map[string]any{
		{"task": "x", "max_items": 0}, {"task": "x", "max_items": 201},
		{"task": "x", "max_tokens": 0}, {"task": "x", "max_tokens": 200001}, {"task": ""},
	} {
		res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "recall", Arguments: args})
		require.NoError(t, err)
		require.True(t, res.IsError, "%v", args)
		msg := res.Content[0].(*mcp.TextContent).Text
		require.Contains(t, msg, "validating", "%v: %s", args, msg)
		require.NotContains(t, msg, "engramd", "refused before any call: %s", msg)
	}
}
