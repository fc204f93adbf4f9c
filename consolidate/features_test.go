package consolidate_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/consolidate"
)

// seedLearning posts episodes of every kind a pass learns from: three
// errors fixed one way each across threads, with failures that tried
// something else; one error fixed two ways under two toolchains, with a
// probe nothing uses and a failure under a third; and tasks without an
// error, whose first inputs make one intent.
func (e *env) seedLearning() {
	e.t.Helper()
	var evs []map[string]any
	for i := range 33 {
		evs = append(evs, benchEpisode(i, 3)...)
	}
	e.post(evs)
	for i, dir := range []string{"/tmp/build-123", "/home/ci/proj-7/build", "/var/tmp/work/b"} {
		for _, tc := range []string{"gcc", "clang"} {
			fix := step("shell", map[string]any{"command": "rm -rf " + dir + "/cache"}, map[string]any{"exit_code": 0})
			if tc == "clang" {
				fix = step("shell", map[string]any{"command": "ccache -C"}, "Cleared cache")
			}
			e.post(episode(fmt.Sprintf("fix-%s-%d", tc, i), map[string]any{"os": "linux", "toolchain": tc},
				fmt.Sprintf("ld: cache mismatch in %s/obj.o", dir), []map[string]any{
					step("shell", map[string]any{"command": "ls " + dir}, "obj.o main.o"), fix, buildOK,
				}, "success"))
		}
	}
	e.post(episode("fail-icc", map[string]any{"os": "linux", "toolchain": "icc"}, "ld: cache mismatch in /tmp/build-9/obj.o", []map[string]any{
		step("shell", map[string]any{"command": "rm -rf /tmp/build-9/cache"}, map[string]any{"exit_code": 0}),
		step("make", []any{"build"}, "ld: cache mismatch in /tmp/build-9/obj.o"),
	}, "failure"))
	for i, dir := range []string{"/srv/app-1", "/srv/app-2", "/srv/app-3"} {
		e.post(setupEpisode(fmt.Sprintf("setup-%d", i), []map[string]any{gitInit(dir), npmTest}, []string{"success", "success", "failure"}[i]))
	}
}

// The features a pass keeps of each episode (issue 29) change nothing it
// learns: over one set of episodes, a pass that reads every episode from
// its events (as before features were kept), one that learns every
// episode's features from its events (a cold cache) and one that reads
// them all back (a warm cache) learn the same procedures and plans — their
// payloads, supporting and failed episodes, confidences, sensitivities
// and rationales; through the write path, a pass from scratch after the
// first changes nothing. A build whose learning code changed (another
// features version) learns every episode's features again, and the same.
func TestWarmFeaturesLearnWhatColdOnesDo(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	e.seedLearning()
	var episodes int64
	require.NoError(t, e.db.Pool.QueryRow(ctx, `SELECT count(*) FROM threads WHERE status = 'closed'`).Scan(&episodes))

	// What passes learned before features were kept: every episode read
	// from its events.
	eventProcs, eventPlans, err := e.cons.LearnedFromEvents(ctx, "acme")
	require.NoError(t, err)
	var stored int64
	require.NoError(t, e.db.Pool.QueryRow(ctx, `SELECT count(*) FROM episode_features`).Scan(&stored))
	require.Zero(t, stored)

	cold := &memRun{}
	procs, plans, err := e.cons.Learned(ctx, cold, "acme")
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"features_learned": episodes, "features_read": 0}, cold.counts)
	require.GreaterOrEqual(t, len(procs), 5, "three errors fixed one way, one two ways")
	require.NotEmpty(t, plans)
	require.NoError(t, e.db.Pool.QueryRow(ctx, `SELECT count(*) FROM episode_features`).Scan(&stored))
	require.Equal(t, episodes, stored)
	bareProcs, barePlans := consolidate.WithoutFeatures(procs, plans)
	require.Equal(t, eventProcs, bareProcs, "the same procedures as from the events")
	require.Equal(t, eventPlans, barePlans, "the same plans as from the events")

	warm := &memRun{}
	warmProcs, warmPlans, err := e.cons.Learned(ctx, warm, "acme")
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"features_learned": 0, "features_read": episodes}, warm.counts)
	require.Equal(t, procs, warmProcs)
	require.Equal(t, plans, warmPlans)

	// Through the write path: the first pass reads every episode's
	// features, and one from scratch after it writes nothing.
	counts := e.consolidate()
	require.Equal(t, episodes, counts["features_read"])
	require.Equal(t, int64(len(procs)), counts["competence_created"], counts)
	before := append(e.procedures(), e.plans()...)
	e.run.cursor = nil
	counts = e.consolidate()
	require.Equal(t, int64(len(procs)), counts["competence_unchanged"], counts)
	require.Zero(t, counts["competence_revised"]+counts["plan_revised"], counts)

	// Another version of the learning code learns them all again.
	consolidate.SetFeaturesVersion(e.cons, 1000)
	relearned := &memRun{}
	newProcs, newPlans, err := e.cons.Learned(ctx, relearned, "acme")
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"features_learned": episodes, "features_read": 0}, relearned.counts)
	require.Equal(t, procs, newProcs)
	require.Equal(t, plans, newPlans)
	var learners []string
	require.NoError(t, e.db.Pool.QueryRow(ctx, `SELECT array_agg(DISTINCT learner) FROM episode_features`).Scan(&learners))
	require.Len(t, learners, 1)
	require.Regexp(t, `^v1000/`, learners[0], "every row replaced by the new version's")

	e.run.cursor = nil
	counts = e.consolidate()
	require.Equal(t, episodes, counts["features_read"])
	require.Zero(t, counts["competence_revised"]+counts["plan_revised"]+counts["competence_created"]+counts["plan_created"], counts)
	after := append(e.procedures(), e.plans()...)
	require.Len(t, after, len(before))
	for i := range before {
		require.Equal(t, before[i].ID, after[i].ID)
		require.Equal(t, before[i].Version, after[i].Version)
	}
}
