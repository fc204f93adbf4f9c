package schemas_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/schemas"
)

// The two example records of substrate RFC §15A.12, verbatim.
const (
	rfcSemanticExample = `{
  "id": "9a2b...",
  "type": "semantic",
  "sensitivity": "low",
  "confidence": 0.9,
  "salience": 0.8,
  "created_at": "2026-01-28T00:00:00Z",
  "updated_at": "2026-01-28T00:00:00Z",
  "lifecycle": {"decay": {"curve": "exponential", "half_life_seconds": 7776000}, "last_reinforced_at": "2026-01-28T00:00:00Z"},
  "provenance": {"sources": [{"kind": "event", "ref": "evt://..."}]},
  "payload": {
    "kind": "semantic",
    "subject": "user",
    "predicate": "prefers_backend_language",
    "object": "go",
    "validity": {"mode": "conditional", "conditions": {"project_kind": "backend_service"}},
    "revision": {"status": "active"}
  }
}`
	rfcCompetenceExample = `{
  "id": "c01d...",
  "type": "competence",
  "sensitivity": "medium",
  "confidence": 0.7,
  "salience": 0.6,
  "created_at": "2026-01-28T00:00:00Z",
  "updated_at": "2026-01-28T00:00:00Z",
  "lifecycle": {"decay": {"curve": "exponential", "half_life_seconds": 2592000}, "last_reinforced_at": "2026-01-28T00:00:00Z"},
  "provenance": {"sources": [{"kind": "tool_call", "ref": "tool://build#123"}]},
  "payload": {
    "kind": "competence",
    "skill_name": "fix_linker_cache_error",
    "triggers": [{"signal": "ld: cache mismatch", "conditions": {"os": "macos"}}],
    "recipe": [
      {"step": "Clear build cache", "tool": "shell", "validation": "cache directory removed"},
      {"step": "Rebuild with clean flags", "tool": "build", "validation": "build succeeds"}
    ],
    "failure_modes": ["If cache directory is locked, retry with elevated permissions"],
    "fallbacks": ["Reinstall toolchain"],
    "version": "1.0"
  }
}`
)

// baseRecord is a valid record without its type and payload.
const baseRecord = `{
  "id": "0190a7b4-7c1e-7b3a-9d2f-3c4e5f6a7b8c",
  "sensitivity": "low",
  "confidence": 0.5,
  "salience": 1,
  "created_at": "2026-01-28T00:00:00Z",
  "updated_at": "2026-01-28T00:00:00Z",
  "lifecycle": {"decay": {"curve": "exponential", "half_life_seconds": 86400}, "last_reinforced_at": "2026-01-28T00:00:00Z"},
  "provenance": {"sources": [{"kind": "event", "ref": "evt://1"}]}
}`

// minimalPayloads holds the smallest valid payload of each memory type.
var minimalPayloads = map[string]string{
	"episodic":   `{"kind": "episodic", "timeline": [{"t": "2026-01-28T00:00:00Z", "event_kind": "tool_call", "ref": "evt://1"}]}`,
	"working":    `{"kind": "working", "thread_id": "thread-1", "state": "executing"}`,
	"semantic":   `{"kind": "semantic", "subject": "user", "predicate": "prefers_editor", "object": "vim", "validity": {"mode": "global"}}`,
	"competence": `{"kind": "competence", "skill_name": "clear_cache", "triggers": [{"signal": "cache mismatch"}], "recipe": [{"step": "rm -rf cache"}]}`,
	"plan_graph": `{"kind": "plan_graph", "plan_id": "setup", "version": "1", "nodes": [{"id": "a", "op": "git_clone"}], "edges": []}`,
}

// validRecord returns a fresh, valid record of memory type typ to modify.
func validRecord(t *testing.T, typ string) map[string]any {
	t.Helper()
	var r, p map[string]any
	require.NoError(t, json.Unmarshal([]byte(baseRecord), &r))
	require.NoError(t, json.Unmarshal([]byte(minimalPayloads[typ]), &p))
	r["type"] = typ
	r["payload"] = p
	return r
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// violations asserts that err is a *schemas.ValidationError and returns its
// violations.
func violations(t *testing.T, err error) []schemas.Violation {
	t.Helper()
	var verr *schemas.ValidationError
	require.ErrorAs(t, err, &verr)
	require.NotEmpty(t, verr.Violations)
	return verr.Violations
}

func pointers(vs []schemas.Violation) []string {
	ps := make([]string, len(vs))
	for i, v := range vs {
		ps[i] = v.Pointer
	}
	return ps
}

// object returns the JSON object at key k of m, for tests to modify.
func object(m map[string]any, k string) map[string]any { return m[k].(map[string]any) }

func TestValidateRecordRFCExamples(t *testing.T) {
	t.Parallel()

	for name, doc := range map[string]string{"semantic": rfcSemanticExample, "competence": rfcCompetenceExample} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, schemas.ValidateRecord([]byte(doc)))
		})
	}
}

func TestValidateRecordMinimal(t *testing.T) {
	t.Parallel()

	for typ := range minimalPayloads {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, schemas.ValidateRecord(marshal(t, validRecord(t, typ))))
		})
	}
}

// TestValidateRecordExtensions checks that the struct variant's fields, added
// as optional properties, are accepted.
func TestValidateRecordExtensions(t *testing.T) {
	t.Parallel()

	docs := map[string]string{
		"episodic": `{"kind": "episodic", "timeline": [], "artifacts": ["file://log"], "tool_graph_ref": "tg://1",
			"tool_graph": [{"tool": "shell", "inputs": ["a"]}], "environment": {"os": "linux"}, "outcome": "partial"}`,
		"working": `{"kind": "working", "thread_id": "thread-1", "state": "done", "task_id": "task-9",
			"active_constraints": ["no network", {"max_cost": 3}], "last_updated": "2026-01-28T10:00:00+02:00"}`,
		"semantic": `{"kind": "semantic", "subject": "user", "predicate": "prefers_editor", "object": {"name": "vim"},
			"validity": {"mode": "timeboxed", "conditions": {"os": "linux", "cores": 8, "remote": false, "runtime": {"name": "node", "major": 20}, "regions": ["eu"]},
				"start": "2026-01-01T00:00:00Z", "end": "2026-12-31T23:59:59.999Z"},
			"evidence": [{"kind": "human", "ref": "chat://7", "hash": "sha256:00", "timestamp": "2026-01-28T00:00:00Z"}],
			"revision_policy": "fork"}`,
		"competence": `{"kind": "competence", "skill_name": "clear_cache", "triggers": [], "recipe": [],
			"required_tools": ["shell"],
			"performance": {"successes": 3, "failures": 0, "last_success_at": "2026-01-28T00:00:00Z", "last_failure_at": "2026-01-27T00:00:00Z"}}`,
		"plan_graph": `{"kind": "plan_graph", "plan_id": "setup", "version": "2", "nodes": [], "edges": [{"from": "a", "to": "b", "kind": "data"}],
			"metrics": {"avg_latency_ms": 1200, "failure_rate": 0.1, "successes": 9, "failures": 1}}`,
	}
	for typ, payload := range docs {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			r := validRecord(t, typ)
			var p map[string]any
			require.NoError(t, json.Unmarshal([]byte(payload), &p))
			r["payload"] = p
			r["status"] = "contested"
			r["version"] = 3
			r["relations"] = []any{
				map[string]any{"predicate": "forked_from", "target_id": "0190a7b4-0000-7000-8000-000000000000", "weight": 1},
				map[string]any{"predicate": "explains", "target_id": "0190a7b4-0000-7000-8000-000000000001"}, // free (§15A.5)
			}
			r["lifecycle"] = map[string]any{
				"decay": map[string]any{
					"curve": "custom", "half_life_seconds": 60, "min_salience": 0.1, "max_age_seconds": 3600,
					"reinforcement_gain": 0.25,
					"points":             []any{map[string]any{"age_seconds": 0, "salience": 1}, map[string]any{"age_seconds": 600, "salience": 0.2}},
				},
				"last_reinforced_at": "2026-01-28T00:00:00Z",
				"pinned":             true,
				"deletion_policy":    "manual_only",
				"expires_at":         "2027-01-28T00:00:00Z",
			}
			r["provenance"] = map[string]any{
				"sources":    []any{map[string]any{"kind": "human", "ref": "chat://1", "timestamp": "2026-01-28T00:00:00Z"}},
				"created_by": "consolidator/1",
			}
			require.NoError(t, schemas.ValidateRecord(marshal(t, r)))
		})
	}
}

func TestValidateRecordViolations(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		typ      string               // memory type of the valid record to start from
		mutate   func(map[string]any) // applied to that record
		raw      string               // the document instead, when set
		pointers []string
		contains string // in the first violation's message
	}{
		{
			name:     "missing required field",
			typ:      "semantic",
			mutate:   func(r map[string]any) { delete(r, "salience") },
			pointers: []string{"/salience"},
			contains: "salience",
		},
		{
			name:     "confidence above 1",
			typ:      "semantic",
			mutate:   func(r map[string]any) { r["confidence"] = 1.5 },
			pointers: []string{"/confidence"},
			contains: "must be <= 1",
		},
		{
			name:     "unknown type",
			typ:      "semantic",
			mutate:   func(r map[string]any) { r["type"] = "procedural" },
			pointers: []string{"/type"},
			contains: `"episodic", "working", "semantic", "competence", "plan_graph"`,
		},
		{
			name: "type and payload kind mismatch",
			typ:  "semantic",
			mutate: func(r map[string]any) {
				var p map[string]any
				_ = json.Unmarshal([]byte(minimalPayloads["episodic"]), &p)
				r["payload"] = p
			},
			pointers: []string{"/payload/kind"},
			contains: `"episodic"`,
		},
		{
			name:     "payload kind unknown",
			typ:      "working",
			mutate:   func(r map[string]any) { object(r, "payload")["kind"] = "scratch" },
			pointers: []string{"/payload/kind"},
			contains: `"working"`,
		},
		{
			name:     "payload missing field of its type",
			typ:      "plan_graph",
			mutate:   func(r map[string]any) { delete(object(r, "payload"), "plan_id") },
			pointers: []string{"/payload/plan_id"},
			contains: "plan_id",
		},
		{
			name:     "payload not an object",
			typ:      "working",
			mutate:   func(r map[string]any) { r["payload"] = "notes" },
			pointers: []string{"/payload"},
			contains: "object",
		},
		{
			name:     "bad date-time",
			typ:      "semantic",
			mutate:   func(r map[string]any) { r["created_at"] = "2026-01-28 00:00:00" },
			pointers: []string{"/created_at"},
			contains: "date-time",
		},
		{
			name: "bad date-time in payload",
			typ:  "episodic",
			mutate: func(r map[string]any) {
				object(r, "payload")["timeline"].([]any)[0].(map[string]any)["t"] = "yesterday"
			},
			pointers: []string{"/payload/timeline/0/t"},
			contains: "date-time",
		},
		{
			name: "semantic condition value is null",
			typ:  "semantic",
			mutate: func(r map[string]any) {
				object(r, "payload")["validity"] = map[string]any{"mode": "conditional", "conditions": map[string]any{"os": nil}}
			},
			pointers: []string{"/payload/validity/conditions/os"},
			contains: "null",
		},
		{
			name: "empty relation predicate",
			typ:  "semantic",
			mutate: func(r map[string]any) {
				r["relations"] = []any{map[string]any{"predicate": "", "target_id": "0190a7b4-0000-7000-8000-000000000000"}}
			},
			pointers: []string{"/relations/0/predicate"},
			contains: "length",
		},
		{
			name:     "empty identifier",
			typ:      "semantic",
			mutate:   func(r map[string]any) { object(r, "payload")["subject"] = "" },
			pointers: []string{"/payload/subject"},
			contains: "length",
		},
		{
			name:     "unknown status",
			typ:      "working",
			mutate:   func(r map[string]any) { r["status"] = "archived" },
			pointers: []string{"/status"},
			contains: "expired",
		},
		{
			name:     "version zero",
			typ:      "working",
			mutate:   func(r map[string]any) { r["version"] = 0 },
			pointers: []string{"/version"},
		},
		{
			name:     "fractional half-life",
			typ:      "working",
			mutate:   func(r map[string]any) { object(object(r, "lifecycle"), "decay")["half_life_seconds"] = 1.5 },
			pointers: []string{"/lifecycle/decay/half_life_seconds"},
			contains: "integer",
		},
		{
			name: "custom curve with no points listed",
			typ:  "working",
			mutate: func(r map[string]any) {
				object(object(r, "lifecycle"), "decay")["curve"] = "custom"
				object(object(r, "lifecycle"), "decay")["points"] = []any{}
			},
			pointers: []string{"/lifecycle/decay/points"},
			contains: "minimum 1",
		},
		{
			name: "negative failure count",
			typ:  "competence",
			mutate: func(r map[string]any) {
				object(r, "payload")["performance"] = map[string]any{"successes": 1, "failures": -1}
			},
			pointers: []string{"/payload/performance/failures"},
		},
		{
			name:     "malformed JSON",
			raw:      `{"id": "x", "type": `,
			pointers: []string{""},
			contains: "malformed JSON",
		},
		{
			name:     "trailing data",
			raw:      `{} {}`,
			pointers: []string{""},
			contains: "malformed JSON",
		},
		{
			name:     "not an object",
			raw:      `[]`,
			pointers: []string{""},
			contains: "object",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := []byte(tt.raw)
			if tt.raw == "" {
				r := validRecord(t, tt.typ)
				tt.mutate(r)
				doc = marshal(t, r)
			}
			vs := violations(t, schemas.ValidateRecord(doc))
			require.Equal(t, tt.pointers, pointers(vs), "violations: %v", vs)
			require.Contains(t, vs[0].Pointer+": "+vs[0].Message, tt.contains)
		})
	}
}

// TestValidateRecordReportsEveryProblemOnce checks that all problems of a
// record are reported, one violation each, without the oneOf's account of
// why the payload is not each of the other payloads.
func TestValidateRecordReportsEveryProblemOnce(t *testing.T) {
	t.Parallel()

	r := validRecord(t, "semantic")
	r["confidence"] = 1.5
	r["sensitivity"] = "secret"
	r["updated_at"] = "not a time"
	p := object(r, "payload")
	delete(p, "subject")
	p["validity"] = map[string]any{"mode": "conditional", "conditions": map[string]any{"os": nil}}

	err := schemas.ValidateRecord(marshal(t, r))
	vs := violations(t, err)
	require.Equal(t, []string{
		"/confidence",
		"/payload/subject",
		"/payload/validity/conditions/os",
		"/sensitivity",
		"/updated_at",
	}, pointers(vs), "violations: %v", vs)
	require.Equal(t, "is required", vs[1].Message)
	for _, v := range vs {
		for _, other := range []string{"episodic", "working", "competence", "plan_graph", "timeline", "thread_id"} {
			require.NotContains(t, v.Message, other)
		}
	}
	require.ErrorContains(t, err, "5 violations: /confidence: must be <= 1; ")
}

// Messages quote nothing from the document: an unknown property's name or
// a malformed value may be a secret, and problem responses carry them.
func TestViolationsQuoteNoInput(t *testing.T) {
	t.Parallel()
	token := "ghp_" + "16C7e42F292c6912E7710c838347Ae178B4a"
	names := []string{token, `it's`, `back\slash "quoted"`, "a/b~c", "é, 'x' not allowed"}
	ev := map[string]any{"kind": "observation", "agent_id": "a", "thread_id": "t", "text": "x", "time": token,
		"tool": map[string]any{"name": "x", token: 1}}
	for _, n := range names {
		ev[n] = 1
	}
	err := schemas.Validate("Event", marshal(t, ev))
	vs := violations(t, err)
	require.Equal(t, []schemas.Violation{
		{Pointer: "/a~1b~0c", Message: "is not a known property"},
		{Pointer: `/back\slash "quoted"`, Message: "is not a known property"},
		{Pointer: "/" + token, Message: "is not a known property"},
		{Pointer: "/it's", Message: "is not a known property"},
		{Pointer: "/time", Message: "is not a valid date-time"},
		{Pointer: "/tool/" + token, Message: "is not a known property"},
		{Pointer: "/é, 'x' not allowed", Message: "is not a known property"},
	}, vs, "the names are in the pointers, which the server redacts, never in the messages")
}

func TestValidatePayload(t *testing.T) {
	t.Parallel()

	t.Run("valid", func(t *testing.T) {
		t.Parallel()
		for typ, payload := range minimalPayloads {
			require.NoError(t, schemas.ValidatePayload(typ, []byte(payload)), typ)
		}
	})

	tests := []struct {
		name     string
		typ      string
		payload  string
		pointers []string
		contains string
	}{
		{
			name:     "pointers are relative to the payload",
			typ:      "semantic",
			payload:  `{"kind": "semantic", "subject": "user", "predicate": "p", "object": null, "validity": {"mode": "always"}}`,
			pointers: []string{"/object", "/validity/mode"},
		},
		{
			name:     "kind mismatch",
			typ:      "competence",
			payload:  minimalPayloads["working"],
			pointers: []string{"/kind"},
			contains: `payload kind "working" does not match type "competence"`,
		},
		{
			name:     "unknown type",
			typ:      "plan",
			payload:  minimalPayloads["plan_graph"],
			pointers: []string{""},
			contains: `unknown memory type "plan"`,
		},
		{
			name:     "malformed JSON",
			typ:      "working",
			payload:  `{"kind": "working",}`,
			pointers: []string{""},
			contains: "malformed JSON",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			vs := violations(t, schemas.ValidatePayload(tt.typ, []byte(tt.payload)))
			require.Equal(t, tt.pointers, pointers(vs), "violations: %v", vs)
			require.Contains(t, vs[0].Pointer+": "+vs[0].Message, tt.contains)
		})
	}
}

func TestRaw(t *testing.T) {
	t.Parallel()

	names := schemas.Names()
	require.Equal(t, []string{
		"CompetencePayload", "EpisodicPayload", "Event", "Lifecycle", "MemoryRecord", "PlanGraphPayload",
		"Provenance", "Relation", "SemanticPayload", "WorkingPayload",
	}, names)
	for _, name := range names {
		b, ok := schemas.Raw(name)
		require.True(t, ok, name)
		var head struct {
			Schema string `json:"$schema"`
			ID     string `json:"$id"`
		}
		require.NoError(t, json.Unmarshal(b, &head), name)
		require.Equal(t, "mem://schemas/"+name, head.ID)
		require.Equal(t, "https://json-schema.org/draft/2020-12/schema", head.Schema)
	}

	_, ok := schemas.Raw("Nope")
	require.False(t, ok)

	// Callers get copies: changing one changes neither the package's nor
	// another caller's.
	a, _ := schemas.Raw("Relation")
	a[0] = 'x'
	b, _ := schemas.Raw("Relation")
	require.Equal(t, byte('{'), b[0])
}

func TestValidationErrorString(t *testing.T) {
	t.Parallel()

	one := &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: "", Message: "malformed JSON: empty document"}}}
	require.Equal(t, "(root): malformed JSON: empty document", one.Error())

	two := &schemas.ValidationError{Violations: []schemas.Violation{
		{Pointer: "/a", Message: "bad"},
		{Pointer: "/b", Message: "worse"},
	}}
	require.Equal(t, "2 violations: /a: bad; /b: worse", two.Error())
}
