package consolidate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/consolidate"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// A fix that starts failing and a new one that works: two records whose
// statistics tell them apart, retrieval prefers the new one, and the old
// one is retracted once it keeps failing — still in history, with its
// reason (issue 11; substrate RFC §8, §15A.9, §15A.11).
func TestDriftedProcedureIsRetracted(t *testing.T) {
	t.Parallel()
	e := setup(t)
	linux := map[string]any{"os": "linux"}
	msg := "ld: cache mismatch in %s/obj.o"
	n := 0
	clearCache := func(status string, results ...any) {
		n++
		dir := fmt.Sprintf("/tmp/build-%d", n)
		e.post(episode(fmt.Sprintf("old-%d", n), linux, fmt.Sprintf(msg, dir), []map[string]any{
			step("shell", map[string]any{"command": "rm -rf " + dir + "/cache"}, map[string]any{"exit_code": 0}),
			step("make", []any{"build"}, results[0]),
		}, status))
	}
	killCache := func() {
		n++
		dir := fmt.Sprintf("/tmp/build-%d", n)
		e.post(episode(fmt.Sprintf("new-%d", n), linux, fmt.Sprintf(msg, dir), []map[string]any{
			step("shell", map[string]any{"command": "ccache --clear --all"}, map[string]any{"exit_code": 0}), buildOK,
		}, "success"))
	}
	broken := "ld: cache mismatch in /tmp/x/obj.o"
	byRecipe := func() map[string]memory.Record {
		out := map[string]memory.Record{}
		for _, r := range e.procedures() {
			out[payloadOf(t, r).Recipe[0].Step] = r
		}
		return out
	}
	const oldStep, newStep = "run shell rm -rf {path}/cache", "run shell ccache --clear --all"

	// The old fix works three times: learned, on probation.
	for range 3 {
		clearCache("success", "build ok: bin/engramd\n2 targets")
	}
	counts := e.consolidate()
	require.Equal(t, int64(1), counts["competence_created"], counts)
	old := byRecipe()[oldStep]
	require.Contains(t, old.Tags, consolidate.ProbationTag)

	// It starts failing; a new fix works.
	clearCache("failure", broken)
	clearCache("failure", broken)
	killCache()
	killCache()
	counts = e.consolidate()
	require.Equal(t, int64(1), counts["competence_created"], counts)
	require.Equal(t, int64(1), counts["competence_revised"], counts)
	recs := byRecipe()
	require.Len(t, recs, 2)
	oldP, newP := payloadOf(t, recs[oldStep]).Performance, payloadOf(t, recs[newStep]).Performance
	require.Equal(t, []int{3, 2}, []int{oldP.Successes, oldP.Failures}, "the failures that followed its recipe count")
	require.Equal(t, []int{2, 0}, []int{newP.Successes, newP.Failures})
	require.NotNil(t, oldP.LastFailureAt)
	require.Contains(t, recs[newStep].Tags, consolidate.ProbationTag)
	found := e.recall("ld: cache mismatch in /srv/y/obj.o", nil)
	require.Len(t, found, 2)
	require.Equal(t, recs[newStep].ID, found[0].ID, "the statistics prefer the new fix, probation and all")

	// A third failure in a row: retracted, with its reason.
	clearCache("failure", broken)
	counts = e.consolidate()
	require.Equal(t, int64(1), counts["competence_retracted"], counts)
	recs = byRecipe()
	require.Len(t, recs, 1, "only the new fix is live")
	require.Contains(t, recs, newStep)
	gone, err := store.List(context.Background(), e.db.Pool, "acme", store.Filter{
		Types: []memory.Type{memory.Competence}, Statuses: []memory.Status{memory.Retracted}})
	require.NoError(t, err)
	require.Len(t, gone.Records, 1)
	require.Equal(t, 3, payloadOf(t, gone.Records[0]).Performance.Failures)
	audit, err := store.Audit(context.Background(), e.db.Pool, "acme", gone.Records[0].ID)
	require.NoError(t, err)
	require.Contains(t, audit[len(audit)-1].Rationale, "3 failures in a row since its last success on ")

	// A pass from scratch does not learn the retracted procedure again.
	e.run.cursor = nil
	counts = e.consolidate()
	require.Zero(t, counts["competence_created"], counts)
	require.Len(t, byRecipe(), 1)

	// Rollback is for a revision that replaced a record, not for a
	// retraction; an operator restores the procedure, audited, the same
	// record back in force. Its tags name the procedure and its sources the
	// episodes already counted, so the next pass takes it up where it was
	// left, without retracting it again.
	status, body := e.do("POST", "/v1/records/"+gone.Records[0].ID.String()+":rollback", map[string]any{})
	require.Equal(t, http.StatusConflict, status, string(body))
	status, body = e.do("POST", "/v1/records/"+gone.Records[0].ID.String()+":restore", map[string]any{"rationale": "the cache fix works again after the toolchain rollback"})
	require.Equal(t, http.StatusOK, status, string(body))
	var back memory.Record
	require.NoError(t, json.Unmarshal(body, &back))
	require.Equal(t, memory.Active, back.Status)
	require.Equal(t, gone.Records[0].ID, back.ID)
	status, body = e.do("GET", "/v1/records/"+back.ID.String()+"/audit", nil)
	require.Equal(t, http.StatusOK, status, string(body))
	require.Contains(t, string(body), `"action":"reactivate"`)
	e.run.cursor = nil
	counts = e.consolidate()
	require.Zero(t, counts["competence_retracted"], counts)
	require.Len(t, byRecipe(), 2)
	require.Equal(t, 3, payloadOf(t, byRecipe()[oldStep]).Performance.Failures, "nothing counted twice")

	// Two more successful uses take the new fix off probation.
	killCache()
	killCache()
	e.consolidate()
	proved := byRecipe()[newStep]
	require.Equal(t, 4, payloadOf(t, proved).Performance.Successes)
	require.NotContains(t, proved.Tags, consolidate.ProbationTag)
	require.Contains(t, proved.Tags, consolidate.LearnedTag)
}

// Feedback counts into a procedure's statistics at once and survives the
// passes that revise the record; it proves a procedure on probation as
// well as an episode does.
func TestFeedbackCountsSurviveRevision(t *testing.T) {
	t.Parallel()
	e := setup(t)
	linux := map[string]any{"os": "linux"}
	fix := func(i int) {
		dir := fmt.Sprintf("/tmp/b-%d", i)
		e.post(episode(fmt.Sprintf("fix-%d", i), linux, "ld: cache mismatch in "+dir+"/obj.o", []map[string]any{
			step("shell", map[string]any{"command": "rm -rf " + dir + "/cache"}, map[string]any{"exit_code": 0}), buildOK,
		}, "success"))
	}
	fix(1)
	fix(2)
	e.consolidate()
	recs := e.procedures()
	require.Len(t, recs, 1)
	require.Contains(t, recs[0].Tags, consolidate.ProbationTag)

	status, body := e.do("POST", "/v1/feedback", map[string]any{"record_ids": []string{recs[0].ID.String()}, "outcome": "used_success", "key": "task-1"})
	require.Equal(t, http.StatusOK, status, string(body))
	require.Equal(t, 3, payloadOf(t, e.procedures()[0]).Performance.Successes)

	fix(3)
	counts := e.consolidate()
	require.Equal(t, int64(1), counts["competence_revised"], counts)
	recs = e.procedures()
	require.Len(t, recs, 1)
	require.Equal(t, 4, payloadOf(t, recs[0]).Performance.Successes, "2 learned from, 1 by feedback, 1 by episode")
	require.NotContains(t, recs[0].Tags, consolidate.ProbationTag, "two uses since it was learned")

	e.run.cursor = nil
	counts = e.consolidate()
	require.Equal(t, int64(1), counts["competence_unchanged"], counts)
}
