package memory_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/schemas/rfc"
)

// A record with every extension engram makes passes the RFC's schemas in
// the RFC's form, names each extension under x-engram, and comes back from
// it equal (substrate RFC §4: a bijective, lossless mapping).
func TestRFCFormIsLosslessAndPassesTheRFCSchemas(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 28, 10, 0, 0, 123000, time.UTC)
	expires := at.Add(time.Hour)
	gain := 0.3
	weight := 0.5
	rec := memory.Record{
		ID: uuid.MustParse("0194a8e0-0000-7000-8000-000000000001"), Type: memory.Competence,
		Status: memory.Contested, Version: 3, Sensitivity: memory.Medium, Confidence: 0.7, Salience: 0.6,
		Scope: "project:web", Tags: []string{"a"}, Visibility: memory.VisibilityAgent, AgentID: "coder", ThreadID: "t1",
		CreatedAt: at, UpdatedAt: at,
		Lifecycle: memory.Lifecycle{
			Decay: memory.Decay{Curve: memory.Custom, HalfLifeSeconds: 60, ReinforcementGain: &gain,
				Points: []memory.DecayPoint{{AgeSeconds: 0, Salience: 1}, {AgeSeconds: 60, Salience: 0.5}}},
			LastReinforcedAt: at, Pinned: true, DeletionPolicy: memory.ManualOnly, ExpiresAt: &expires,
		},
		Provenance: memory.Provenance{CreatedBy: "consolidate", Sources: []memory.Source{
			{Kind: "record", Ref: "record://0194a8e0-0000-7000-8000-000000000002", Timestamp: &at},
			{Kind: "event", Ref: "evt://1", Hash: "abc"},
			{Kind: "human", Ref: "user://jane"},
		}},
		Relations: []memory.Relation{{Predicate: "explains", TargetID: uuid.MustParse("0194a8e0-0000-7000-8000-000000000002"), Weight: &weight}},
		Payload: json.RawMessage(`{"kind":"competence","skill_name":"fix","triggers":[{"signal":"E1 x","template":"e1 <*>","conditions":{"os":{"name":"linux","min":6}}}],` +
			`"recipe":[{"step":"run","tool":"bash"}],"performance":{"successes":3,"failures":1,"recent":"sssf"}}`),
		Flags: []memory.Flag{{Kind: memory.DerivedFromQuarantined, SourceID: uuid.MustParse("0194a8e0-0000-7000-8000-000000000003"), At: at}},
	}
	doc, err := rec.RFC()
	require.NoError(t, err)
	require.NoError(t, rfc.ValidateRecord(doc), string(doc))

	var form map[string]any
	require.NoError(t, json.Unmarshal(doc, &form))
	for _, name := range []string{"status", "version", "visibility", "agent_id", "thread_id", "flags"} {
		require.NotContains(t, form, name, "engram's own members are extensions")
	}
	ext := form[memory.RFCExtensions].(map[string]any)
	require.Equal(t, "record", ext["/provenance/sources/0/kind"])
	require.Equal(t, "human", ext["/provenance/sources/2/kind"])
	require.NotContains(t, ext, "/provenance/sources/1/kind", "an RFC kind stays as it is")
	require.Equal(t, "e1 <*>", ext["/payload/triggers/0/template"])
	require.Equal(t, "sssf", ext["/payload/performance/recent"])
	require.Contains(t, ext, "/lifecycle/decay/points")
	require.Contains(t, ext, "/lifecycle/expires_at")
	require.Equal(t, "contested", ext["/status"])
	sources := form["provenance"].(map[string]any)["sources"].([]any)
	require.Equal(t, "artifact", sources[0].(map[string]any)["kind"])
	require.Equal(t, "observation", sources[2].(map[string]any)["kind"])

	back, err := memory.FromRFC(doc)
	require.NoError(t, err)
	var got memory.Record
	require.NoError(t, json.Unmarshal(back, &got))
	require.JSONEq(t, string(rec.Payload), string(got.Payload))
	got.Payload = rec.Payload
	require.Equal(t, rec, got)
}

// An episode's compression and a fact's evidence map as a procedure's do;
// a record that was never engram's comes in as it is; extensions that name
// nothing in the record are refused with their pointer.
func TestFromRFC(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 28, 0, 0, 0, 0, time.UTC)
	ep := memory.Record{ID: uuid.New(), Type: memory.Episodic, Status: memory.Active, Version: 1, Sensitivity: memory.Low,
		CreatedAt: at, UpdatedAt: at, Tags: []string{},
		Lifecycle:  memory.Lifecycle{Decay: memory.Decay{Curve: memory.Exponential, HalfLifeSeconds: 10}, LastReinforcedAt: at},
		Provenance: memory.Provenance{Sources: []memory.Source{}},
		Payload:    json.RawMessage(`{"kind":"episodic","timeline":[{"t":"2026-01-28T00:00:00Z","event_kind":"error","ref":"evt://1"}],"summary":"s","compressed_at":"2026-01-28T00:00:00Z"}`),
	}
	doc, err := ep.RFC()
	require.NoError(t, err)
	require.NoError(t, rfc.ValidateRecord(doc), string(doc))
	require.Contains(t, string(doc), `"/payload/summary":"s"`)

	fact := ep
	fact.Type = memory.Semantic
	fact.Payload = json.RawMessage(`{"kind":"semantic","subject":"u","predicate":"p","object":1,"validity":{"mode":"global"},"evidence":[{"kind":"reasoning","ref":"r://1"}]}`)
	doc, err = fact.RFC()
	require.NoError(t, err)
	require.Contains(t, string(doc), `"/payload/evidence/0/kind":"reasoning"`)
	require.Contains(t, string(doc), `"evidence":[{"kind":"observation"`)

	plain := `{"id":"x","type":"working","payload":{"kind":"working","thread_id":"t","state":"planning"}}`
	back, err := memory.FromRFC([]byte(plain))
	require.NoError(t, err)
	require.JSONEq(t, plain, string(back))

	for doc, pointer := range map[string]string{
		`{"x-engram": []}`: "/x-engram",
		`{"payload": {}, "x-engram": {"/payload/triggers/3/template": "t"}}`: "/x-engram/~1payload~1triggers~13~1template",
		`{"x-engram": {"status": "active"}}`:                                 "/x-engram/status",
	} {
		_, err := memory.FromRFC([]byte(doc))
		var re *memory.RFCError
		require.ErrorAs(t, err, &re, doc)
		require.Equal(t, pointer, re.Pointer, doc)
	}
}
