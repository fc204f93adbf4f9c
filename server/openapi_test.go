package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/eval"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/openintent"
	"github.com/engram-dev/engram/openwop"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/store"
)

// revisionOps are the custom methods served by POST /v1/records/{idop};
// the document gives each its own path, /v1/records/{id}:<op>.
var revisionOps = []string{"supersede", "fork", "contest", "retract", "rollback", "quarantine", "release", "append", "purge", "restore", "pin", "unpin", "reclassify", "annotate"}

// publicRoutes are the endpoints New registers outside routes(), which need
// no API key.
var publicRoutes = []string{"GET /healthz", "GET /readyz", "GET /metrics", "GET /v1/openapi.json", "GET /console/eval.json"}

// adapterRoutes are the endpoints of the protocol adapters New mounts
// outside routes(), and keyless those of them that need no API key.
func adapterRoutes() (all, keyless []string) {
	for _, rt := range openwop.Routes {
		all = append(all, rt.Pattern)
		if !rt.NeedsKey {
			keyless = append(keyless, rt.Pattern)
		}
	}
	// OpenIntent memory: every route takes the caller's key but its
	// discovery document.
	all = append(all, openintent.Routes...)
	all = append(all, openintent.DiscoveryRoute)
	keyless = append(keyless, openintent.DiscoveryRoute)
	all = slices.AppendSeq(all, maps.Keys(adapterRoles))
	return all, keyless
}

// adapterRoles are the roles of the adapters' routes that New
// authenticates like routes() (the MCP server's).
var adapterRoles = map[string][]Role{"POST /mcp": tenantRoles}

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

type openAPIDoc struct {
	OpenAPI    string                                `json:"openapi"`
	Security   []map[string][]string                 `json:"security"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas         map[string]json.RawMessage `json:"schemas"`
		SecuritySchemes map[string]struct {
			Type   string `json:"type"`
			Scheme string `json:"scheme"`
		} `json:"securitySchemes"`
	} `json:"components"`
}

type openAPIOperation struct {
	OperationID string                     `json:"operationId"`
	Summary     string                     `json:"summary"`
	Description string                     `json:"description"`
	Security    *[]map[string][]string     `json:"security"`
	Parameters  []json.RawMessage          `json:"parameters"`
	Responses   map[string]json.RawMessage `json:"responses"`
	Roles       []Role                     `json:"x-engram-roles"`
}

// operations returns every operation of the document by "METHOD path", as
// route patterns are written.
func (d openAPIDoc) operations(t *testing.T) map[string]openAPIOperation {
	t.Helper()
	ops := map[string]openAPIOperation{}
	for path, item := range d.Paths {
		for method, raw := range item {
			if !slices.Contains(httpMethods, method) {
				continue
			}
			var op openAPIOperation
			require.NoError(t, json.Unmarshal(raw, &op), "%s %s", method, path)
			ops[strings.ToUpper(method)+" "+path] = op
		}
	}
	return ops
}

func parseOpenAPI(t *testing.T, b []byte) openAPIDoc {
	t.Helper()
	var d openAPIDoc
	require.NoError(t, json.Unmarshal(b, &d), "server/openapi.json is not valid JSON")
	return d
}

func TestOpenAPIIsOpenAPI31(t *testing.T) {
	t.Parallel()
	d := parseOpenAPI(t, OpenAPI)
	require.Regexp(t, `^3\.1\.\d+$`, d.OpenAPI)
	require.Equal(t, "http", d.Components.SecuritySchemes["bearerAuth"].Type)
	require.Equal(t, "bearer", d.Components.SecuritySchemes["bearerAuth"].Scheme)

	var compact, indented bytes.Buffer
	require.NoError(t, json.Compact(&compact, OpenAPI))
	require.NoError(t, json.Indent(&indented, compact.Bytes(), "", "  "))
	indented.WriteByte('\n')
	require.Equal(t, indented.String(), string(OpenAPI), "server/openapi.json must be indented with 2 spaces, as json.Indent does")
}

// documented is the operations the document gives route: its pattern, or
// for {idop} and {nameop} (the custom methods) a path for each method.
func (rt route) documented() []string {
	if rt.pattern == "POST /v1/reviews/{idop}" {
		return []string{"POST /v1/reviews/{id}:approve", "POST /v1/reviews/{id}:reject"}
	}
	if rt.pattern == "POST /v1/leases/{idop}" {
		return []string{"POST /v1/leases/{id}:renew", "POST /v1/leases/{id}:release"}
	}
	if prefix, ok := strings.CutSuffix(rt.pattern, "/{idop}"); ok {
		var ops []string
		for _, op := range revisionOps {
			ops = append(ops, prefix+"/{id}:"+op)
		}
		return ops
	}
	if rt.pattern == "POST /v1/keys/{nameop}" {
		return []string{"POST /v1/keys/{name}:revoke"}
	}
	if prefix, ok := strings.CutSuffix(rt.pattern, "/{nameop}"); ok {
		return []string{prefix + "/{name}:run"}
	}
	return []string{rt.pattern}
}

// Every route is documented, with the custom methods of {idop} (and
// {nameop}, the jobs' run) as paths of their own, and every documented
// operation is a route.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	t.Parallel()
	want, _ := adapterRoutes()
	want = append(want, publicRoutes...)
	for _, rt := range (&Server{}).routes() {
		want = append(want, rt.documented()...)
	}
	got := slices.Collect(maps.Keys(parseOpenAPI(t, OpenAPI).operations(t)))
	require.ElementsMatch(t, want, got, "documented operations (right) must be exactly the server's routes (left)")
}

// Each operation names the roles whose keys may call it (x-engram-roles),
// as its route admits them; one that refuses a role documents the 403, and
// the bearer scheme explains the two kinds of key.
func TestOpenAPIRoles(t *testing.T) {
	t.Parallel()
	d := parseOpenAPI(t, OpenAPI)
	ops := d.operations(t)
	for _, rt := range (&Server{}).routes() {
		for _, name := range rt.documented() {
			op := ops[name]
			require.Equal(t, rt.roles, op.Roles, "%s: x-engram-roles", name)
			var ref struct {
				Ref string `json:"$ref"`
			}
			forbidden, ok := op.Responses["403"]
			switch {
			case slices.Equal(rt.roles, anyRole):
				require.False(t, ok, "%s admits every key but documents a 403", name)
				continue
			case slices.Equal(rt.roles, operatorRoles):
				require.True(t, ok, "%s is operator-only but documents no 403", name)
				require.NoError(t, json.Unmarshal(forbidden, &ref))
				require.Equal(t, "#/components/responses/OperatorOnly", ref.Ref, name)
				require.Contains(t, op.Description, "operator key", name)
			default:
				require.True(t, ok, "%s refuses operator keys but documents no 403", name)
				require.NoError(t, json.Unmarshal(forbidden, &ref))
				require.Equal(t, "#/components/responses/TenantOnly", ref.Ref, name)
			}
		}
	}
	for _, name := range publicRoutes {
		require.Nil(t, ops[name].Roles, "%s needs no key", name)
	}
	for name, roles := range adapterRoles {
		require.Equal(t, roles, ops[name].Roles, "%s: x-engram-roles", name)
	}
	var doc struct {
		Components struct {
			SecuritySchemes map[string]struct {
				Description string `json:"description"`
			} `json:"securitySchemes"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(OpenAPI, &doc))
	desc := doc.Components.SecuritySchemes["bearerAuth"].Description
	require.Contains(t, desc, "operator key")
	require.Contains(t, desc, "x-engram-roles")
}

// Every operation says what it does and what it answers: a success, and a
// 401 when it needs an API key, which every route of routes() does.
func TestOpenAPIOperations(t *testing.T) {
	t.Parallel()
	d := parseOpenAPI(t, OpenAPI)
	_, keyless := adapterRoutes()
	keyless = append(keyless, publicRoutes...)
	ids := map[string]string{}
	for name, op := range d.operations(t) {
		require.NotEmpty(t, op.OperationID, name)
		require.NotContains(t, ids, op.OperationID, "%s and %s share an operationId", name, ids[op.OperationID])
		ids[op.OperationID] = name
		require.NotEmpty(t, op.Summary, name)
		require.NotEmpty(t, op.Description, name)

		require.True(t, slices.ContainsFunc(slices.Collect(maps.Keys(op.Responses)), func(code string) bool {
			return strings.HasPrefix(code, "2")
		}), "%s documents no success response", name)
		for code := range op.Responses {
			n, err := strconv.Atoi(code)
			require.NoError(t, err, "%s: response %q is not a status code", name, code)
			require.True(t, n >= 200 && n < 600, "%s: response %d", name, n)
		}

		security := d.Security
		if op.Security != nil {
			security = *op.Security
		}
		authenticated := len(security) > 0
		require.Equal(t, !slices.Contains(keyless, name), authenticated, "%s: every route but %v needs an API key", name, keyless)
		for _, req := range security {
			for scheme := range req {
				require.Contains(t, d.Components.SecuritySchemes, scheme, "%s: security names an undeclared scheme", name)
			}
		}
		if authenticated {
			_, ok := op.Responses["401"]
			require.True(t, ok, "%s needs an API key but documents no 401", name)
		}
	}
}

// Each path template's variables are declared as path parameters, on the
// path item or the operation.
func TestOpenAPIPathParameters(t *testing.T) {
	t.Parallel()
	var d struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Parameters map[string]struct {
				Name string `json:"name"`
				In   string `json:"in"`
			} `json:"parameters"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(OpenAPI, &d))
	type param struct {
		Ref  string `json:"$ref"`
		Name string `json:"name"`
		In   string `json:"in"`
	}
	names := func(raw json.RawMessage) []string {
		if raw == nil {
			return nil
		}
		var ps []param
		require.NoError(t, json.Unmarshal(raw, &ps))
		var out []string
		for _, p := range ps {
			if name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/"); ok {
				c, ok := d.Components.Parameters[name]
				require.True(t, ok, "no parameter %s", p.Ref)
				p.Name, p.In = c.Name, c.In
			}
			if p.In == "path" {
				out = append(out, p.Name)
			}
		}
		return out
	}
	variable := regexp.MustCompile(`\{([^}]+)\}`)
	for path, item := range d.Paths {
		var want []string
		for _, m := range variable.FindAllStringSubmatch(path, -1) {
			want = append(want, m[1])
		}
		for method, raw := range item {
			if !slices.Contains(httpMethods, method) {
				continue
			}
			var op struct {
				Parameters json.RawMessage `json:"parameters"`
			}
			require.NoError(t, json.Unmarshal(raw, &op))
			got := append(names(item["parameters"]), names(op.Parameters)...)
			require.ElementsMatch(t, want, got, "%s %s: path parameters", method, path)
		}
	}
}

// The canonical JSON Schemas are included verbatim: the copies in
// components.schemas cannot drift from the files in schemas/.
func TestOpenAPIEmbedsCanonicalSchemas(t *testing.T) {
	t.Parallel()
	d := parseOpenAPI(t, OpenAPI)
	names := schemas.Names()
	require.NotEmpty(t, names)
	for _, name := range names {
		raw, ok := schemas.Raw(name)
		require.True(t, ok, name)
		got, ok := d.Components.Schemas[name]
		require.True(t, ok, "components.schemas has no copy of the canonical schema %s", name)
		require.JSONEq(t, string(raw), string(got), "components.schemas.%s differs from the canonical schema: copy schemas/ into server/openapi.json again", name)
	}
}

// The OpenWOP MemoryEntry schema is the spec's, verbatim.
func TestOpenAPIEmbedsOpenWOPSchema(t *testing.T) {
	t.Parallel()
	d := parseOpenAPI(t, OpenAPI)
	require.JSONEq(t, string(openwop.EntrySchema()), string(d.Components.Schemas["OpenWOPMemoryEntry"]))
}

// The document describes the answer's types as the server writes them: a
// field of a type is a property of its schema, and a property a field.
func TestOpenAPIDescribesTheAnswerTypes(t *testing.T) {
	t.Parallel()
	d := parseOpenAPI(t, OpenAPI)
	for name, typ := range map[string]reflect.Type{
		"Why":            reflect.TypeFor[api.Why](),
		"RetrievalItem":  reflect.TypeFor[api.Item](),
		"RetrieveResult": reflect.TypeFor[api.RetrieveResult](),
		"Lease":          reflect.TypeFor[api.Lease](),
		"LeaseRequest":   reflect.TypeFor[api.LeaseRequest](),
		// Compliance (write-path RFC §12.10.5).
		"ComplianceReport":     reflect.TypeFor[api.ComplianceReport](),
		"RetentionClassReport": reflect.TypeFor[api.RetentionClassReport](),
		"RetentionTenant":      reflect.TypeFor[api.RetentionTenant](),
		"ComplianceViolation":  reflect.TypeFor[api.ComplianceViolation](),
		"ErasureReport":        reflect.TypeFor[api.ErasureReport](),
		"PendingErasure":       reflect.TypeFor[api.PendingErasure](),
		// The console's health page (substrate RFC §15.10).
		"HealthStats":  reflect.TypeFor[api.HealthStats](),
		"HealthBucket": reflect.TypeFor[api.HealthBucket](),
		"HealthPart":   reflect.TypeFor[api.HealthPart](),
		"Tenants":      reflect.TypeFor[api.Tenants](),
		// OpenIntent memory (issue 15).
		"OpenIntentEntry":     reflect.TypeFor[openintent.Entry](),
		"OpenIntentDiscovery": reflect.TypeFor[openintent.Discovery](),
		// One transaction of several revisions (substrate RFC §15.7).
		"BatchRequest":   reflect.TypeFor[api.BatchRequest](),
		"BatchOperation": reflect.TypeFor[api.BatchOperation](),
		"BatchResult":    reflect.TypeFor[api.BatchResult](),
		// The console's evaluation curves (engram-eval's curve.json).
		"EvalCurves":     reflect.TypeFor[eval.Curves](),
		"EvalAgentCurve": reflect.TypeFor[eval.AgentCurve](),
		"EvalPoint":      reflect.TypeFor[eval.Point](),
		// Whom a key speaks for, and the OpenWOP discovery document.
		"Whoami":              reflect.TypeFor[api.Whoami](),
		"OpenWOPCapabilities": reflect.TypeFor[openwop.Capabilities](),
	} {
		raw, ok := d.Components.Schemas[name]
		require.True(t, ok, "components.schemas has no %s", name)
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		require.NoError(t, json.Unmarshal(raw, &schema), name)
		var fields []string
		for f := range typ.Fields() {
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if tag != "-" && tag != "" {
				fields = append(fields, tag)
			}
		}
		require.ElementsMatch(t, fields, slices.Collect(maps.Keys(schema.Properties)), "components.schemas.%s and the fields of %s", name, typ)
	}
}

// Every $ref resolves: local ones against the document (or, inside an
// embedded schema, against that schema), mem://schemas/ ones against the
// embedded schema with that $id.
func TestOpenAPIReferencesResolve(t *testing.T) {
	t.Parallel()
	var root any
	require.NoError(t, json.Unmarshal(OpenAPI, &root))
	byID := map[string]any{}
	var collect func(v any)
	collect = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if id, ok := v["$id"].(string); ok {
				byID[id] = v
			}
			for _, c := range v {
				collect(c)
			}
		case []any:
			for _, c := range v {
				collect(c)
			}
		}
	}
	collect(root)
	require.Contains(t, byID, "mem://schemas/MemoryRecord")

	refs := 0
	var walk func(v, base any, at string)
	walk = func(v, base any, at string) {
		switch v := v.(type) {
		case map[string]any:
			if _, ok := v["$id"].(string); ok {
				base = v
			}
			if ref, ok := v["$ref"].(string); ok {
				refs++
				resource, fragment, _ := strings.Cut(ref, "#")
				target := base
				if resource != "" {
					target, ok = byID[resource]
					require.True(t, ok, "%s: $ref %q names no schema of this document", at, ref)
				}
				_, err := resolvePointer(target, fragment)
				require.NoError(t, err, "%s: $ref %q", at, ref)
			}
			for k, c := range v {
				walk(c, base, at+"/"+k)
			}
		case []any:
			for i, c := range v {
				walk(c, base, at+"/"+strconv.Itoa(i))
			}
		}
	}
	walk(root, root, "")
	require.Greater(t, refs, 50)
}

func resolvePointer(v any, pointer string) (any, error) {
	if pointer == "" {
		return v, nil
	}
	if !strings.HasPrefix(pointer, "/") {
		return nil, fmt.Errorf("JSON pointer %q leads nowhere", pointer)
	}
	for _, tok := range strings.Split(pointer[1:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch c := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = c[tok]; !ok {
				return nil, fmt.Errorf("JSON pointer %q leads nowhere", pointer)
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("JSON pointer %q leads nowhere", pointer)
			}
			v = c[i]
		default:
			return nil, fmt.Errorf("JSON pointer %q leads nowhere", pointer)
		}
	}
	return v, nil
}

// The running server serves the document, without an API key.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	db := pgtest.NewSchema(t)
	wr := revise.New(db.Pool, revise.Config{})
	require.NoError(t, store.EnsureTenant(t.Context(), db.Pool, "acme"))
	srv := httptest.NewServer(New(Config{
		DB: db.Pool, Writer: wr,
		Keys:  []Key{{Tenant: "acme", Name: "test", Secret: "0123456789abcdef", Role: RoleCurator}},
		Ready: db.Pool.Ping,
	}))
	t.Cleanup(srv.Close)

	res, err := http.Get(srv.URL + "/v1/openapi.json")
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "application/json", res.Header.Get("Content-Type"))
	require.Equal(t, OpenAPI, body)
	d := parseOpenAPI(t, body)
	require.Regexp(t, `^3\.1\.\d+$`, d.OpenAPI)
	require.Contains(t, d.Paths, "/v1/records/{id}:supersede")
}

// Every write route takes an Idempotency-Key (write-path RFC
// §12.1.6–12.1.7), and the document says so on each, but the stream's,
// which refuses it; and a key a route refuses is none it documents.
func TestOpenAPIIdempotencyKey(t *testing.T) {
	t.Parallel()
	ops := parseOpenAPI(t, OpenAPI).operations(t)
	ref := `{"$ref":"#/components/parameters/IdempotencyKey"}`
	for _, rt := range (&Server{}).routes() {
		method, _, _ := strings.Cut(rt.pattern, " ")
		for _, name := range rt.documented() {
			var has bool
			for _, p := range ops[name].Parameters {
				var c bytes.Buffer
				require.NoError(t, json.Compact(&c, p))
				has = has || c.String() == ref
			}
			want := method != http.MethodGet && !rt.stream
			require.Equal(t, want, has, "%s: the Idempotency-Key parameter", name)
		}
	}
}
