package revise

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// TimelineAppend is what one batch adds to one episode.
type TimelineAppend struct {
	EpisodeID uuid.UUID
	Entries   []memory.TimelineEntry
	// Texts are what lexical search matches each of Entries on (an event's
	// full text, say); with none, an entry is matched on its summary.
	Texts     []string
	ToolGraph []map[string]any
	// Tags are added to the episode's, once each, up to
	// [memory.MaxEpisodeTags].
	Tags        []string
	Outcome     string             // set once, when the batch closes the episode
	Sensitivity memory.Sensitivity // the episode's sensitivity rises to at least this
}

// AppendTimelines extends many episodes at once, for the policy plane's
// batches, set-based whatever their number: one statement for the
// entries, one for the episodes whose outcome, sensitivity or tags change,
// one for the audit entries (substrate RFC §5: episodes only grow).
func (t *Tx) AppendTimelines(ctx context.Context, tenant string, appends []TimelineAppend, ch Change) error {
	if len(appends) == 0 {
		return nil
	}
	if err := checkChange(ch); err != nil {
		return err
	}
	var (
		ids     []uuid.UUID
		entries []store.Entry
		revs    = make([]store.EpisodeRevision, 0, len(appends))
	)
	for _, a := range appends {
		first := len(entries)
		if a.Texts != nil && len(a.Texts) != len(a.Entries) {
			return fmt.Errorf("append to episode %s: %d texts for %d entries", a.EpisodeID, len(a.Texts), len(a.Entries))
		}
		ids = append(ids, a.EpisodeID)
		revs = append(revs, store.EpisodeRevision{ID: a.EpisodeID, Outcome: a.Outcome, Sensitivity: a.Sensitivity, Tags: a.Tags})
		for i, e := range a.Entries {
			b, err := json.Marshal(e)
			if err != nil {
				return fmt.Errorf("encode timeline: %w", err)
			}
			text := e.Summary
			if a.Texts != nil {
				text = a.Texts[i]
			}
			entries = append(entries, store.Entry{EpisodeID: a.EpisodeID, Part: "timeline", Entry: b, Text: text})
		}
		for _, g := range a.ToolGraph {
			b, err := json.Marshal(g)
			if err != nil {
				return fmt.Errorf("encode tool graph: %w", err)
			}
			entries = append(entries, store.Entry{EpisodeID: a.EpisodeID, Part: "tool_graph", Entry: b})
		}
		if err := t.sealEntries(ctx, tenant, a.Sensitivity, entries[first:]); err != nil {
			return err
		}
	}
	if len(entries) > 0 {
		n, err := store.InsertEntries(ctx, t.tx, tenant, entries)
		if err != nil {
			return err
		}
		if n != len(entries) {
			return conflict(CodeNotLive, ids, "some of the episodes are not open")
		}
	}
	if err := store.ReviseEpisodes(ctx, t.tx, tenant, revs, memory.MaxEpisodeTags); err != nil {
		return written(tenant, memory.Record{}, err)
	}
	return store.AuditEach(ctx, t.tx, tenant, ids, ActionAppend, ch.Actor, ch.Rationale)
}
