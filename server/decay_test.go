package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/internal/clocktest"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/jobs"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

// decayEnv is a server with decay and jobs, on one test clock.
type decayEnv struct {
	*env
	clock   *clocktest.Clock
	decayer *decay.Decayer
	jobs    *jobs.Scheduler
}

func setupDecay(t *testing.T) *decayEnv {
	t.Helper()
	db := pgtest.NewSchema(t)
	// From the real time: the version log records real times, which as_of
	// reads compare with.
	clk := clocktest.New(time.Now().UTC().Truncate(time.Microsecond))
	settings, err := decay.NewSettings(decay.DefaultConfig())
	require.NoError(t, err)
	wr := revise.New(db.Pool, revise.Config{Now: clk.Now, Defaults: settings.Defaults})
	for _, tenant := range []string{"acme", "other"} {
		require.NoError(t, store.EnsureTenant(context.Background(), db.Pool, tenant))
	}
	dec := decay.New(db.Pool, wr, settings, decay.WithClock(clk.Now))
	sched := jobs.New(jobs.Config{Pool: db.Pool, LeaderInterval: 20 * time.Millisecond})
	require.NoError(t, sched.Register(jobs.Job{Name: decay.SweepJob, Schedule: jobs.Off, Run: func(ctx context.Context, r *jobs.Run) error { return dec.Sweep(ctx, r) }}))
	require.NoError(t, sched.Register(jobs.Job{Name: decay.PurgeJob, Schedule: jobs.Off, Run: func(ctx context.Context, r *jobs.Run) error { return dec.Purge(ctx, r) }}))
	require.NoError(t, sched.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, sched.Stop(context.Background())) })
	srv := httptest.NewServer(server.New(server.Config{
		DB: db.Pool, Writer: wr, Decay: dec, Jobs: sched, Now: clk.Now,
		Keys: testKeys,
	}))
	t.Cleanup(srv.Close)
	return &decayEnv{env: &env{t: t, url: srv.URL, db: db}, clock: clk, decayer: dec, jobs: sched}
}

func (e *decayEnv) createEpisode() memory.Record {
	e.t.Helper()
	res := e.do("POST", "/v1/records", acmeKey, map[string]any{"type": "episodic", "payload": map[string]any{"kind": "episodic", "timeline": []any{}}})
	require.Equal(e.t, http.StatusCreated, res.status, string(res.body))
	var rec memory.Record
	res.decode(e.t, &rec)
	return rec
}

// runJob runs a job through the API and waits for its run to end.
func (e *decayEnv) runJob(name string) jobs.RunInfo {
	e.t.Helper()
	res := e.do("POST", "/v1/jobs/"+name+":run", opsKey, nil)
	require.Equal(e.t, http.StatusAccepted, res.status, string(res.body))
	var started struct{ Run jobs.RunInfo }
	res.decode(e.t, &started)
	var run jobs.RunInfo
	require.Eventually(e.t, func() bool {
		var err error
		run, err = e.jobs.GetRun(context.Background(), started.Run.ID)
		return err == nil && run.Status != jobs.StatusRunning
	}, 10*time.Second, 10*time.Millisecond)
	return run
}

// Every record the API shows has its current salience; history shows each
// version as stored.
func TestRecordsShowCurrentSalience(t *testing.T) {
	t.Parallel()
	e := setupDecay(t)
	rec := e.createEpisode()
	require.Equal(t, 1.0, rec.Salience)
	created := e.clock.Now()

	e.clock.Advance(7 * 24 * time.Hour) // episodes halve weekly
	var got memory.Record
	e.do("GET", "/v1/records/"+rec.ID.String(), acmeKey, nil).decode(t, &got)
	require.InDelta(t, 0.5, got.Salience, 1e-12)
	var page api.RecordPage
	e.do("GET", "/v1/records", acmeKey, nil).decode(t, &page)
	require.InDelta(t, 0.5, page.Records[0].Salience, 1e-12)

	res := e.do("GET", "/v1/records/"+rec.ID.String()+"?as_of="+created.Add(14*24*time.Hour).Format(time.RFC3339Nano), acmeKey, nil)
	res.decode(t, &got)
	require.InDelta(t, 0.25, got.Salience, 1e-12, "as of a time, at that time")

	var hist struct{ Versions []api.RecordVersion }
	e.do("GET", "/v1/records/"+rec.ID.String()+"/history", acmeKey, nil).decode(t, &hist)
	require.Equal(t, 1.0, hist.Versions[0].Record.Salience, "history shows the stored salience")
}

func TestFeedbackAPI(t *testing.T) {
	t.Parallel()
	e := setupDecay(t)
	rec := e.createEpisode()
	e.clock.Advance(7 * 24 * time.Hour)

	body := map[string]any{"key": "ret-1", "record_ids": []string{rec.ID.String()}, "outcome": "used_success"}
	res := e.do("POST", "/v1/feedback", acmeKey, body)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.JSONEq(t, `{"applied": 1, "records": [{"id": "`+rec.ID.String()+`", "salience": 0.7, "version": 1}], "duplicate": [], "not_live": []}`, string(res.body))

	res = e.do("POST", "/v1/feedback", acmeKey, body)
	require.Equal(t, http.StatusOK, res.status)
	require.JSONEq(t, `{"applied": 0, "records": [], "duplicate": ["`+rec.ID.String()+`"], "not_live": []}`, string(res.body))

	var got memory.Record
	e.do("GET", "/v1/records/"+rec.ID.String(), acmeKey, nil).decode(t, &got)
	require.InDelta(t, 0.7, got.Salience, 1e-12)
	require.Equal(t, e.clock.Now(), got.Lifecycle.LastReinforcedAt)
}

// Bad feedback: clear 4xx errors naming the field, nothing changed.
func TestFeedbackAPIRefusesBadInput(t *testing.T) {
	t.Parallel()
	e := setupDecay(t)
	mine := e.createEpisode()
	res := e.do("POST", "/v1/records", otherKey, map[string]any{"type": "episodic", "payload": map[string]any{"kind": "episodic", "timeline": []any{}}})
	require.Equal(t, http.StatusCreated, res.status)
	var theirs memory.Record
	res.decode(t, &theirs)

	for _, tc := range []struct {
		name    string
		body    any
		status  int
		kind    string
		pointer string
	}{
		{"other tenant's record", map[string]any{"record_ids": []string{mine.ID.String(), theirs.ID.String()}, "outcome": "unused"}, 422, "validation-failed", "/record_ids/1"},
		{"unknown record", map[string]any{"record_ids": []string{"0190a7b4-7c1e-7b3a-9d2f-3c4e5f6a7b8c"}, "outcome": "unused"}, 422, "validation-failed", "/record_ids/0"},
		{"outcome outside the enum", map[string]any{"record_ids": []string{mine.ID.String()}, "outcome": "great"}, 422, "validation-failed", "/outcome"},
		{"malformed id", map[string]any{"record_ids": []string{"r-1"}, "outcome": "unused"}, 422, "validation-failed", "/record_ids/0"},
		{"unknown field", map[string]any{"record_ids": []string{mine.ID.String()}, "outcome": "unused", "weight": 2}, 422, "validation-failed", "/weight"},
		{"malformed JSON", `{"record_ids": [`, 400, "malformed-json", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e.do("POST", "/v1/feedback", acmeKey, tc.body)
			require.Equal(t, tc.status, res.status, string(res.body))
			p := res.problem(t)
			require.Equal(t, "urn:engram:problem:"+tc.kind, p.Type)
			if tc.pointer != "" {
				require.Equal(t, tc.pointer, p.Errors[0].Pointer, string(res.body))
			}
		})
	}
	require.Equal(t, 0, e.count("SELECT count(*) FROM feedback"))
	require.Equal(t, 2, e.count("SELECT count(*) FROM records WHERE salience = 1 AND last_reinforced_at = created_at"))
}

// Prune by the sweep job, restore through the API.
func TestRestoreAPI(t *testing.T) {
	t.Parallel()
	e := setupDecay(t)
	rec := e.createEpisode()
	e.clock.Advance(60 * 24 * time.Hour)
	run := e.runJob(decay.SweepJob)
	require.Equal(t, jobs.StatusSucceeded, run.Status)
	require.Equal(t, int64(1), run.Counts["expired_salience"])

	var got memory.Record
	e.do("GET", "/v1/records/"+rec.ID.String(), acmeKey, nil).decode(t, &got)
	require.Equal(t, memory.Expired, got.Status)

	res := e.do("POST", "/v1/records/"+rec.ID.String()+":restore", acmeKey, map[string]any{"rationale": "needed after all"})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	res.decode(t, &got)
	require.Equal(t, memory.Active, got.Status)
	require.Equal(t, 1.0, got.Salience)

	res = e.do("POST", "/v1/records/"+rec.ID.String()+":restore", acmeKey, nil)
	require.Equal(t, http.StatusConflict, res.status)
	require.Equal(t, "urn:engram:problem:not-allowed", res.problem(t).Type)
	res = e.do("POST", "/v1/records/"+rec.ID.String()+":restore", otherKey, nil)
	require.Equal(t, http.StatusNotFound, res.status, "another tenant's record is not there")
}

func TestPreviewAndStatsAPI(t *testing.T) {
	t.Parallel()
	e := setupDecay(t)
	for range 3 {
		e.createEpisode()
	}
	e.clock.Advance(24 * time.Hour)

	res := e.do("POST", "/v1/decay/preview", acmeKey, map[string]any{
		"proposed": map[string]any{"profiles": map[string]any{"episodic": map[string]any{"half_life": "12h"}}}, "at": "+2d",
	})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var pv decay.Preview
	res.decode(t, &pv)
	require.Equal(t, e.clock.Now().Add(48*time.Hour), pv.At)
	ep := pv.Types[memory.Episodic]
	require.Equal(t, 3, ep.Records)
	require.Equal(t, 0, ep.Current.PruneAt)
	require.Equal(t, 3, ep.Proposed.PruneAt, "6 half-lives of 12h by then: 0.016")
	require.Equal(t, decay.Duration(12*time.Hour), pv.Proposed.Profiles[memory.Episodic].HalfLife)

	res = e.do("POST", "/v1/decay/preview", acmeKey, nil)
	require.Equal(t, http.StatusOK, res.status, "no body: the configuration in force, 30 days ahead")

	for _, tc := range []struct {
		name    string
		body    any
		pointer string
	}{
		{"non-positive half-life", map[string]any{"proposed": map[string]any{"profiles": map[string]any{"semantic": map[string]any{"half_life": "-1h"}}}}, "/proposed/profiles/semantic/half_life"},
		{"unknown curve", map[string]any{"proposed": map[string]any{"profiles": map[string]any{"semantic": map[string]any{"curve": "step"}}}}, "/proposed/profiles/semantic/curve"},
		{"points out of order", map[string]any{"proposed": map[string]any{"profiles": map[string]any{"plan_graph": map[string]any{"curve": "custom",
			"points": []any{map[string]any{"age": "2d", "salience": 0.5}, map[string]any{"age": "1d", "salience": 0.2}}}}}}, "/proposed/profiles/plan_graph/points/1/age"},
		{"floor outside [0, 1]", map[string]any{"proposed": map[string]any{"profiles": map[string]any{"working": map[string]any{"floor": 3}}}}, "/proposed/profiles/working/floor"},
		{"horizon in the past", map[string]any{"at": "2020-01-01T00:00:00Z"}, "/at"},
		{"horizon not a time", map[string]any{"at": "next week"}, "/at"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e.do("POST", "/v1/decay/preview", acmeKey, tc.body)
			require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
			require.Equal(t, tc.pointer, res.problem(t).Errors[0].Pointer)
		})
	}

	res = e.do("GET", "/v1/stats/salience", acmeKey, nil)
	require.Equal(t, http.StatusOK, res.status)
	var st decay.Stats
	res.decode(t, &st)
	require.Equal(t, 3, st.Types[memory.Episodic].Records)
	require.InDelta(t, 0.9057, st.Types[memory.Episodic].Salience.Mean, 1e-4)
	res = e.do("GET", "/v1/stats/salience", otherKey, nil)
	res.decode(t, &st)
	require.Equal(t, 0, st.Types[memory.Episodic].Records, "per tenant")
}

// The decay section may be previewed as the configuration file has it, in
// YAML: read as the file's loader reads it, its errors naming the field
// and its line; the answer gives both sections back in YAML too.
func TestPreviewYAML(t *testing.T) {
	t.Parallel()
	e := setupDecay(t)
	for range 3 {
		e.createEpisode()
	}
	e.clock.Advance(24 * time.Hour)
	yamlBody := "Content-Type"
	res := e.do("POST", "/v1/decay/preview?at=%2B2d", acmeKey, "profiles:\n  episodic:\n    half_life: 12h # faster\nprune_threshold: 0.1\n", yamlBody, "application/yaml")
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var pv api.DecayPreview
	res.decode(t, &pv)
	require.Equal(t, e.clock.Now().Add(48*time.Hour), pv.At)
	require.Equal(t, 3, pv.Types[memory.Episodic].Proposed.PruneAt)
	proposed, err := decay.ParseConfig(pv.Proposed)
	require.NoError(t, err)
	require.Equal(t, decay.Duration(12*time.Hour), proposed.Profiles[memory.Episodic].HalfLife)
	require.Equal(t, 0.1, proposed.PruneThreshold)
	// The YAML it answers is the configuration file's, and reads back.
	require.Contains(t, pv.ProposedYAML, "prune_threshold: 0.1\n")
	require.Contains(t, pv.CurrentYAML, "\n  episodic:\n    curve: exponential\n    half_life: 7d\n")
	back, err := decay.ParseConfig([]byte(pv.ProposedYAML))
	require.NoError(t, err)
	require.Equal(t, proposed, back)

	for _, tc := range []struct {
		name, body, pointer, message string
	}{
		{"a bad duration", "profiles:\n  semantic:\n    half_life: ten days\n", "/profiles/semantic/half_life", `"ten days" is not a duration such as 90d or 36h (line 3)`},
		{"an unknown field", "prune_threshold: 0.1\nprune_treshold: 0.2\n", "/prune_treshold", "(line 2)"},
		{"out of range", "batch_size: 0\n", "/batch_size", "0 is outside 1..100000 (line 1)"},
		{"not YAML", "profiles:\n  semantic: [\n", "", "yaml: line 2"},
		{"a JSON-style preview request", `{"proposed": {"prune_threshold": 0.1}}`, "/proposed", "(line 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e.do("POST", "/v1/decay/preview", acmeKey, tc.body, yamlBody, "application/yaml; charset=utf-8")
			require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
			require.Equal(t, "application/problem+json", res.header.Get("Content-Type"))
			p := res.problem(t)
			require.Equal(t, tc.pointer, p.Errors[0].Pointer)
			require.Contains(t, p.Errors[0].Message, tc.message)
		})
	}
	res = e.do("POST", "/v1/decay/preview?at=yesterday", acmeKey, "prune_threshold: 0.1\n", yamlBody, "application/yaml")
	require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
	require.Equal(t, "/at", res.problem(t).Errors[0].Pointer)
	res = e.do("POST", "/v1/decay/preview", acmeKey, "prune_threshold: 0.1\n", yamlBody, "text/plain")
	require.Equal(t, http.StatusUnsupportedMediaType, res.status, string(res.body))
	require.Contains(t, res.problem(t).Detail, "application/yaml")
}

func TestJobsAPI(t *testing.T) {
	t.Parallel()
	e := setupDecay(t)
	run := e.runJob(decay.PurgeJob)
	require.Equal(t, jobs.StatusSucceeded, run.Status)
	require.Equal(t, jobs.TriggerManual, run.Trigger)

	res := e.do("GET", "/v1/jobs", opsKey, nil)
	require.Equal(t, http.StatusOK, res.status)
	var ov jobs.Overview
	res.decode(t, &ov)
	require.Len(t, ov.Jobs, 2)
	require.Equal(t, decay.PurgeJob, ov.Jobs[0].Name)
	require.Equal(t, run.ID, ov.Jobs[0].LastRun.ID)
	require.Nil(t, ov.Jobs[1].LastRun)

	res = e.do("POST", "/v1/jobs/nope:run", opsKey, nil)
	require.Equal(t, http.StatusNotFound, res.status)
	res = e.do("POST", "/v1/jobs/decay_sweep", opsKey, nil)
	require.Equal(t, http.StatusNotFound, res.status)
	res = e.do("GET", "/v1/jobs", "", nil)
	require.Equal(t, http.StatusUnauthorized, res.status)
}

// A server without decay or jobs says so.
func TestDecayNotConfigured(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for path, key := range map[string]string{"/v1/feedback": acmeKey, "/v1/decay/preview": acmeKey, "/v1/jobs/decay_sweep:run": opsKey} {
		res := e.do("POST", path, key, map[string]any{})
		require.Equal(t, http.StatusServiceUnavailable, res.status, path)
	}
}
