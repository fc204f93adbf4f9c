package revise

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/memory"
)

// The evidence a fact stands on (substrate RFC §7: confidence follows
// evidence count and source authority): the noisy-or of its distinct
// sources' authorities, monotone, capped, and its weight additive.
func TestFactEvidence(t *testing.T) {
	t.Parallel()
	g := Gates{}.withDefaults()
	ev := func(i int) memory.Source { return memory.Source{Kind: "event", Ref: "evt://" + string(rune('a'+i))} }

	c, w := g.factEvidence(nil)
	require.InDelta(t, 0.5, c, 1e-12, "no source: the writer's word, of the unstated authority")
	require.InDelta(t, -math.Log(0.5), w, 1e-12)

	c1, w1 := g.factEvidence([]memory.Source{ev(0)})
	require.InDelta(t, 0.6, c1, 1e-12)
	c2, w2 := g.factEvidence([]memory.Source{ev(0), ev(1)})
	require.InDelta(t, 1-0.4*0.4, c2, 1e-12)
	c3, w3 := g.factEvidence([]memory.Source{ev(0), ev(1), ev(2)})
	require.InDelta(t, 1-0.4*0.4*0.4, c3, 1e-12)
	require.Less(t, c1, c2)
	require.Less(t, c2, c3)
	require.InDelta(t, 2*w1, w2, 1e-12, "weight adds up: two observations weigh twice one")
	require.InDelta(t, 3*w1, w3, 1e-12)

	same, _ := g.factEvidence([]memory.Source{ev(0), ev(0), {Kind: "event", Ref: ev(0).Ref, Hash: "h"}})
	require.Equal(t, c1, same, "a source cited again counts once")

	tool, _ := g.factEvidence([]memory.Source{{Kind: "tool_call", Ref: "call://1"}})
	reasoning, _ := g.factEvidence([]memory.Source{{Kind: SourceReasoning, Ref: "thought://1"}})
	require.Greater(t, tool, c1, "a tool call has more authority than an event")
	require.Less(t, reasoning, c1)
	withWeak, _ := g.factEvidence([]memory.Source{ev(0), {Kind: SourceReasoning, Ref: "thought://1"}})
	require.Greater(t, withWeak, c1, "even a weak source adds")

	var many []memory.Source
	for i := range 40 {
		many = append(many, ev(i))
	}
	cm, wm := g.factEvidence(many)
	require.Equal(t, MaxEvidenceConfidence, cm, "capped")
	require.InDelta(t, -math.Log(1-MaxEvidenceConfidence), wm, 1e-12)
	human, _ := g.factEvidence([]memory.Source{{Kind: "human", Ref: "person://lead"}})
	require.Equal(t, MaxEvidenceConfidence, human, "even a person's word is not certainty")
}

// The policy evidence's comparison: clearly is the configured ratio, and
// two equal observations against one make exactly the default ratio.
func TestOutweighs(t *testing.T) {
	t.Parallel()
	g := Gates{}.withDefaults()
	ev := func(refs ...string) memory.Record {
		var r memory.Record
		for _, ref := range refs {
			r.Provenance.Sources = append(r.Provenance.Sources, memory.Source{Kind: "event", Ref: ref})
		}
		return r
	}
	one, two, three := g.weigh(ev("a")), g.weigh(ev("a", "b")), g.weigh(ev("a", "b", "c"))
	require.True(t, outweighs(two, one, DefaultEvidenceRatio), "2 against 1 is twice the weight")
	require.False(t, outweighs(one, one, DefaultEvidenceRatio), "1 against 1 is comparable")
	require.False(t, outweighs(three, two, DefaultEvidenceRatio), "3 against 2 is comparable at ratio 2")
	require.True(t, outweighs(three, two, 1.5))
	require.False(t, outweighs(one, two, DefaultEvidenceRatio))
	require.Equal(t, "3 source(s) of evidence (weight 2.75) against 1 (weight 0.92)", three.against(one))
	require.Equal(t, one, g.strongest([]memory.Record{ev("x"), ev("y")}))
	require.Equal(t, three, g.strongest([]memory.Record{ev("x"), ev("a", "b", "c"), ev("y", "z")}))
}
