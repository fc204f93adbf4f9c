package ingest_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// timelineRefs returns, for every event of thread, how many times its
// candidate appears across the thread's episodes' timelines.
func (b *bundle) timelineRefs(t *testing.T, thread string) map[string]int {
	t.Helper()
	rows, err := b.db.Pool.Query(b.ctx, `
		SELECT e.entry ->> 'ref' FROM episode_entries e
		JOIN records r ON r.tenant_id = e.tenant_id AND r.id = e.record_id
		WHERE r.tenant_id = 'acme' AND r.type = 'episodic' AND r.thread_id = $1
			AND e.part = 'timeline' AND e.entry ->> 'ref' LIKE 'evt://%'`, thread)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var ref string
		require.NoError(t, rows.Scan(&ref))
		out[ref]++
	}
	require.NoError(t, rows.Err())
	return out
}

// An outcome in the middle of a batch closes the thread's episode; the
// events after it open the next one and appear there once (issue 9, item 4:
// they were appended twice, once with the flushed outcome's state and once
// at the end of the batch).
func TestEventsAfterAnOutcomeAppearOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) string { return t0.Add(time.Duration(s) * time.Second).Format(time.RFC3339) }
	staged := b.send(t,
		ev("observation", "t1", map[string]any{"text": "first", "time": at(0)}),
		ev("outcome", "t1", map[string]any{"outcome": map[string]any{"status": "success"}, "time": at(1)}),
		ev("observation", "t1", map[string]any{"text": "second", "time": at(2)}),
		ev("observation", "t1", map[string]any{"text": "third", "time": at(3)}),
	)
	b.drain(t)

	refs := b.timelineRefs(t, "t1")
	require.Len(t, refs, 4)
	for _, s := range staged {
		require.Equal(t, 1, refs["evt://"+s.ID.String()], "event %s", s.ID)
	}
	_, first, _ := b.candidate(t, staged[0].ID)
	_, third, _ := b.candidate(t, staged[2].ID)
	require.NotEqual(t, first[0], third[0], "the events after the outcome open a new episode")
	_, p := b.episode(t, third[0])
	require.Len(t, p.Timeline, 2)
}

// Any interleaving of events and outcomes over a few threads, sent in
// batches of any size and classified in batches of any size, leaves each
// event exactly once across its thread's episodes.
func TestEveryEventOnceAcrossEpisodes(t *testing.T) {
	t.Parallel()
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 9))
			b := setup(t, "", func(c *ingest.WorkerConfig) { c.BatchSize = 1 + rng.IntN(12) })
			threads := []string{"a", "b", "c"}
			t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
			var events []map[string]any
			for i := range 60 + rng.IntN(60) {
				th := threads[rng.IntN(len(threads))]
				at := t0.Add(time.Duration(i) * time.Second).Format(time.RFC3339Nano)
				if rng.IntN(4) == 0 {
					events = append(events, ev("outcome", th, map[string]any{"outcome": map[string]any{"status": "success"}, "time": at}))
				} else {
					events = append(events, ev("observation", th, map[string]any{"text": fmt.Sprintf("step %d", i), "time": at}))
				}
			}
			want := map[string][]uuid.UUID{}
			for len(events) > 0 {
				n := min(len(events), 1+rng.IntN(15))
				staged := b.send(t, events[:n]...)
				for i, s := range staged {
					th := events[i]["thread_id"].(string)
					want[th] = append(want[th], s.ID)
				}
				events = events[n:]
				if rng.IntN(2) == 0 {
					b.drain(t)
				}
			}
			b.drain(t)
			for _, th := range threads {
				refs := b.timelineRefs(t, th)
				require.Len(t, refs, len(want[th]), "thread %s", th)
				for _, id := range want[th] {
					require.Equal(t, 1, refs["evt://"+id.String()], "thread %s, event %s", th, id)
				}
			}
		})
	}
}

// A batch that opens many threads at once — two events each, some closed
// by an outcome and opened again within the batch — leaves each event
// once, in order, in its thread's episodes, and each thread one open
// generation with its working memory.
func TestManyNewThreadsInOneBatch(t *testing.T) {
	t.Parallel()
	b := setup(t, "", func(c *ingest.WorkerConfig) { c.BatchSize = 1000 })
	const threads = 150
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	var events []map[string]any
	for step := range 3 {
		for i := range threads {
			th := fmt.Sprintf("t%d", i)
			at := t0.Add(time.Duration(step*threads+i) * time.Millisecond).Format(time.RFC3339Nano)
			if step == 1 && i%3 == 0 {
				events = append(events, ev("outcome", th, map[string]any{"outcome": map[string]any{"status": "success"}, "time": at}))
				continue
			}
			events = append(events, ev("observation", th, map[string]any{"text": fmt.Sprintf("step %d", step), "time": at}))
		}
	}
	staged := b.send(t, events...)
	b.drain(t)

	want := map[string][]string{}
	for i, s := range staged {
		th := events[i]["thread_id"].(string)
		want[th] = append(want[th], "evt://"+s.ID.String())
	}
	for i := range threads {
		th := fmt.Sprintf("t%d", i)
		refs := b.timelineRefs(t, th)
		require.Len(t, refs, len(want[th]), "thread %s", th)
		for _, ref := range want[th] {
			require.Equal(t, 1, refs[ref], "thread %s, event %s", th, ref)
		}
		thread, err := store.LatestThread(b.ctx, b.db.Pool, "acme", th)
		require.NoError(t, err)
		require.Equal(t, "open", thread.Status)
		wantGen := 1
		if i%3 == 0 {
			wantGen = 2 // closed by its outcome, opened again by the next event
		}
		require.Equal(t, wantGen, thread.Generation, "thread %s", th)
		_, p := b.episode(t, thread.EpisodeID)
		last := want[th][len(want[th])-1]
		require.Equal(t, last, p.Timeline[len(p.Timeline)-1].Ref, "thread %s: in order", th)
		wm, err := store.Get(b.ctx, b.db.Pool, "acme", *thread.WorkingID)
		require.NoError(t, err)
		require.Equal(t, memory.Active, wm.Status)
	}
}
