package access_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/access"
	"github.com/engram-dev/engram/memory"
)

var medicalRule = access.Rule{
	Name: "medical-writes-medical", Effect: access.Allow, Ops: []access.Op{access.OpWrite},
	Principal: access.PrincipalMatch{Domains: []string{"medical"}},
	Record:    access.RecordMatch{Tags: []string{"domain:medical"}},
}

// The spec's ABAC example (write-path RFC §12.8.2), as an allow rule:
// medical agents write only records tagged domain:medical.
func ExampleDecide() {
	p := access.Principal{Tenant: "acme", Key: "med", Role: access.Executor, Agent: "med-1", Domains: []string{"medical"}}
	rules := []access.Rule{medicalRule}
	for _, tags := range [][]string{{"domain:medical"}, {"domain:finance"}} {
		d := access.Decide(p, access.OpWrite, access.Target{Layer: memory.Working, Agent: "med-1", Tags: tags}, rules)
		fmt.Printf("%v allowed=%v rule=%q\n", tags, d.Allowed, d.Rule)
	}
	d := access.Decide(p, access.OpWrite, access.Target{Layer: memory.Competence, Agent: "med-1", Tags: []string{"domain:medical"}}, rules)
	fmt.Printf("competence allowed=%v rule=%q\n", d.Allowed, d.Rule)
	// Output:
	// [domain:medical] allowed=true rule=""
	// [domain:finance] allowed=false rule="medical-writes-medical"
	// competence allowed=false rule="role:executor:write:competence"
}

func TestDenyOverridesAllow(t *testing.T) {
	t.Parallel()
	p := access.Principal{Role: access.Curator, Domains: []string{"medical"}}
	rules := []access.Rule{medicalRule, {Name: "no-hyper", Effect: access.Deny, Record: access.RecordMatch{MinSensitivity: memory.Hyper}}}
	tgt := access.Target{Layer: memory.Semantic, Tags: []string{"domain:medical"}, Sensitivity: memory.Hyper}
	d := access.Decide(p, access.OpWrite, tgt, rules)
	require.False(t, d.Allowed)
	require.Equal(t, "no-hyper", d.Rule)
	tgt.Sensitivity = memory.High
	require.True(t, access.Decide(p, access.OpWrite, tgt, rules).Allowed)
	// A rule never grants what the role does not.
	v := access.Principal{Role: access.Verifier, Domains: []string{"medical"}}
	require.Equal(t, "role:verifier:write:semantic", access.Decide(v, access.OpWrite, tgt, rules).Rule)
}

func TestVisible(t *testing.T) {
	t.Parallel()
	p := access.Principal{Role: access.Orchestrator, Clearance: memory.Low, Domains: []string{"finance"}}
	for _, c := range []struct {
		tgt  access.Target
		rule string
	}{
		{access.Target{Layer: memory.Semantic, Sensitivity: memory.Public}, ""},
		{access.Target{Layer: memory.Semantic, Sensitivity: memory.Low, Tags: []string{"domain:finance", "x"}}, ""},
		{access.Target{Layer: memory.Semantic, Sensitivity: memory.Medium}, "clearance:low"},
		{access.Target{Layer: memory.Semantic, Sensitivity: memory.Low, Tags: []string{"domain:finance", "domain:medical"}}, "domain:medical"},
	} {
		d := access.Visible(p, c.tgt, nil)
		require.Equal(t, c.rule == "", d.Allowed, "%+v", c.tgt)
		require.Equal(t, c.rule, d.Rule)
	}
	// No ceiling and no domains restrict nothing.
	require.True(t, access.Visible(access.Principal{Role: access.Curator}, access.Target{Layer: memory.Episodic, Sensitivity: memory.Hyper, Tags: []string{"domain:x"}}, nil).Allowed)
	// An executor reads its own episodes only, and needs an agent to have any.
	e := access.Principal{Role: access.Executor, Agent: "a"}
	require.True(t, access.Visible(e, access.Target{Layer: memory.Episodic, Agent: "a"}, nil).Allowed)
	require.Equal(t, "role:executor:read:own", access.Visible(e, access.Target{Layer: memory.Episodic, Agent: "b"}, nil).Rule)
	require.False(t, access.Visible(access.Principal{Role: access.Executor}, access.Target{Layer: memory.Working}, nil).Allowed)
}

func TestValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, access.Validate([]access.Rule{medicalRule}))
	for _, c := range []struct {
		rule access.Rule
		msg  string
	}{
		{access.Rule{Effect: access.Allow}, "access[0].name: is required"},
		{access.Rule{Name: "r", Effect: "maybe"}, `access[0] (r).effect: "maybe" is not allow or deny`},
		{access.Rule{Name: "r", Effect: access.Deny, Ops: []access.Op{"erase"}}, `access[0] (r).ops: "erase"`},
		{access.Rule{Name: "r", Effect: access.Deny, Principal: access.PrincipalMatch{Roles: []access.Role{"admin"}}}, `access[0] (r).principal.roles: "admin"`},
		{access.Rule{Name: "r", Effect: access.Deny, Record: access.RecordMatch{Types: []memory.Type{"fact"}}}, `access[0] (r).record.types: "fact"`},
		{access.Rule{Name: "r", Effect: access.Deny, Record: access.RecordMatch{MinSensitivity: "secret"}}, `access[0] (r).record.min_sensitivity: "secret"`},
	} {
		require.ErrorContains(t, access.Validate([]access.Rule{c.rule}), c.msg)
	}
	require.ErrorContains(t, access.Validate([]access.Rule{medicalRule, medicalRule}), "repeats an earlier rule's name")
}

func TestBudgets(t *testing.T) {
	t.Parallel()
	var b access.Budgets
	require.Equal(t, 10_000, b.Limit(access.Executor))
	require.Zero(t, b.Limit(access.Curator))
	require.Equal(t, access.DefaultBudgetWindow, b.WindowOrDefault())
	b = access.Budgets{Writes: map[access.Role]int{access.Executor: 5, access.Curator: 100}}
	require.Equal(t, 5, b.Limit(access.Executor))
	require.Equal(t, 100, b.Limit(access.Curator))
	require.Equal(t, 5_000, b.Limit(access.Verifier), "a role not named keeps its default")
	require.ErrorContains(t, access.Budgets{Writes: map[access.Role]int{access.Operator: 1}}.Validate(), "writes.operator")
}

// A refusal names the key's role with its article: "an executor key", "a
// verifier key".
func TestDeniedInWords(t *testing.T) {
	t.Parallel()
	for role, want := range map[access.Role]string{
		access.Executor: "an executor key may not write competence memory",
		access.Verifier: "a verifier key may not write competence memory",
		access.Operator: "an operator key may not write competence memory",
	} {
		d := access.Decide(access.Principal{Role: role, Agent: "a1"}, access.OpWrite, access.Target{Layer: memory.Competence}, nil)
		require.Equal(t, want, d.Detail)
	}
	d := access.Decide(access.Principal{Role: access.Executor, Agent: "a1"}, access.OpWrite, access.Target{Layer: memory.Episodic, Agent: "a2"}, nil)
	require.Equal(t, "an executor key may write only its own agent's episodic memory", d.Detail)
	d = access.Decide(access.Principal{Role: access.Orchestrator}, access.OpPurge, access.Target{Layer: memory.Episodic}, nil)
	require.Equal(t, "an orchestrator key may not purge episodic memory", d.Detail)
}
