package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
)

func TestSummarize(t *testing.T) {
	for _, c := range []struct {
		typ     memory.Type
		payload string
		want    string
	}{
		{memory.Semantic, `{"subject":"svc","predicate":"port","object":8080,"validity":{"conditions":{"os":"linux","env":"prod"}}}`, "svc port = 8080 when env=prod, os=linux"},
		{memory.Semantic, `{"subject":"svc","predicate":"owner","object":"ops team"}`, "svc owner = ops team"},
		{memory.Competence, `{"skill_name":"fix-port","triggers":[{"signal":"EADDRINUSE"}]}`, `procedure fix-port for "EADDRINUSE"`},
		{memory.PlanGraph, `{"plan_id":"p1","intent":"deploy"}`, "plan for deploy (p1)"},
		{memory.Working, `{"thread_id":"t1","state":"active","context_summary":"  two\n lines "}`, "thread t1: active: two lines"},
		{memory.Episodic, `{"outcome":"success","timeline":[{"event_kind":"tool_call"},{"summary":"ran make"},{"summary":"c"},{"summary":"d"},{"summary":"e"}]}`,
			"5 events, success: tool_call; ran make; c"},
		{memory.Episodic, `{"outcome":"failure","timeline":[{},{},{}]}`, "3 events, failure"},
		{memory.Semantic, `not json`, ""},
	} {
		require.Equal(t, c.want, api.Summarize(c.typ, json.RawMessage(c.payload), 200), c.payload)
	}
	long := api.Summarize(memory.Semantic, json.RawMessage(`{"subject":"s","predicate":"p","object":"`+strings.Repeat("é", 100)+`"}`), 20)
	require.Equal(t, 20, len([]rune(long)))
	require.True(t, strings.HasSuffix(long, "…"))
}
