package revise

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/store"
)

// ActionCompress is the audit action of an episode's compression.
const ActionCompress = "compress"

// evtPrefix begins the ref of a timeline entry whose event is staged.
const evtPrefix = "evt://"

// Compaction is what the caller of [Tx.Compress] knows of an episode that
// the write path does not: which steps the records derived from it stand
// on, and what it was, in a few words.
type Compaction struct {
	// Steps are the staged events of the steps records derived from the
	// episode cite (for consolidation, the events behind a procedure's or
	// a plan's steps): their timeline entries stay.
	Steps []uuid.UUID
	// Summary says what the episode was; required.
	Summary string
}

// Compressed is what [Tx.Compress] did: the episode as it is now, and what
// its timeline kept and released.
type Compressed struct {
	Record memory.Record
	// Entries is how many timeline entries the episode had; Kept how many
	// stay, of which Errors are errors, Outcomes outcomes, Cited events a
	// live record points to, Steps the steps of [Compaction.Steps] and
	// Other entries that name no staged event.
	Entries, Kept                         int
	Errors, Outcomes, Cited, Steps, Other int
	// Released is how many staged events were deleted.
	Released int
}

// Rationale is the audit rationale of a compression: what it kept, and
// why, and what it released.
func (c Compressed) Rationale() string {
	var why []string
	for _, n := range []struct {
		n        int
		one, all string
	}{
		{c.Errors, "error", "errors"}, {c.Outcomes, "outcome", "outcomes"}, {c.Cited, "event cited by live records", "events cited by live records"},
		{c.Steps, "cited step", "cited steps"}, {c.Other, "entry naming no staged event", "entries naming no staged event"},
	} {
		switch {
		case n.n == 1:
			why = append(why, "1 "+n.one)
		case n.n > 1:
			why = append(why, fmt.Sprintf("%d %s", n.n, n.all))
		}
	}
	if len(why) == 0 {
		why = []string{"nothing"}
	}
	return fmt.Sprintf("kept %d of %d events: %s; released %d staged events", c.Kept, c.Entries, strings.Join(why, ", "), c.Released)
}

// timelineItem is one entry of an episode's timeline or tool graph: in
// its payload (seq 0) or appended.
type timelineItem struct {
	raw       json.RawMessage
	seq       int64
	part      string
	ref, kind string
}

// Compress rewrites a closed episode as its next version, compressed
// (substrate RFC §5: old episodes already used as evidence are compressed;
// §15.7). Its timeline keeps its errors and outcomes, every entry whose
// staged event a live record points to (provenance or a fact's evidence),
// the entries of c.Steps and the entries that name no staged event; the
// payload gains c.Summary and compressed_at. The staged events of the other
// entries are released — deleted from the staging area, with their timeline
// and tool-graph entries, so they are no longer searchable — unless a live
// record points to one. The version log keeps the episode's earlier
// versions, whose references to released events no longer resolve. An
// episode is compressed once: again is [CodeNotAllowed], as is an open
// one. version, when non-zero, is the version the caller read. One
// transaction, audited [ActionCompress] with what was kept and released.
func (t *Tx) Compress(ctx context.Context, tenant string, id uuid.UUID, version int, c Compaction, ch Change) (Compressed, error) {
	var out Compressed
	if err := checkChange(ch); err != nil {
		return out, err
	}
	if strings.TrimSpace(c.Summary) == "" {
		return out, &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: "/summary", Message: "is required: what the episode was"}}}
	}
	rec, err := t.lockLive(ctx, tenant, id, version)
	if err != nil {
		return out, err
	}
	if rec.Type != memory.Episodic {
		return out, conflict(CodeNotAllowed, []uuid.UUID{id}, "only episodes are compressed, not %s", rec.Type.ARecord())
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal(rec.Payload, &p); err != nil {
		return out, fmt.Errorf("decode episode: %w", err)
	}
	if p["compressed_at"] != nil {
		return out, conflict(CodeNotAllowed, []uuid.UUID{id}, "episode %s is compressed already", id)
	}
	closed, err := store.EpisodeClosed(ctx, t.tx, tenant, id)
	if err != nil {
		return out, err
	}
	if !closed {
		return out, conflict(CodeNotAllowed, []uuid.UUID{id}, "episode %s is not closed: only closed episodes are compressed", id)
	}

	items, err := episodeItems(ctx, t, tenant, id, p)
	if err != nil {
		return out, err
	}
	var refs []string
	for _, it := range items {
		if strings.HasPrefix(it.ref, evtPrefix) {
			refs = append(refs, it.ref)
		}
	}
	citedRefs, err := store.CitedRefs(ctx, t.tx, tenant, refs)
	if err != nil {
		return out, err
	}
	cited := make(map[string]bool, len(citedRefs))
	for _, r := range citedRefs {
		cited[r] = true
	}
	steps := make(map[string]bool, len(c.Steps))
	for _, s := range c.Steps {
		steps[evtPrefix+s.String()] = true
	}

	// Why each ref stays; an entry whose ref stays, stays, whatever part it
	// is in; the staged events of the others are released.
	why := map[string]*int{}
	for _, it := range items {
		if it.part != "timeline" {
			continue
		}
		var n *int
		switch {
		case it.kind == string(memory.ErrorEvent):
			n = &out.Errors
		case it.kind == string(memory.Outcome):
			n = &out.Outcomes
		case cited[it.ref]:
			n = &out.Cited
		case steps[it.ref]:
			n = &out.Steps
		case !strings.HasPrefix(it.ref, evtPrefix):
			n = &out.Other
		}
		if n != nil && why[it.ref] == nil {
			why[it.ref] = n
		}
	}
	gone := map[string]bool{}
	for _, it := range items {
		if it.part == "timeline" && why[it.ref] == nil {
			gone[it.ref] = true
		}
	}
	stays := func(it timelineItem) bool { return !gone[it.ref] }
	var (
		seqs     []int64
		released []uuid.UUID
		seen     = map[string]bool{}
		inline   = map[string][]json.RawMessage{}
	)
	for _, it := range items {
		if it.part == "timeline" {
			out.Entries++
			if stays(it) {
				out.Kept++
				if n := why[it.ref]; n != nil {
					*n++
				} else {
					out.Other++
				}
			}
		}
		switch {
		case !stays(it) && it.seq != 0:
			seqs = append(seqs, it.seq)
		case stays(it) && it.seq == 0:
			inline[it.part] = append(inline[it.part], it.raw)
		}
		if !stays(it) && !seen[it.ref] {
			seen[it.ref] = true
			if id, err := uuid.Parse(strings.TrimPrefix(it.ref, evtPrefix)); err == nil {
				released = append(released, id)
			}
		}
	}
	for _, part := range []string{"timeline", "tool_graph"} {
		if p[part] == nil && part != "timeline" {
			continue
		}
		list := inline[part]
		if list == nil {
			list = []json.RawMessage{}
		}
		if p[part], err = json.Marshal(list); err != nil {
			return out, fmt.Errorf("encode episode %s: %w", part, err)
		}
	}
	now := t.w.clock()
	p["summary"], _ = json.Marshal(strings.TrimSpace(c.Summary))
	p["compressed_at"], _ = json.Marshal(now)
	if rec.Payload, err = json.Marshal(p); err != nil {
		return out, fmt.Errorf("encode episode: %w", err)
	}
	if err := t.w.validate(rec, ""); err != nil {
		return out, err
	}
	rec.Version++
	rec.UpdatedAt = now
	if rec, err = t.sealed(ctx, tenant, rec); err != nil {
		return out, err
	}
	n, err := store.CompressEpisode(ctx, t.tx, tenant, rec, seqs, released)
	if err != nil {
		return out, written(tenant, rec, err)
	}
	out.Released = int(n)
	rationale := out.Rationale()
	if ch.Rationale != "" {
		rationale += ": " + ch.Rationale
	}
	if err := t.audit(ctx, tenant, rec, ActionCompress, ch.because(rationale, ch.Evidence)); err != nil {
		return out, err
	}
	out.Record, err = t.get(ctx, tenant, id)
	return out, err
}

// episodeItems are an episode's timeline and tool-graph entries: those of
// its payload, then those appended, in order.
func episodeItems(ctx context.Context, t *Tx, tenant string, id uuid.UUID, p map[string]json.RawMessage) ([]timelineItem, error) {
	var items []timelineItem
	for _, part := range []string{"timeline", "tool_graph"} {
		var list []json.RawMessage
		if raw := p[part]; raw != nil {
			if err := json.Unmarshal(raw, &list); err != nil {
				return nil, fmt.Errorf("decode episode %s: %w", part, err)
			}
		}
		for _, raw := range list {
			items = append(items, item(raw, 0, part))
		}
	}
	parts, err := store.EpisodeParts(ctx, t.tx, tenant, id)
	if err != nil {
		return nil, err
	}
	for _, e := range parts {
		if e.Entry, err = t.w.cfg.Sealer.Open(ctx, tenant, e.Entry); err != nil {
			return nil, err
		}
		items = append(items, item(e.Entry, e.Seq, e.Part))
	}
	return items, nil
}

func item(raw json.RawMessage, seq int64, part string) timelineItem {
	var e struct {
		Ref       string `json:"ref"`
		EventKind string `json:"event_kind"`
	}
	_ = json.Unmarshal(raw, &e)
	return timelineItem{raw: raw, seq: seq, part: part, ref: e.Ref, kind: e.EventKind}
}
