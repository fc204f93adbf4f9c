package consolidate_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/consolidate"
	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/internal/clocktest"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

// A procedure agents keep using successfully, and that nobody ever gives
// feedback on, is still there a year later (substrate RFC §11, §15.6:
// salience follows successful use, however the use is known). engramd as
// a new install wires it — the default configuration, every part on one
// clock: events in over HTTP, consolidation observing the uses, and decay
// sweeping and purging each month as the episodes themselves fade and are
// forgotten.
func TestProcedureUsedForAYearWithoutFeedbackStays(t *testing.T) {
	t.Parallel()
	db := pgtest.NewSchema(t)
	ctx := context.Background()
	require.NoError(t, store.EnsureTenant(ctx, db.Pool, "acme"))
	clk := clocktest.New(time.Now().UTC().Add(-400 * 24 * time.Hour).Truncate(time.Second))
	settings, err := decay.NewSettings(decay.DefaultConfig())
	require.NoError(t, err)
	wr := revise.New(db.Pool, revise.Config{Now: clk.Now, Defaults: settings.Defaults, Gain: settings.Gain})
	dec := decay.New(db.Pool, wr, settings, decay.WithClock(clk.Now))
	w := ingest.NewWorker(ingest.WorkerConfig{DB: db.Pool, Writer: wr})
	rs, err := retrieve.NewSettings(retrieve.DefaultConfig())
	require.NoError(t, err)
	srv := httptest.NewServer(server.New(server.Config{
		DB: db.Pool, Writer: wr, Logger: slog.New(slog.DiscardHandler), Decay: dec, Retrieve: retrieve.New(db.Pool, rs),
		Ingest: ingest.New(ingest.Config{DB: db.Pool, Policy: w.Policy, Staged: w.Notify}),
		Keys:   []server.Key{{Tenant: "acme", Name: "acme-test", Secret: key}},
	}))
	t.Cleanup(srv.Close)
	e := &env{t: t, url: srv.URL, db: db, worker: w, run: &memRun{}, reg: prometheus.NewRegistry()}
	e.cons = consolidate.New(consolidate.Config{DB: db.Pool, Writer: wr, Decay: dec, Now: clk.Now, Registry: e.reg})

	n := 0
	use := func() {
		t.Helper()
		dir := fmt.Sprintf("/srv/job-%d", n)
		evs := episode(fmt.Sprintf("fix-%d", n), map[string]any{}, "ld: cache mismatch in "+dir+"/obj.o", []map[string]any{
			step("shell", map[string]any{"command": "rm -rf " + dir + "/cache"}, map[string]any{"exit_code": 0}), buildOK,
		}, "success")
		for i := range evs {
			evs[i]["time"] = clk.Now().Add(time.Duration(i) * time.Second).Format(time.RFC3339)
		}
		n++
		e.post(evs)
	}
	forget := func() {
		t.Helper()
		require.NoError(t, dec.Sweep(ctx, &memRun{}))
		require.NoError(t, dec.Purge(ctx, &memRun{}))
	}

	use()
	use()
	e.consolidate()
	require.Len(t, e.procedures(), 1)
	for month := range 12 {
		clk.Advance(30 * 24 * time.Hour)
		forget()
		use()
		e.consolidate()
		forget()
		require.NotContains(t, e.run.counts, "skipped_competence", "month %d", month+1)
	}
	procs := e.procedures()
	require.Len(t, procs, 1, "a year of successful use keeps it")
	rec := procs[0]
	require.Equal(t, memory.Active, rec.Status)
	require.Greater(t, decay.Current(rec, clk.Now()), settings.Config().PruneThreshold)
	p := payloadOf(t, rec)
	require.NotNil(t, p.Performance)
	require.Equal(t, 14, p.Performance.Successes, "every use counted")
	var first int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM records WHERE type = 'episodic' AND thread_id IN ('fix-0', 'fix-1')`).Scan(&first))
	require.Zero(t, first, "the episodes it was learned from are long forgotten")
}
