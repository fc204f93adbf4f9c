package memory

import "maps"

// Authority is how much a source of evidence is worth, by its kind, in
// [0, 1] (write-path RFC §12.2.3: "source authority weight"; §12.4.3). It
// is one table: the write path's configured one, by which the gates weigh
// a write's evidence and retrieval ranks a record's provenance (§12.4.6),
// so that the two never disagree on what a source is worth.
type Authority struct {
	// Kinds is each source kind's authority; a kind it does not name
	// counts for nothing.
	Kinds map[string]float64
	// Unstated is the authority of a record that cites no evidence (the
	// writer's own word).
	Unstated float64
}

// DefaultAuthority is the built-in table: a person's word highest, then an
// outcome, a tool call or an artifact, an event or an observation, another
// record, and the writing agent's own reasoning lowest; a record that cites
// nothing stands on its writer's word, 0.5.
func DefaultAuthority() Authority {
	return Authority{
		Kinds: map[string]float64{
			"human": 1, "outcome": 0.9, "tool_call": 0.8, "artifact": 0.8,
			"observation": 0.6, "event": 0.6, "record": 0.5, "reasoning": 0.3,
		},
		Unstated: 0.5,
	}
}

// Clone returns a copy of a that shares nothing with it.
func (a Authority) Clone() Authority {
	a.Kinds = maps.Clone(a.Kinds)
	return a
}

// Of is the authority of a source kind.
func (a Authority) Of(kind string) float64 { return a.Kinds[kind] }

// Best is the highest authority among srcs (write-path RFC §12.4.6:
// authority(m) = max over its evidence), the unstated authority when it
// cites none.
func (a Authority) Best(srcs []Source) float64 {
	if len(srcs) == 0 {
		return a.Unstated
	}
	best := 0.0
	for _, s := range srcs {
		best = max(best, a.Of(s.Kind))
	}
	return best
}
