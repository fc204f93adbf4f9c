package decay_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/memory"
)

// Every bad configuration is refused, naming the field, as a file path and
// as a JSON pointer.
func TestConfigRefusesBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, doc, err, pointer string
	}{
		{"unknown curve", `profiles: {semantic: {curve: cubic}}`,
			`decay.profiles.semantic.curve: "cubic" is not exponential, linear or custom`, "/profiles/semantic/curve"},
		{"zero half-life", `profiles: {episodic: {half_life: 0s}}`,
			"decay.profiles.episodic.half_life: must be positive", "/profiles/episodic/half_life"},
		{"negative half-life", `profiles: {episodic: {half_life: -2h}}`,
			"decay.profiles.episodic.half_life: must be positive", "/profiles/episodic/half_life"},
		{"half-life not a duration", `profiles: {episodic: {half_life: soon}}`,
			`decay.profiles.episodic.half_life: "soon" is not a duration such as 90d or 36h`, "/profiles/episodic/half_life"},
		{"floor above 1", `profiles: {competence: {floor: 1.5}}`,
			"decay.profiles.competence.floor: 1.5 is outside [0, 1]", "/profiles/competence/floor"},
		{"floor below 0", `profiles: {competence: {floor: -0.1}}`,
			"decay.profiles.competence.floor: -0.1 is outside [0, 1]", "/profiles/competence/floor"},
		{"floor not a number", `profiles: {competence: {floor: high}}`,
			"decay.profiles.competence.floor: must be a number", "/profiles/competence/floor"},
		{"custom without points", `profiles: {semantic: {curve: custom}}`,
			"decay.profiles.semantic.points: a custom curve needs at least one point", "/profiles/semantic/points"},
		{"points out of order", `profiles: {semantic: {curve: custom, points: [{age: 30d, salience: 0.5}, {age: 10d, salience: 0.4}]}}`,
			"decay.profiles.semantic.points[1].age: must be greater than points[0].age: points are in order of age", "/profiles/semantic/points/1/age"},
		{"points rising", `profiles: {semantic: {curve: custom, points: [{age: 1d, salience: 0.5}, {age: 2d, salience: 0.6}]}}`,
			"decay.profiles.semantic.points[1].salience: must not be above points[0].salience: decay never raises salience (§15A.7)", "/profiles/semantic/points/1/salience"},
		{"point at age 0 below 1", `profiles: {semantic: {curve: custom, points: [{age: 0s, salience: 0.5}]}}`,
			"decay.profiles.semantic.points[0].salience: must be 1 at age 0: a curve starts from the whole salience", "/profiles/semantic/points/0/salience"},
		{"points on a non-custom curve", `profiles: {semantic: {points: [{age: 1d, salience: 0.5}]}}`,
			"decay.profiles.semantic.points: only a custom curve has points", "/profiles/semantic/points"},
		{"unknown type", `profiles: {procedural: {half_life: 1d}}`,
			"decay.profiles.procedural: is not a memory type: episodic, working, semantic, competence or plan_graph", "/profiles/procedural"},
		{"unknown profile field", `profiles: {semantic: {halflife: 1d}}`,
			"decay.profiles.semantic.halflife: is not a field of a decay profile", "/profiles/semantic/halflife"},
		{"unknown field", `prune_treshold: 0.1`,
			"decay.prune_treshold: is not a field of the decay configuration", "/prune_treshold"},
		{"prune threshold of 1", `prune_threshold: 1`,
			"decay.prune_threshold: 1 is outside [0, 1)", "/prune_threshold"},
		{"no purge grace", `purge_grace: 0`,
			"decay.purge_grace: must be positive", "/purge_grace"},
		{"gain above 1", `profiles: {plan_graph: {reinforcement_gain: 2}}`,
			"decay.profiles.plan_graph.reinforcement_gain: 2 is outside [0, 1]", "/profiles/plan_graph/reinforcement_gain"},
		{"unknown deletion policy", `profiles: {working: {deletion_policy: sometimes}}`,
			`decay.profiles.working.deletion_policy: "sometimes" is not auto_prune, manual_only or never`, "/profiles/working/deletion_policy"},
		{"batch size", `batch_size: 0`, "decay.batch_size: 0 is outside 1..100000", "/batch_size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decay.ParseConfig([]byte(tc.doc))
			var ce *decay.ConfigError
			require.True(t, errors.As(err, &ce), "%v", err)
			require.Equal(t, tc.err, ce.Error())
			require.Equal(t, tc.pointer, ce.Pointer())
		})
	}
}

// A file names only what it changes; JSON parses as YAML does.
func TestConfigOverlaysDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := decay.ParseConfig([]byte(`{"profiles": {"semantic": {"curve": "linear", "floor": 0.1}}, "prune_threshold": 0.02}`))
	require.NoError(t, err)
	sem := cfg.Profiles[memory.Semantic]
	require.Equal(t, memory.Linear, sem.Curve)
	require.Equal(t, 0.1, sem.Floor)
	require.Equal(t, decay.Duration(90*day), sem.HalfLife, "the half-life left out keeps its default")
	require.Equal(t, decay.DefaultReinforcementGain, sem.ReinforcementGain)
	require.Equal(t, decay.DefaultProfile(memory.Episodic), cfg.Profiles[memory.Episodic])
	require.Equal(t, 0.02, cfg.PruneThreshold)
	require.Equal(t, decay.Duration(decay.DefaultPurgeGrace), cfg.PurgeGrace)

	// Inside a larger document, as engramd reads its file.
	var file struct {
		Decay decay.Config `yaml:"decay"`
	}
	file.Decay = decay.DefaultConfig()
	require.NoError(t, yaml.Unmarshal([]byte("decay:\n  profiles:\n    working: {half_life: 6h}\n"), &file))
	require.Equal(t, decay.Duration(6*time.Hour), file.Decay.Profiles[memory.Working].HalfLife)
	require.Equal(t, decay.DefaultProfile(memory.Semantic), file.Decay.Profiles[memory.Semantic])
}

func TestDurations(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{
		"90d": 90 * day, "1d12h": 36 * time.Hour, "36h": 36 * time.Hour, "0": 0, "1.5d": 36 * time.Hour, "90m": 90 * time.Minute,
	} {
		got, err := decay.ParseDuration(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "d", "7 days", "1w", "xd"} {
		_, err := decay.ParseDuration(in)
		require.Error(t, err, in)
	}
	require.Equal(t, "90d", decay.Duration(90*day).String())
	require.Equal(t, "1d12h0m0s", decay.Duration(36*time.Hour).String())
	require.Equal(t, "6h0m0s", decay.Duration(6*time.Hour).String())
}

// A refused configuration leaves the one in force.
func TestSettingsKeepTheOldConfigOnError(t *testing.T) {
	t.Parallel()
	s, err := decay.NewSettings(decay.DefaultConfig())
	require.NoError(t, err)
	bad := decay.DefaultConfig()
	p := bad.Profiles[memory.Semantic]
	p.Floor = 2
	bad.Profiles[memory.Semantic] = p
	require.EqualError(t, s.Set(bad), "decay.profiles.semantic.floor: 2 is outside [0, 1]")
	require.Equal(t, 0.0, s.Config().Profiles[memory.Semantic].Floor)

	d, policy := s.Defaults(memory.Semantic)
	require.Equal(t, memory.DefaultDecay(memory.Semantic), d)
	require.Equal(t, memory.AutoPrune, policy)
}
