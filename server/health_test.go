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
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

func setupHealth(t *testing.T) *env {
	t.Helper()
	db := pgtest.NewSchema(t)
	wr := revise.New(db.Pool, revise.Config{})
	for _, tenant := range []string{"acme", "other"} {
		require.NoError(t, store.EnsureTenant(context.Background(), db.Pool, tenant))
	}
	settings, err := decay.NewSettings(decay.DefaultConfig())
	require.NoError(t, err)
	srv := httptest.NewServer(server.New(server.Config{DB: db.Pool, Writer: wr, Decay: decay.New(db.Pool, wr, settings), Keys: testKeys}))
	t.Cleanup(srv.Close)
	return &env{t: t, url: srv.URL, db: db}
}

// After writes, a duplicate, feedback and a retrieval through the API, GET
// /v1/stats/health counts them in the bucket they happened in, with their
// rates and the composite score's parts; a tenant's key reads its own
// tenant only, an operator's key the tenant it names.
func TestHealthStats(t *testing.T) {
	t.Parallel()
	e := setupHealth(t)
	ops := e

	var ids []string
	for _, obj := range []string{"go", "rust"} {
		b := factBody(obj, map[string]any{"project": obj})
		res := e.do("POST", "/v1/records", acmeKey, b)
		require.Equal(t, http.StatusCreated, res.status, string(res.body))
		var rec memory.Record
		res.decode(t, &rec)
		ids = append(ids, rec.ID.String())
	}
	// A duplicate that brings a tag is absorbed, and audited so.
	dup := factBody("go", map[string]any{"project": "go"})
	dup["tags"] = []string{"seen-twice"}
	res := e.do("POST", "/v1/records", acmeKey, dup)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	res = e.do("POST", "/v1/records", acmeKey, map[string]any{"type": "working", "payload": map[string]any{"kind": "working", "thread_id": "t1", "state": "planning"}})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	res = e.do("POST", "/v1/feedback", acmeKey, map[string]any{"key": "task-1", "record_ids": ids[:1], "outcome": "used_success"})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	res = e.do("POST", "/v1/feedback", acmeKey, map[string]any{"key": "task-2", "record_ids": ids[1:], "outcome": "unused"})
	require.Equal(t, http.StatusOK, res.status, string(res.body))

	from := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Hour)
	path := "/v1/stats/health?bucket=hour&from=" + from.Format(time.RFC3339)
	res = e.do("GET", path, acmeKey, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var st api.HealthStats
	res.decode(t, &st)
	require.Equal(t, "acme", st.Tenant)
	require.Equal(t, "hour", st.Bucket)
	require.Equal(t, map[memory.Type]int64{memory.Semantic: 2, memory.Working: 1}, st.Live)
	require.GreaterOrEqual(t, len(st.Series), 2)
	var created, records map[memory.Type]int64
	var writes, feedback map[string]int64
	var acceptance, usefulness *float64
	for _, b := range st.Series {
		if b.Created[memory.Semantic] > 0 {
			created, writes, feedback, acceptance, usefulness = b.Created, b.Writes, b.Feedback, b.AcceptanceRate, b.Usefulness
		}
		records = b.Records
	}
	require.Equal(t, map[memory.Type]int64{memory.Semantic: 2, memory.Working: 1}, created)
	require.Equal(t, int64(2), records[memory.Semantic], "records held at the last bucket's end")
	require.Equal(t, int64(3), writes["created"])
	require.Equal(t, int64(1), writes["absorbed"])
	require.InDelta(t, 3.0/4, *acceptance, 1e-9)
	require.Equal(t, map[string]int64{"used_success": 1, "unused": 1}, feedback)
	require.InDelta(t, 0.5, *usefulness, 1e-9)
	require.Len(t, st.Salience.Types[memory.Semantic], len(st.Salience.Bounds)+1)
	require.Equal(t, 100.0, st.Salience.SamplePercent, "a small tenant is counted exactly")
	var held int64
	for _, n := range st.Salience.Types[memory.Semantic] {
		held += n
	}
	require.Equal(t, int64(2), held)

	parts := map[string]api.HealthPart{}
	for _, p := range st.Score.Parts {
		parts[p.Name] = p
	}
	require.Len(t, parts, 6)
	require.Nil(t, parts["correctness_impact"].Normalized, "not measured by the daemon")
	require.InDelta(t, 0.5, *parts["retrieval_precision"].Value, 1e-9)
	require.InDelta(t, 0.5/0.7, *parts["retrieval_precision"].Normalized, 1e-9)
	require.InDelta(t, 0, *parts["hallucination_leakage"].Value, 1e-9)
	require.InDelta(t, 1, *parts["write_acceptance"].Normalized, 1e-9, "0.75 is inside 0.4–0.8")
	want := (0.20*0.5/0.7 + 0.20*1 + 0.15*1 + 0.10*1 + 0.10*1) / 0.75
	require.InDelta(t, want, *st.Score.Score, 1e-9)
	require.Equal(t, "healthy", st.Score.Status)

	// Another tenant sees none of it; a tenant key cannot name another.
	res = e.do("GET", path, otherKey, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var empty api.HealthStats
	res.decode(t, &empty)
	require.Empty(t, empty.Live)
	require.Equal(t, "other", empty.Tenant)
	require.Equal(t, "unknown", empty.Score.Status, "an empty tenant has nothing to score but its review queue")
	require.Equal(t, http.StatusBadRequest, e.do("GET", path+"&tenant=acme", otherKey, nil).status)

	// The operator names a tenant, and lists them.
	require.Equal(t, http.StatusBadRequest, ops.do("GET", path, opsKey, nil).status)
	res = ops.do("GET", path+"&tenant=acme", opsKey, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var opsView api.HealthStats
	res.decode(t, &opsView)
	require.Equal(t, st.Live, opsView.Live)
	res = ops.do("GET", "/v1/tenants", opsKey, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var ts api.Tenants
	res.decode(t, &ts)
	require.Len(t, ts.Tenants, 2)
	require.Equal(t, "acme", ts.Tenants[0].ID)
	require.Equal(t, http.StatusForbidden, e.do("GET", "/v1/tenants", acmeKey, nil).status)

	// Bad parameters are problems, not errors.
	require.Equal(t, http.StatusBadRequest, e.do("GET", "/v1/stats/health?bucket=minute", acmeKey, nil).status)
	require.Equal(t, http.StatusBadRequest, e.do("GET", "/v1/stats/health?bucket=hour&from=2000-01-01T00:00:00Z", acmeKey, nil).status)
	require.Equal(t, http.StatusBadRequest, e.do("GET", "/v1/stats/health?from=2100-01-01T00:00:00Z", acmeKey, nil).status)
}

// A tenant whose every write was taken has a write acceptance of 1: past
// the spec's alert threshold of 0.95 (too little filtering), which scores
// 0.5, so it scores 1/3 — not 0, the score of a tenant whose every write
// was turned away (write-path RFC §12.12.3).
func TestHealthScoreAcceptanceAboveTarget(t *testing.T) {
	t.Parallel()
	e := setupHealth(t)
	for _, obj := range []string{"go", "rust"} {
		res := e.do("POST", "/v1/records", acmeKey, factBody(obj, map[string]any{"project": obj}))
		require.Equal(t, http.StatusCreated, res.status, string(res.body))
	}
	from := time.Now().UTC().Add(-time.Hour).Truncate(time.Hour)
	res := e.do("GET", "/v1/stats/health?bucket=hour&from="+from.Format(time.RFC3339), acmeKey, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var st api.HealthStats
	res.decode(t, &st)
	var war api.HealthPart
	for _, p := range st.Score.Parts {
		if p.Name == "write_acceptance" {
			war = p
		}
	}
	require.NotNil(t, war.Value, war.Detail)
	require.InDelta(t, 1, *war.Value, 1e-9)
	require.InDelta(t, 1.0/3, *war.Normalized, 1e-9, "every write taken is past the alert threshold, not the worst possible")
	require.Contains(t, war.Detail, "0.95")
	// Hallucination leakage 0 (1), operational 1, write acceptance 1/3;
	// nothing else measured.
	want := (0.20*1 + 0.10*1.0/3 + 0.10*1) / 0.40
	require.InDelta(t, want, *st.Score.Score, 1e-9)
}

// The health route's competence success rate is the one engram states
// everywhere: from the live procedures' own performance (every use, by
// feedback or observed in episodes), smoothed as (successes+1)/(uses+2) —
// the rate a procedure's page and engram procedures show — and gone with
// a procedure that is no longer live.
func TestHealthCompetenceRateFromPerformance(t *testing.T) {
	t.Parallel()
	e := setupHealth(t)
	res := e.do("POST", "/v1/records", acmeKey, map[string]any{"type": "competence", "confidence": 0.6,
		"provenance": map[string]any{"sources": []any{map[string]any{"kind": "tool_call", "ref": "call://rm"}}},
		"payload": map[string]any{"kind": "competence", "skill_name": "fix_linker_cache",
			"triggers": []any{map[string]any{"signal": "ld: cache mismatch"}}, "recipe": []any{map[string]any{"step": "rm -rf cache"}},
			"performance": map[string]any{"successes": 3, "failures": 0}}})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	var proc memory.Record
	res.decode(t, &proc)
	res = e.do("POST", "/v1/feedback", acmeKey, map[string]any{"key": "task-1", "record_ids": []string{proc.ID.String()}, "outcome": "used_failure"})
	require.Equal(t, http.StatusOK, res.status, string(res.body))

	from := proc.CreatedAt.UTC().Truncate(time.Hour).Add(-time.Hour)
	last := func(to time.Time) api.HealthBucket {
		t.Helper()
		res := e.do("GET", "/v1/stats/health?bucket=hour&from="+from.Format(time.RFC3339)+"&to="+to.Format(time.RFC3339Nano), acmeKey, nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		var st api.HealthStats
		res.decode(t, &st)
		require.Nil(t, st.Series[0].CompetenceSuccessRate, "no procedure before it was learned")
		return st.Series[len(st.Series)-1]
	}
	b := last(time.Now().UTC())
	require.Equal(t, int64(3), b.CompetenceSuccesses, "the procedure's own counts, not the feedback rows alone")
	require.Equal(t, int64(1), b.CompetenceFailures)
	require.NotNil(t, b.CompetenceSuccessRate)
	require.InDelta(t, memory.SuccessRate(3, 1), *b.CompetenceSuccessRate, 1e-9)
	require.InDelta(t, 4.0/6, *b.CompetenceSuccessRate, 1e-9)

	before := time.Now().UTC()
	res = e.do("POST", "/v1/records/"+proc.ID.String()+":retract", acmeKey, map[string]any{"rationale": "stale"})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	b = last(time.Now().UTC())
	require.Zero(t, b.CompetenceSuccesses+b.CompetenceFailures, "a retracted procedure is no live competence")
	require.Nil(t, b.CompetenceSuccessRate)
	require.InDelta(t, 4.0/6, *last(before).CompetenceSuccessRate, 1e-9, "as it stood before its retraction")
}
