package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

// A thread is a task or conversation of an agent. While it runs it has one
// open episode, its append-only timeline (substrate RFC §5), and one
// working-memory record (§6); an outcome closes both, and the thread's next
// event opens the next generation.

// startThread opens the next generation of a thread with a new episode and
// working-memory record.
func startThread(ctx context.Context, tx *revise.Tx, tenant, threadID, agentID string, episode, working memory.Record, ch revise.Change) (store.Thread, error) {
	ep, err := tx.Create(ctx, tenant, episode, ch)
	if err != nil {
		return store.Thread{}, fmt.Errorf("create episode: %w", err)
	}
	wm, err := tx.Create(ctx, tenant, working, ch)
	if err != nil {
		return store.Thread{}, fmt.Errorf("create working memory: %w", err)
	}
	gen, err := store.InsertThread(ctx, tx.Exec(), tenant, threadID, agentID, ep.ID, wm.ID)
	if err != nil {
		return store.Thread{}, err
	}
	return store.Thread{ThreadID: threadID, Generation: gen, AgentID: agentID, EpisodeID: ep.ID, WorkingID: &wm.ID, Status: "open"}, nil
}

// threadStart is a thread a batch opens, with its first episode and
// working-memory record.
type threadStart struct {
	threadID, agentID string
	episode, working  memory.Record
}

// startThreads opens many threads at once, each as [startThread] does: the
// records through the write path in one set-based step
// ([revise.Tx.CreateMany]), the threads in one statement.
func startThreads(ctx context.Context, tx *revise.Tx, tenant string, starts []threadStart, ch revise.Change) (map[string]store.Thread, error) {
	if len(starts) == 0 {
		return nil, nil
	}
	recs := make([]memory.Record, 0, 2*len(starts))
	for _, s := range starts {
		recs = append(recs, s.episode, s.working)
	}
	created, err := tx.CreateMany(ctx, tenant, recs, ch)
	if err != nil {
		return nil, fmt.Errorf("create episodes and working memory: %w", err)
	}
	news := make([]store.NewThread, len(starts))
	for i, s := range starts {
		news[i] = store.NewThread{ThreadID: s.threadID, AgentID: s.agentID, EpisodeID: created[2*i].ID, Working: created[2*i+1].ID}
	}
	gens, err := store.InsertThreads(ctx, tx.Exec(), tenant, news)
	if err != nil {
		return nil, err
	}
	out := make(map[string]store.Thread, len(starts))
	for _, n := range news {
		working := n.Working
		out[n.ThreadID] = store.Thread{ThreadID: n.ThreadID, Generation: gens[n.ThreadID], AgentID: n.AgentID,
			EpisodeID: n.EpisodeID, WorkingID: &working, Status: "open"}
	}
	return out, nil
}

// closeThread ends a thread whose episode has its outcome: the working
// memory's last state is appended to the episode as a reference to its
// final version, and the working memory is discarded (§6).
func closeThread(ctx context.Context, tx *revise.Tx, tenant string, t store.Thread, now time.Time, ch revise.Change) error {
	if t.WorkingID != nil {
		wm, err := tx.Get(ctx, tenant, *t.WorkingID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err == nil && wm.Live() {
			var p memory.WorkingPayload
			_ = json.Unmarshal(wm.Payload, &p)
			summary := strings.TrimSpace(p.State + ": " + p.ContextSummary)
			entry := memory.TimelineEntry{T: now.UTC().Truncate(time.Microsecond), EventKind: "working_memory",
				Ref: fmt.Sprintf("record://%s?version=%d", wm.ID, wm.Version), Summary: strings.TrimSuffix(summary, ":")}
			// The entry carries the working memory's words: it is sealed as
			// the working memory is, at its sensitivity (substrate RFC §15.9).
			app := revise.TimelineAppend{EpisodeID: t.EpisodeID, Entries: []memory.TimelineEntry{entry}, Sensitivity: wm.Sensitivity}
			if err := tx.AppendTimelines(ctx, tenant, []revise.TimelineAppend{app}, ch); err != nil {
				return err
			}
			if _, err := tx.Delete(ctx, tenant, wm.ID, ch); err != nil {
				return fmt.Errorf("discard working memory: %w", err)
			}
		}
	}
	return store.CloseThread(ctx, tx.Exec(), tenant, t.ThreadID, t.Generation)
}
