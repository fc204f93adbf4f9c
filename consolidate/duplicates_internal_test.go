package consolidate

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/memory"
)

// Two procedures learned for one error met at different paths are
// alternatives, left side by side however alike their texts; another
// error is not.
func TestAlternatives(t *testing.T) {
	t.Parallel()
	proc := func(signal string) memory.Record {
		p, _ := json.Marshal(memory.CompetencePayload{Kind: memory.Competence, SkillName: "fix it",
			Triggers: []memory.Trigger{{Signal: signal}}, Recipe: []memory.Step{{Step: "run make build"}}})
		return memory.Record{Type: memory.Competence, Payload: p}
	}
	a := proc("ld: cache mismatch in /tmp/build-123/obj.o")
	require.True(t, alternatives(a, proc("ld: cache mismatch in /home/ci/b/main.o")))
	require.False(t, alternatives(a, proc("ld: cache mismatch at /home/ci/b/main.o")))
	require.False(t, alternatives(a, proc("")))
}
