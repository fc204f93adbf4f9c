package policy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/engram-dev/engram/memory"
)

// FuzzParse feeds the policy-file parser anything. It answers the same way
// twice; a refusal names the file; an accepted file holds one YAML
// document, re-encodes to a file that parses to the same policy, and every
// decision it makes is one a record can carry: JSON, a confidence in
// [0, 1], a known sensitivity and visibility.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"",
		"secrets: {literals: [\"hunter2-internal\"], on_secret: reject}",
		"rules:\n  - name: prod\n    match: {environment: {env: prod}, kind: [tool_call]}\n    set: {sensitivity: high, scope: 'project:infra', visibility: agent}\n",
		"rules: [{name: facts, match: {kind: [fact], content: '(?i)rumou?r'}, set: {type: episodic, confidence: 0.1}}]",
		"rules: [{name: quiet, match: {tags: [heartbeat]}, drop: true}]",
		"rules: [{name: d, set: {decay: {curve: exponential, half_life_seconds: 60, min_salience: 0.2, reinforcement_gain: 0.1}}}]",
		"rules: [{name: nan, set: {confidence: .nan}}]",
		"rules: [{name: a}]\n---\nrules: [{name: b, drop: true}]\n",
		"rules: [{name: x, colour: red}]", "rules: {name: x}", "secrets: [", "\t",
	} {
		f.Add([]byte(seed))
	}
	events := []memory.Event{
		{Kind: memory.UserInput, AgentID: "a", ThreadID: "t", Text: "hello rumour"},
		{Kind: memory.ToolCall, AgentID: "a", ThreadID: "t", Tool: &memory.EventTool{Name: "deploy"}, Environment: map[string]any{"env": "prod"}},
		{Kind: memory.FactEvent, AgentID: "b", ThreadID: "t", Tags: []string{"heartbeat"}, Fact: &memory.EventFact{Subject: "s", Predicate: "p"}},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, "fuzz.yaml")
		_, err2 := Parse(data, "fuzz.yaml")
		if err != nil {
			require.Error(t, err2)
			require.Equal(t, err.Error(), err2.Error())
			require.True(t, strings.HasPrefix(err.Error(), "policy fuzz.yaml: "), err.Error())
			return
		}
		require.NoError(t, err2)

		docs := 0 // that say something: an empty one after the first is harmless
		dec := yaml.NewDecoder(strings.NewReader(string(data)))
		for range 3 {
			var n yaml.Node
			if dec.Decode(&n) != nil {
				break
			}
			if len(n.Content) > 0 && n.Content[0].Tag != "!!null" {
				docs++
			}
		}
		require.LessOrEqual(t, docs, 1, "a file of several documents was accepted")

		out, err := yaml.Marshal(p.file)
		require.NoError(t, err)
		q, err := Parse(out, "again")
		require.NoError(t, err, "%s", out)
		back, err := yaml.Marshal(q.file)
		require.NoError(t, err)
		require.Equal(t, string(out), string(back))

		for _, ev := range events {
			for _, found := range []memory.Sensitivity{"", memory.High} {
				d := p.Classify(ev, found)
				dj, err := json.Marshal(d)
				require.NoError(t, err)
				qj, err := json.Marshal(q.Classify(ev, found))
				require.NoError(t, err)
				require.JSONEq(t, string(dj), string(qj), "the re-encoded policy decides the same")
				require.True(t, d.Confidence >= 0 && d.Confidence <= 1, "confidence %v", d.Confidence)
				require.True(t, d.Sensitivity.Valid())
				require.Contains(t, []string{VisibilityTenant, VisibilityAgent, VisibilityThread}, d.Visibility)
				if found != "" {
					require.Equal(t, found, d.Sensitivity.Max(found), "never below what redaction found")
				}
			}
		}
	})
}
