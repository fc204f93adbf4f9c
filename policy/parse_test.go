package policy_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/policy"
)

// What the policy fuzzer found: numbers that are not numbers, and rules in
// a second YAML document that were silently ignored.
func TestParseRefusesWhatNoRecordCouldCarry(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ yaml, want string }{
		{"rules: [{name: x, set: {confidence: .nan}}]", "rules[0] (x).set.confidence"},
		{"rules: [{name: x, set: {decay: {curve: linear, half_life_seconds: 60, min_salience: .nan}}}]", "rules[0] (x).set.decay.min_salience"},
		{"rules: [{name: x, set: {decay: {curve: linear, half_life_seconds: 60, reinforcement_gain: .inf}}}]", "rules[0] (x).set.decay.reinforcement_gain"},
		{"rules: [{name: x, set: {decay: {curve: linear, half_life_seconds: 60, reinforcement_gain: -1}}}]", "rules[0] (x).set.decay.reinforcement_gain"},
		{"rules: [{name: x, set: {decay: {curve: custom, half_life_seconds: 60, points: [{age_seconds: 0, salience: 1}, {age_seconds: 9, salience: .nan}]}}}]", "rules[0] (x).set.decay.points[1].salience"},
		{"rules: [{name: x, set: {decay: {curve: custom, half_life_seconds: 60, points: [{age_seconds: -1, salience: 1}]}}}]", "rules[0] (x).set.decay.points[0].age_seconds"},
		{"rules: [{name: a}]\n---\nrules: [{name: b, drop: true}]\n", "one YAML document"},
		{"rules: [{name: a}]\n---\n[", "policy test: yaml"},
	} {
		_, err := policy.Parse([]byte(c.yaml), "test")
		require.ErrorContains(t, err, c.want, c.yaml)
	}
	for _, ok := range []string{"rules: [{name: a}]\n---\n", "---\nrules: [{name: a}]\n...\n", "# nothing\n"} {
		_, err := policy.Parse([]byte(ok), "test")
		require.NoError(t, err, ok)
	}
}

// The access section holds the operator's access rules, validated with the
// rest of the file and named when wrong.
func TestParseAccessRules(t *testing.T) {
	t.Parallel()
	p, err := policy.Parse([]byte(`
access:
  - {name: medical-writes-medical, effect: allow, ops: [write], principal: {domains: [medical]}, record: {tags: ["domain:medical"]}}
`), "test")
	require.NoError(t, err)
	require.Len(t, p.AccessRules(), 1)
	require.Equal(t, "medical-writes-medical", p.AccessRules()[0].Name)
	_, err = policy.Parse([]byte("access: [{name: x, effect: permit}]"), "test")
	require.ErrorContains(t, err, `policy test: access[0] (x).effect: "permit" is not allow or deny`)
	_, err = policy.Parse([]byte("access: [{name: x, effect: deny, who: me}]"), "test")
	require.ErrorContains(t, err, "field who not found")
	require.Empty(t, policy.Default().AccessRules())
}
