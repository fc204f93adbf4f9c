package consolidate_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/consolidate"
	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/policy"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/seal"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

// Consolidation learns from episodes sealed at rest (substrate RFC §15.9):
// it opens their staged events in memory, and the procedure it writes is
// sealed too, as sensitive as what it came from.
func TestProcedureFromSealedEpisodes(t *testing.T) {
	t.Parallel()
	db := pgtest.NewSchema(t)
	ctx := context.Background()
	mk, err := seal.ParseMasterKey(seal.NewMasterKey())
	require.NoError(t, err)
	s, err := seal.New(seal.Config{DB: db.Pool, Keys: []seal.MasterKey{mk}})
	require.NoError(t, err)
	pol, err := policy.Parse([]byte("rules: [{name: all-high, match: {agent: [coder]}, set: {sensitivity: high}}]\n"), "test")
	require.NoError(t, err)
	wr := revise.New(db.Pool, revise.Config{Sealer: s})
	require.NoError(t, store.EnsureTenant(ctx, db.Pool, "acme"))
	w := ingest.NewWorker(ingest.WorkerConfig{DB: db.Pool, Writer: wr, Policy: pol})
	settings, err := decay.NewSettings(decay.DefaultConfig())
	require.NoError(t, err)
	rs, err := retrieve.NewSettings(retrieve.DefaultConfig())
	require.NoError(t, err)
	srv := httptest.NewServer(server.New(server.Config{
		DB: db.Pool, Writer: wr, Logger: slog.New(slog.DiscardHandler), Decay: decay.New(db.Pool, wr, settings),
		Retrieve: retrieve.New(db.Pool, rs, retrieve.WithSealer(s)),
		Ingest:   ingest.New(ingest.Config{DB: db.Pool, Policy: w.Policy, Staged: w.Notify, Sealer: s}),
		Keys:     []server.Key{{Tenant: "acme", Name: "acme-test", Secret: key, Role: server.RoleCurator}},
	}))
	t.Cleanup(srv.Close)
	reg := prometheus.NewRegistry()
	e := &env{t: t, url: srv.URL, db: db, worker: w, run: &memRun{}, reg: reg,
		cons: consolidate.New(consolidate.Config{DB: db.Pool, Writer: wr, Registry: reg})}

	gcc := map[string]any{"os": "linux", "toolchain": "gcc"}
	for i, dir := range []string{"/tmp/build-123", "/home/ci/proj-7/build", "/var/tmp/work/b"} {
		e.post(episode(fmt.Sprintf("fix-%d", i), gcc, fmt.Sprintf("ld: cache mismatch in %s/obj.o", dir), []map[string]any{
			step("shell", map[string]any{"command": "rm -rf " + dir + "/cache"}, map[string]any{"exit_code": 0}),
			buildOK,
		}, "success"))
	}
	var plainEvents int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM candidates WHERE NOT event ? 'sealed'`).Scan(&plainEvents))
	require.Zero(t, plainEvents, "every staged event is sealed")

	counts := e.consolidate()
	require.Equal(t, int64(1), counts["competence_created"], counts)
	recs := e.procedures()
	require.Len(t, recs, 1)
	require.True(t, seal.IsSealed(recs[0].Payload), "stored sealed")
	require.NoError(t, s.OpenRecords(ctx, "acme", recs))
	p := payloadOf(t, recs[0])
	require.Equal(t, "run shell rm -rf {path}/cache", p.Recipe[0].Step)
	require.Equal(t, 3, p.Performance.Successes)

	var leaks int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM records WHERE payload::text LIKE '%cache mismatch%' OR payload::text LIKE '%rm -rf%')
		+ (SELECT count(*) FROM record_versions WHERE snapshot::text LIKE '%rm -rf%')
		+ (SELECT count(*) FROM episode_entries WHERE entry::text LIKE '%cache mismatch%')
		+ (SELECT count(*) FROM audit_log WHERE rationale LIKE '%cache mismatch%' OR rationale LIKE '%rm -rf%' OR evidence::text LIKE '%cache mismatch%')
		+ (SELECT count(*) FROM provenance WHERE stamp::text LIKE '%cache mismatch%')
		+ (SELECT count(*) FROM episode_features WHERE encode(features, 'escape') LIKE '%cache mismatch%' OR encode(features, 'escape') LIKE '%rm -rf%')`).Scan(&leaks))
	require.Zero(t, leaks, "nothing learned is in the clear")
	sealedFeatures := func() (all, underKey int) {
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE convert_from(features, 'UTF8')::jsonb #>> '{sealed,key}' = '2')
			FROM episode_features WHERE convert_from(features, 'UTF8')::jsonb ? 'sealed'`).Scan(&all, &underKey))
		return all, underKey
	}
	all, _ := sealedFeatures()
	require.Equal(t, 3, all, "every episode's features are kept, sealed")

	// A data key rotation forgets the features sealed under the old key;
	// the next pass learns them again, under the new one, and the same.
	for done := false; !done; {
		p, err := wr.RotateDataKey(ctx, "acme", 100)
		require.NoError(t, err)
		done = p.Done
	}
	all, _ = sealedFeatures()
	require.Zero(t, all)
	e.run.cursor = nil
	counts = e.consolidate()
	require.Equal(t, int64(3), counts["features_learned"], counts)
	require.Equal(t, int64(1), counts["competence_unchanged"], counts)
	all, underKey := sealedFeatures()
	require.Equal(t, 3, all)
	require.Equal(t, 3, underKey)
}
