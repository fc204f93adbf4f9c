package consolidate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/consolidate"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/signature"
	"github.com/engram-dev/engram/store"
)

// age moves the closing of threads back by days, as if they had ended
// that long ago (test-only SQL: nothing in engram rewrites a thread).
func (e *env) age(days int, threads ...string) {
	e.t.Helper()
	_, err := e.db.Pool.Exec(context.Background(),
		`UPDATE threads SET closed_at = closed_at - make_interval(days => $2) WHERE tenant_id = 'acme' AND thread_id = ANY($1)`, threads, days)
	require.NoError(e.t, err)
}

// episodeOf is the episode of a thread.
func (e *env) episodeOf(thread string) memory.Record {
	e.t.Helper()
	var id uuid.UUID
	require.NoError(e.t, e.db.Pool.QueryRow(context.Background(),
		`SELECT episode_id FROM threads WHERE tenant_id = 'acme' AND thread_id = $1`, thread).Scan(&id))
	return e.get(id)
}

// get is a record as GET /v1/records/{id} answers it.
func (e *env) get(id uuid.UUID) memory.Record {
	e.t.Helper()
	status, body := e.do("GET", "/v1/records/"+id.String(), nil)
	require.Equal(e.t, http.StatusOK, status, string(body))
	var rec memory.Record
	require.NoError(e.t, json.Unmarshal(body, &rec))
	return rec
}

// staged reports whether a staged event is still there.
func (e *env) staged(id uuid.UUID) bool {
	e.t.Helper()
	var n int
	require.NoError(e.t, e.db.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM candidates WHERE tenant_id = 'acme' AND id = $1`, id).Scan(&n))
	return n == 1
}

// eventsOf are an episode's staged events, by the kind and text of each.
func (e *env) eventsOf(id uuid.UUID) map[uuid.UUID]memory.Event {
	e.t.Helper()
	evs, err := store.EpisodeEvents(context.Background(), e.db.Pool, "acme", []uuid.UUID{id})
	require.NoError(e.t, err)
	out := map[uuid.UUID]memory.Event{}
	for _, se := range evs {
		var ev memory.Event
		require.NoError(e.t, json.Unmarshal(se.Event, &ev))
		out[se.ID] = ev
	}
	return out
}

// pointsTo are the evt:// and record:// refs every live record points to:
// its provenance, a fact's evidence and, with timelines, an episode's
// timeline and tool graph.
func (e *env) pointsTo(timelines bool) (evts, recs map[string]string) {
	e.t.Helper()
	page, err := store.List(context.Background(), e.db.Pool, "acme", store.Filter{Limit: 1000})
	require.NoError(e.t, err)
	evts, recs = map[string]string{}, map[string]string{}
	add := func(owner memory.Record, ref string) {
		switch {
		case strings.HasPrefix(ref, "evt://"):
			evts[ref] = owner.ID.String()
		case strings.HasPrefix(ref, "record://"):
			recs[ref] = owner.ID.String()
		}
	}
	for _, r := range page.Records {
		for _, s := range r.Provenance.Sources {
			add(r, s.Ref)
		}
		var p struct {
			Evidence  []memory.Source        `json:"evidence"`
			Timeline  []memory.TimelineEntry `json:"timeline"`
			ToolGraph []map[string]any       `json:"tool_graph"`
		}
		require.NoError(e.t, json.Unmarshal(r.Payload, &p))
		for _, s := range p.Evidence {
			add(r, s.Ref)
		}
		if !timelines {
			continue
		}
		for _, t := range p.Timeline {
			add(r, t.Ref)
		}
		for _, g := range p.ToolGraph {
			ref, _ := g["ref"].(string)
			add(r, ref)
		}
	}
	return evts, recs
}

// resolves requires every evt:// and record:// a live record points to to
// name a staged event or a record.
func (e *env) resolves() {
	e.t.Helper()
	evts, recs := e.pointsTo(true)
	require.NotEmpty(e.t, evts)
	for ref, owner := range evts {
		require.True(e.t, e.staged(uuid.MustParse(strings.TrimPrefix(ref, "evt://"))), "%s of record %s is gone", ref, owner)
	}
	for ref, owner := range recs {
		id, _, _ := strings.Cut(strings.TrimPrefix(ref, "record://"), "?")
		_, err := store.Get(context.Background(), e.db.Pool, "acme", uuid.MustParse(id))
		require.NoError(e.t, err, "%s of record %s", ref, owner)
	}
}

// compressedPayload is the part of an episode's payload compression
// writes.
type compressedPayload struct {
	Summary      string                 `json:"summary"`
	CompressedAt *time.Time             `json:"compressed_at"`
	Timeline     []memory.TimelineEntry `json:"timeline"`
	ToolGraph    []map[string]any       `json:"tool_graph"`
}

func compressedOf(t *testing.T, r memory.Record) compressedPayload {
	t.Helper()
	var p compressedPayload
	require.NoError(t, json.Unmarshal(r.Payload, &p))
	return p
}

// fixEpisode is a fix of the linker error in dir: a probe nothing uses, a
// step that fails and is tried again, the fix and the build; with a fact
// the agent observed, when fact is set.
func fixEpisode(thread, dir string, fact bool) []map[string]any {
	evs := episode(thread, map[string]any{"os": "linux"}, "ld: cache mismatch in "+dir+"/obj.o", []map[string]any{
		step("shell", map[string]any{"command": "ls " + dir}, "obj.o main.o zebraprobe"+strings.ReplaceAll(thread, "-", "")),
		step("shell", map[string]any{"command": "rm -rf " + dir + "/cache"}, map[string]any{"exit_code": 1, "stderr": "error: busy"}),
		step("shell", map[string]any{"command": "rm -rf " + dir + "/cache"}, map[string]any{"exit_code": 0}),
		buildOK,
	}, "success")
	if fact {
		f := map[string]any{"kind": "fact", "agent_id": "coder", "thread_id": thread, "environment": map[string]any{"os": "linux"},
			"fact": map[string]any{"subject": "repo", "predicate": "linker_cache", "object": dir + "/cache"}}
		evs = append(evs[:len(evs)-1], f, evs[len(evs)-1])
	}
	return evs
}

// Old episodes a procedure and a plan were learned from are compressed:
// their timelines keep every error, the outcome, the steps the records
// stand on and the event a fact cites, plus a summary that retrieval
// finds; the other events are released; a second pass changes nothing; a
// pass from scratch over the compressed episodes learns exactly what it
// had; a young episode and one nobody learned from are left whole (issue
// 11, item 5).
func TestCompressionKeepsEveryCitedEvidence(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for i, th := range []string{"old-0", "old-1", "young"} {
		e.post(fixEpisode(th, fmt.Sprintf("/tmp/build-%d", i), th == "old-0"))
	}
	e.post([]map[string]any{
		{"kind": "user_input", "agent_id": "coder", "thread_id": "lonely", "text": "water the plants"},
		{"kind": "tool_call", "agent_id": "coder", "thread_id": "lonely", "tool": map[string]any{"name": "hose", "call_id": "h", "arguments": map[string]any{"on": true}}},
		{"kind": "outcome", "agent_id": "coder", "thread_id": "lonely", "outcome": map[string]any{"status": "success"}},
	})
	counts := e.consolidate()
	require.Equal(t, int64(1), counts["competence_created"], counts)
	require.Equal(t, int64(1), counts["plan_created"], counts)
	require.Zero(t, counts["episodes_compressed"], "nothing is old enough yet")
	procs, plans := e.procedures(), e.plans()
	require.Len(t, procs, 1)
	require.Len(t, plans, 1)

	old := []memory.Record{e.episodeOf("old-0"), e.episodeOf("old-1")}
	young, lonely := e.episodeOf("young"), e.episodeOf("lonely")
	before := map[uuid.UUID]map[uuid.UUID]memory.Event{}
	for _, ep := range old {
		before[ep.ID] = e.eventsOf(ep.ID)
	}
	evts, _ := e.pointsTo(false)
	require.Equal(t, []uuid.UUID{old[0].ID}, idsOf(e.layer(map[string]any{"text": "zebraprobeold0"}, retrieve.LayerEpisodic)), "the probe's output is searchable")

	e.age(40, "old-0", "old-1", "lonely")
	counts = e.consolidate()
	require.Equal(t, int64(2), counts["episodes_compressed"], counts)
	require.Positive(t, counts["events_released"], counts)
	require.Zero(t, counts["episodes"], counts)

	for _, ep := range old {
		got := e.get(ep.ID)
		require.Equal(t, ep.Version+1, got.Version)
		p := compressedOf(t, got)
		require.NotNil(t, p.CompressedAt)
		require.Contains(t, p.Summary, "Episode, success")
		require.Contains(t, p.Summary, "error: ld: cache mismatch in /tmp/build-")
		require.Contains(t, p.Summary, "steps: ")
		kept := map[string]bool{}
		for _, entry := range p.Timeline {
			kept[entry.Ref] = true
			if id, ok := strings.CutPrefix(entry.Ref, "evt://"); ok {
				require.True(t, e.staged(uuid.MustParse(id)), "a kept entry's event stays")
			}
		}
		for _, g := range p.ToolGraph {
			require.True(t, kept[g["ref"].(string)], "the tool graph names only kept events")
		}
		released := 0
		for id, ev := range before[ep.ID] {
			ref := "evt://" + id.String()
			must := ev.Kind == memory.ErrorEvent || ev.Kind == memory.Outcome || evts[ref] != ""
			if ev.Tool != nil {
				var args map[string]any
				_ = json.Unmarshal(ev.Tool.Arguments, &args)
				cmd, _ := args["command"].(string)
				res := string(ev.Tool.Result)
				switch {
				case strings.HasPrefix(cmd, "ls "), strings.Contains(res, "zebraprobe"):
					require.False(t, kept[ref], "the unused probe is released: %s", ref)
				case strings.HasPrefix(cmd, "rm ") || strings.Contains(res, "exit_code") || (ev.Tool.Name == "make" && ev.Tool.CallID != "c0"):
					must = true // the fix, its failed try and the build that worked: the steps records stand on
				}
			}
			if ev.Kind == memory.FactEvent {
				require.NotEmpty(t, evts[ref], "a live fact cites its event")
			}
			if must {
				require.True(t, kept[ref], "%s %s stays: %+v", ev.Kind, ref, ev.Tool)
			}
			if !kept[ref] {
				released++
				require.False(t, e.staged(id), "a released event is deleted: %s %s", ev.Kind, ref)
			}
		}
		require.Positive(t, released)
		audit, err := store.Audit(context.Background(), e.db.Pool, "acme", ep.ID)
		require.NoError(t, err)
		last := audit[len(audit)-1]
		require.Equal(t, revise.ActionCompress, last.Action)
		require.Contains(t, last.Rationale, fmt.Sprintf("kept %d of %d events: 1 error, 1 outcome, ", len(p.Timeline), len(compressedOf(t, ep).Timeline)))
		require.Contains(t, last.Rationale, "more than 30 days ago")
		require.Contains(t, last.Rationale, fmt.Sprintf("released %d staged events", released))
	}
	for _, ep := range []memory.Record{young, lonely} {
		got := e.get(ep.ID)
		require.Equal(t, ep.Version, got.Version, "left whole")
		require.Nil(t, compressedOf(t, got).CompressedAt)
		for id := range e.eventsOf(ep.ID) {
			require.True(t, e.staged(id))
		}
	}
	e.resolves()

	// Retrieval finds a compressed episode by its summary, no longer by a
	// released event.
	require.Empty(t, idsOf(e.layer(map[string]any{"text": "zebraprobeold0"}, retrieve.LayerEpisodic)), "released events are not searchable")
	found := e.layer(map[string]any{"text": "episode events calls"}, retrieve.LayerEpisodic)
	require.ElementsMatch(t, []uuid.UUID{old[0].ID, old[1].ID}, idsOf(found), "found by their summaries")

	// A second pass changes nothing; nor does a pass from scratch, which
	// learns from the compressed episodes exactly what it had learned.
	require.Equal(t, map[string]int64{"episodes": 0}, e.consolidate())
	e.run.cursor = nil
	counts = e.consolidate()
	// (Duplicate resolution compares the records again from scratch too,
	// and finds nothing to merge.)
	delete(counts, "duplicates_compared")
	delete(counts, "duplicates_unembedded")
	// The compressed episodes' features are learned again from what they
	// kept (a compression is a new version of the episode); the others'
	// are read.
	require.Equal(t, map[string]int64{"episodes": 4, "competence_unchanged": 1, "plan_unchanged": 1,
		"features_learned": 2, "features_read": 2}, counts)
	for i, r := range e.procedures() {
		require.Equal(t, procs[i].ID, r.ID)
		require.Equal(t, procs[i].Version, r.Version)
	}
	for i, r := range e.plans() {
		require.Equal(t, plans[i].ID, r.ID)
		require.Equal(t, plans[i].Version, r.Version)
	}
	for _, ep := range old {
		require.Equal(t, ep.Version+1, e.get(ep.ID).Version, "compressed once")
	}
	e.resolves()
	require.Equal(t, 2.0, e.metric("engram_consolidation_episodes_compressed_total"))
	require.Positive(t, e.metric("engram_consolidation_events_released_total"))
}

// Compression is off when the operator says so, and an episode must be
// older than the configured age.
func TestCompressionOffAndAge(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for i, th := range []string{"a", "b"} {
		e.post(fixEpisode(th, fmt.Sprintf("/tmp/x-%d", i), false))
	}
	e.consolidate()
	e.age(3, "a", "b")
	wr := revise.New(e.db.Pool, revise.Config{})
	off := consolidate.New(consolidate.Config{DB: e.db.Pool, Writer: wr, Compress: consolidate.Compression{After: time.Hour, Off: true}})
	run := &memRun{}
	require.NoError(t, off.Consolidate(context.Background(), run))
	require.Zero(t, run.counts["episodes_compressed"])
	require.Nil(t, compressedOf(t, e.episodeOf("a")).CompressedAt)

	week := consolidate.New(consolidate.Config{DB: e.db.Pool, Writer: wr, Compress: consolidate.Compression{After: 7 * 24 * time.Hour}})
	require.NoError(t, week.Consolidate(context.Background(), run))
	require.Zero(t, run.counts["episodes_compressed"], "three days is not a week")

	// Two days later, by the consolidator's clock.
	later := consolidate.New(consolidate.Config{DB: e.db.Pool, Writer: wr, Compress: consolidate.Compression{After: 4 * 24 * time.Hour},
		Now: func() time.Time { return time.Now().Add(48 * time.Hour) },
		Summarise: func(_ context.Context, ep consolidate.Episode) (string, error) {
			return "fixed " + signature.Of(ep.Trigger) + " with ghp_abcdefghijklmnopqrstuvwxyz0123456789", nil
		}})
	require.NoError(t, later.Consolidate(context.Background(), run))
	require.Equal(t, int64(2), run.counts["episodes_compressed"])
	require.Equal(t, "fixed ld: cache mismatch in <path> with [REDACTED:github_token]", compressedOf(t, e.episodeOf("a")).Summary,
		"the summariser's words, redacted")
}

// metric is the value of a counter without labels.
func (e *env) metric(name string) float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	require.NoError(e.t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

func idsOf(recs []memory.Record) []uuid.UUID {
	var out []uuid.UUID
	for _, r := range recs {
		out = append(out, r.ID)
	}
	return out
}

// The write path's own guarantees, whatever its caller asks: a caller that
// names no step still keeps the errors, the outcome and the event a live
// fact cites; an episode is compressed once, and only when closed; outside
// a compression the database refuses to drop its entries.
func TestCompressOpKeepsWhatLiveRecordsCite(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.post(fixEpisode("done", "/tmp/d", true))
	e.post([]map[string]any{{"kind": "user_input", "agent_id": "coder", "thread_id": "open", "text": "still going"}})
	ep, open := e.episodeOf("done"), e.episodeOf("open")
	evs := e.eventsOf(ep.ID)
	evts, _ := e.pointsTo(false)
	wr := revise.New(e.db.Pool, revise.Config{})
	ctx := context.Background()
	compress := func(id uuid.UUID) (revise.Compressed, error) {
		var out revise.Compressed
		err := wr.InTx(ctx, func(ctx context.Context, tx *revise.Tx) error {
			var err error
			out, err = tx.Compress(ctx, "acme", id, 0, revise.Compaction{Summary: "a test"}, revise.Change{Actor: "test"})
			return err
		})
		return out, err
	}

	// The database refuses to drop an episode's entries outside a
	// compression.
	_, err := e.db.Pool.Exec(ctx, `DELETE FROM episode_entries WHERE record_id = $1`, ep.ID)
	require.ErrorContains(t, err, "append-only")

	out, err := compress(ep.ID)
	require.NoError(t, err)
	require.Equal(t, ep.Version+1, out.Record.Version)
	kept := map[string]bool{}
	for _, entry := range compressedOf(t, out.Record).Timeline {
		kept[entry.Ref] = true
	}
	var fact bool
	for id, ev := range evs {
		ref := "evt://" + id.String()
		cited := evts[ref] != ""
		fact = fact || (ev.Kind == memory.FactEvent && cited)
		want := ev.Kind == memory.ErrorEvent || ev.Kind == memory.Outcome || cited
		require.Equal(t, want, kept[ref], "%s %s", ev.Kind, ref)
		require.Equal(t, want, e.staged(id), "%s %s", ev.Kind, ref)
	}
	require.True(t, fact, "the fact's event is cited and kept")
	require.Equal(t, len(evs)-out.Kept+out.Other, out.Released)
	e.resolves()

	var ce *revise.ConflictError
	_, err = compress(ep.ID)
	require.ErrorAs(t, err, &ce)
	require.Equal(t, revise.CodeNotAllowed, ce.Code, "compressed once")
	_, err = compress(open.ID)
	require.ErrorAs(t, err, &ce)
	require.Equal(t, revise.CodeNotAllowed, ce.Code, "an open episode is not compressed")
	require.Equal(t, open.Version, e.get(open.ID).Version)
}
