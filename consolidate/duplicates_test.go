package consolidate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/consolidate"
	"github.com/engram-dev/engram/embedding"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

// setupGateOff is setup with the write path's dedup gate off for what the
// API writes — as with a scope or an older configuration that had it off —
// so that duplicates get stored; consolidation writes with the default
// gates and dups for duplicate resolution.
func setupGateOff(t *testing.T, dups consolidate.Duplicates) *env {
	t.Helper()
	return setupWith(t, revise.Gates{Dedup: revise.DedupConfig{Off: true}}, consolidate.Config{Duplicates: dups})
}

// procedure is the body of POST /v1/records for a procedure.
type procedure struct {
	skill, signal string
	steps         []string
	confidence    float64
	sensitivity   string
	tags          []string
	evidence      string
}

// write creates a record through the API.
func (e *env) write(p procedure) memory.Record {
	e.t.Helper()
	recipe := make([]any, len(p.steps))
	for i, s := range p.steps {
		tool, _, _ := strings.Cut(strings.TrimPrefix(s, "run "), " ")
		recipe[i] = map[string]any{"step": s, "tool": tool}
	}
	body := map[string]any{"type": "competence", "confidence": p.confidence, "tags": p.tags,
		"payload": map[string]any{"kind": "competence", "skill_name": p.skill,
			"triggers": []any{map[string]any{"signal": p.signal}}, "recipe": recipe},
		"provenance": map[string]any{"sources": []any{map[string]any{"kind": "outcome", "ref": p.evidence}}}}
	if p.sensitivity != "" {
		body["sensitivity"] = p.sensitivity
	}
	status, out := e.do("POST", "/v1/records", body)
	require.Equal(e.t, http.StatusCreated, status, string(out))
	var rec memory.Record
	require.NoError(e.t, json.Unmarshal(out, &rec))
	return rec
}

// lastAudit is the latest audit entry of a record.
func (e *env) lastAudit(id uuid.UUID) store.AuditEntry {
	e.t.Helper()
	entries, err := store.Audit(context.Background(), e.db.Pool, "acme", id)
	require.NoError(e.t, err)
	return entries[len(entries)-1]
}

// settled is engram_consolidation_duplicates_total by tier and outcome.
func (e *env) settled() map[string]float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	require.NoError(e.t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "engram_consolidation_duplicates_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out[labels["tier"]+"/"+labels["outcome"]] += m.GetCounter().GetValue()
		}
	}
	return out
}

// embed runs the embedding backfill with the built-in embedder.
func (e *env) embed() {
	e.t.Helper()
	require.NoError(e.t, embedding.NewBackfiller(e.db.Pool, embedding.NewLexical(), 100, nil).Backfill(context.Background(), &memRun{}))
}

// writes are the counts of a pass that say it merged or contested.
func writes(counts map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range counts {
		if strings.HasPrefix(k, "duplicates_merged") || strings.HasPrefix(k, "duplicates_contested") {
			out[k] = v
		}
	}
	return out
}

func refs(r memory.Record) []string {
	out := make([]string, len(r.Provenance.Sources))
	for i, s := range r.Provenance.Sources {
		out[i] = s.Ref
	}
	return out
}

var linkerFix = []string{"run shell rm -rf {path}/cache", "run make build"}

// Exact duplicates stored with the dedup gate off merge into the oldest:
// it keeps its id and creation, with the union of provenance and tags, the
// highest confidence and sensitivity; the others are merged, with
// merged_into to it; each merge an audited revision saying what matched
// (issue 11: duplicates merge with provenance intact). A repeated pass
// changes nothing; nor does one from scratch.
func TestStoredDuplicatesMergeIntoTheOldest(t *testing.T) {
	t.Parallel()
	e := setupGateOff(t, consolidate.Duplicates{})
	fix := procedure{skill: "fix linker cache", signal: "ld: cache mismatch in <path>", steps: linkerFix}
	a, b, c := fix, fix, fix
	a.confidence, a.tags, a.evidence = 0.6, []string{"linker"}, "evt://fix-1"
	b.confidence, b.tags, b.evidence, b.sensitivity = 0.9, []string{"ci"}, "evt://fix-2", "medium"
	c.confidence, c.tags, c.evidence = 0.7, []string{"linker"}, "evt://fix-3"
	oldest, second, third := e.write(a), e.write(b), e.write(c)
	require.Len(t, e.procedures(), 3, "the gate is off: three records")

	counts := e.consolidate()
	require.Equal(t, map[string]int64{"duplicates_merged_hash": 2}, writes(counts))
	require.Equal(t, map[string]float64{"hash/merged": 2}, e.settled())
	live := e.procedures()
	require.Len(t, live, 1)
	got := live[0]
	require.Equal(t, oldest.ID, got.ID, "the oldest survives")
	require.Equal(t, 3, got.Version, "one revision a merge")
	require.Equal(t, oldest.CreatedAt, got.CreatedAt)
	require.Equal(t, []string{"evt://fix-1", "evt://fix-2", "evt://fix-3"}, refs(got))
	require.ElementsMatch(t, []string{"linker", "ci"}, got.Tags)
	require.Equal(t, 0.9, got.Confidence)
	require.Equal(t, memory.Medium, got.Sensitivity)
	require.JSONEq(t, string(oldest.Payload), string(got.Payload))
	for _, dup := range []memory.Record{second, third} {
		gone := e.get(dup.ID)
		require.Equal(t, memory.Merged, gone.Status)
		require.Contains(t, gone.Relations, memory.Relation{Predicate: memory.MergedInto, TargetID: oldest.ID})
		require.Equal(t, refs(dup), refs(gone), "its own provenance stays in its history")
	}
	audit := e.lastAudit(oldest.ID)
	require.Equal(t, revise.ActionMergeInto, audit.Action)
	require.Equal(t, "consolidate", audit.Actor)
	require.Contains(t, audit.Rationale, "same content hash")
	require.Contains(t, audit.Rationale, third.ID.String()+" merged into the older record "+oldest.ID.String())
	require.Equal(t, []memory.Source{{Kind: "record", Ref: "record://" + third.ID.String()}}, audit.Evidence)

	require.Equal(t, map[string]int64{"episodes": 0}, e.consolidate())
	e.run.cursor = nil
	require.Empty(t, writes(e.consolidate()))
	require.Equal(t, 3, e.get(oldest.ID).Version)
}

// Two procedures with the same skill and trigger and another recipe are a
// conflict: contested, never merged.
func TestConflictingDuplicatesAreContested(t *testing.T) {
	t.Parallel()
	e := setupGateOff(t, consolidate.Duplicates{})
	a := e.write(procedure{skill: "fix linker cache", signal: "ld: cache mismatch in <path>", steps: linkerFix, confidence: 0.8, evidence: "evt://fix-1"})
	b := e.write(procedure{skill: "fix linker cache", signal: "ld: cache mismatch in <path>", steps: []string{"run make clean", "run make build"}, confidence: 0.8, evidence: "evt://fix-2"})

	counts := e.consolidate()
	require.Equal(t, map[string]int64{"duplicates_contested_fingerprint": 1}, writes(counts))
	require.Equal(t, map[string]float64{"fingerprint/contested": 1}, e.settled())
	for _, r := range []memory.Record{a, b} {
		got := e.get(r.ID)
		require.Equal(t, memory.Contested, got.Status)
		require.Equal(t, refs(r), refs(got), "nothing merged")
	}
	require.Contains(t, e.get(a.ID).Relations, memory.Relation{Predicate: memory.Contradicts, TargetID: b.ID})
	require.Contains(t, e.lastAudit(b.ID).Rationale, "same fingerprint (skill and triggers), other recipe")

	require.Equal(t, map[string]int64{"episodes": 0}, e.consolidate())
	e.run.cursor = nil
	require.Empty(t, writes(e.consolidate()))
	require.Equal(t, 2, e.get(a.ID).Version)
}

// Near-duplicates are found by their vectors once the embedding backfill
// has written them: one worded differently with the same trigger and
// recipe merges into the older; one alike by vector whose trigger differs
// is contested, not merged. Before the vectors exist the tier does
// nothing and says so.
func TestNearDuplicatesByVector(t *testing.T) {
	t.Parallel()
	// The lexical embedder puts a one-word change of a short record at
	// 0.84; the default threshold (0.95) takes only rewordings.
	e := setupGateOff(t, consolidate.Duplicates{Similarity: 0.8})
	older := e.write(procedure{skill: "fix the linker cache", signal: "ld: cache mismatch in <path>", steps: linkerFix, confidence: 0.7, evidence: "evt://fix-1"})
	reworded := e.write(procedure{skill: "Fix the linker cache!", signal: "LD: cache mismatch in <path>", steps: linkerFix, confidence: 0.8, evidence: "evt://fix-2"})
	other := e.write(procedure{skill: "fix the linker cache", signal: "ld: cache mismatch at <path>", steps: linkerFix, confidence: 0.7, evidence: "evt://fix-3"})
	// Other procedures of the tenant, so that the lexical embedder's
	// weights are those of a corpus, not of three near-copies.
	for i, p := range []procedure{
		{skill: "refresh the npm lockfile", signal: "npm ERR! lockfile out of date", steps: []string{"run npm install", "run npm test"}},
		{skill: "restart the database", signal: "connection refused on port <n>", steps: []string{"run systemctl restart postgresql"}},
		{skill: "clear the go build cache", signal: "go: inconsistent vendoring", steps: []string{"run go mod vendor", "run go build ./..."}},
		{skill: "rotate the expired token", signal: "401 unauthorized: token expired", steps: []string{"run vault token renew"}},
	} {
		p.confidence, p.evidence = 0.7, fmt.Sprintf("evt://other-%d", i)
		e.write(p)
	}

	counts := e.consolidate()
	require.Empty(t, writes(counts), "no vectors yet")
	require.Equal(t, int64(7), counts["duplicates_unembedded"])

	e.embed()
	counts = e.consolidate()
	require.Equal(t, map[string]int64{"duplicates_merged_vector": 1, "duplicates_contested_vector": 1}, writes(counts))
	require.Equal(t, map[string]float64{"vector/merged": 1, "vector/contested": 1}, e.settled())

	gone := e.get(reworded.ID)
	require.Equal(t, memory.Merged, gone.Status)
	require.Contains(t, gone.Relations, memory.Relation{Predicate: memory.MergedInto, TargetID: older.ID})
	kept := e.get(older.ID)
	require.Equal(t, memory.Contested, kept.Status, "contested with the other trigger's record")
	require.Equal(t, []string{"evt://fix-1", "evt://fix-2"}, refs(kept))
	require.Equal(t, 0.8, kept.Confidence)
	entries, err := store.Audit(context.Background(), e.db.Pool, "acme", older.ID)
	require.NoError(t, err)
	var merge, contest string
	for _, en := range entries {
		switch en.Action {
		case revise.ActionMergeInto:
			merge = en.Rationale
		case revise.ActionContest:
			contest = en.Rationale
		}
	}
	require.Contains(t, merge, "vector similarity 1.00; same triggers and normalised recipe")
	require.Regexp(t, `vector similarity 0\.8\d; other triggers; contested until resolved, not merged`, contest)
	alike := e.get(other.ID)
	require.Equal(t, memory.Contested, alike.Status)
	require.Equal(t, []string{"evt://fix-3"}, refs(alike), "never merged")

	// What the pass revised is read again, and left as it is.
	require.Empty(t, writes(e.consolidate()))
	e.embed()
	require.Empty(t, writes(e.consolidate()))
	require.Equal(t, kept.Version, e.get(older.ID).Version)
	require.Equal(t, alike.Version, e.get(other.ID).Version)
}

// Rolling a merge back through the API restores both records as they were,
// and later passes leave them apart.
func TestRollbackOfADuplicateMerge(t *testing.T) {
	t.Parallel()
	e := setupGateOff(t, consolidate.Duplicates{})
	fix := procedure{skill: "fix linker cache", signal: "ld: cache mismatch in <path>", steps: linkerFix}
	a, b := fix, fix
	a.confidence, a.tags, a.evidence = 0.6, []string{"linker"}, "evt://fix-1"
	b.confidence, b.tags, b.evidence = 0.9, []string{"ci"}, "evt://fix-2"
	older, newer := e.write(a), e.write(b)
	require.Equal(t, map[string]int64{"duplicates_merged_hash": 1}, writes(e.consolidate()))

	status, body := e.do("POST", "/v1/records/"+older.ID.String()+":rollback", map[string]any{"rationale": "two fixes, not one"})
	require.Equal(t, http.StatusOK, status, string(body))
	back := e.get(older.ID)
	require.Equal(t, memory.Active, back.Status)
	require.Equal(t, 3, back.Version)
	require.Equal(t, []string{"evt://fix-1"}, refs(back))
	require.Equal(t, []string{"linker"}, back.Tags)
	require.Equal(t, 0.6, back.Confidence)
	again := e.get(newer.ID)
	require.Equal(t, memory.Active, again.Status)
	require.Equal(t, []string{"evt://fix-2"}, refs(again))
	require.Equal(t, 0.9, again.Confidence)
	require.Equal(t, "rollback", e.lastAudit(older.ID).Action)
	require.Equal(t, "reactivate", e.lastAudit(newer.ID).Action)

	require.Empty(t, writes(e.consolidate()), "a rolled back merge is not made again")
	require.Len(t, e.procedures(), 2)
}
