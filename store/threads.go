package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/memory"
)

// Thread is a task or conversation of an agent, with its open episode and
// working memory (substrate RFC §5, §6).
type Thread struct {
	ThreadID   string     `json:"thread_id"`
	Generation int        `json:"generation"`
	AgentID    string     `json:"agent_id"`
	EpisodeID  uuid.UUID  `json:"episode_id"`
	WorkingID  *uuid.UUID `json:"working_id,omitempty"`
	Status     string     `json:"status"`
}

const openThreadsSQL = `
SELECT thread_id, generation, agent_id, episode_id, working_id, status
FROM threads WHERE tenant_id = $1 AND thread_id = ANY($2) AND status = 'open'`

// OpenThreads returns the open threads among ids, by thread id.
func (s *Store) OpenThreads(ctx context.Context, tenant string, ids []string) (map[string]Thread, error) {
	rows, err := s.db.Query(ctx, openThreadsSQL, tenant, ids)
	if err != nil {
		return nil, fmt.Errorf("read threads: %w", err)
	}
	ts, err := pgx.CollectRows(rows, scanThread)
	if err != nil {
		return nil, fmt.Errorf("read threads: %w", err)
	}
	out := make(map[string]Thread, len(ts))
	for _, t := range ts {
		out[t.ThreadID] = t
	}
	return out, nil
}

func scanThread(row pgx.CollectableRow) (Thread, error) {
	var t Thread
	err := row.Scan(&t.ThreadID, &t.Generation, &t.AgentID, &t.EpisodeID, &t.WorkingID, &t.Status)
	return t, err
}

const threadSQL = `
SELECT thread_id, generation, agent_id, episode_id, working_id, status
FROM threads WHERE tenant_id = $1 AND thread_id = $2
ORDER BY generation DESC LIMIT 1`

// LatestThread returns the newest generation of a thread, open or closed.
func (s *Store) LatestThread(ctx context.Context, tenant, threadID string) (Thread, error) {
	rows, err := s.db.Query(ctx, threadSQL, tenant, threadID)
	if err != nil {
		return Thread{}, fmt.Errorf("read thread: %w", err)
	}
	t, err := pgx.CollectExactlyOneRow(rows, scanThread)
	if err != nil {
		if err == pgx.ErrNoRows {
			return Thread{}, ErrNotFound
		}
		return Thread{}, fmt.Errorf("read thread: %w", err)
	}
	return t, nil
}

const insertThreadSQL = `
INSERT INTO threads (tenant_id, thread_id, generation, agent_id, episode_id, working_id, status)
SELECT $1, $2, COALESCE(max(generation), 0) + 1, $3, $4, $5, 'open' FROM threads WHERE tenant_id = $1 AND thread_id = $2
RETURNING generation`

// StartThread opens a thread with a new episode and working-memory record.
// Call it on a store over a transaction.
func (s *Store) StartThread(ctx context.Context, tenant, threadID, agentID string, episode, working memory.Record, ch Change) (Thread, error) {
	ep, err := s.Create(ctx, tenant, episode, ch)
	if err != nil {
		return Thread{}, fmt.Errorf("create episode: %w", err)
	}
	wm, err := s.Create(ctx, tenant, working, ch)
	if err != nil {
		return Thread{}, fmt.Errorf("create working memory: %w", err)
	}
	t := Thread{ThreadID: threadID, AgentID: agentID, EpisodeID: ep.ID, WorkingID: &wm.ID, Status: "open"}
	if err := s.db.QueryRow(ctx, insertThreadSQL, tenant, threadID, agentID, ep.ID, wm.ID).Scan(&t.Generation); err != nil {
		return Thread{}, fmt.Errorf("open thread: %w", err)
	}
	return t, nil
}

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

// insertEntriesSQL appends timeline and tool-graph entries to episodes that
// are open (live), in the order given, each timeline entry with the
// tsvector of its text (stripped: lexical search counts presence, never
// positions).
const insertEntriesSQL = `
INSERT INTO episode_entries (tenant_id, record_id, part, entry, tsv)
SELECT $1, u.record_id, u.part, u.entry,
	CASE WHEN u.part = 'timeline' THEN nullif(strip(to_tsvector('english', u.text)), '') END
FROM unnest($2::uuid[], $3::text[], $4::jsonb[], $5::text[]) WITH ORDINALITY AS u(record_id, part, entry, text, ord)
JOIN records r ON r.tenant_id = $1 AND r.id = u.record_id AND r.type = 'episodic' AND r.status IN ('active', 'contested')
ORDER BY u.ord`

// reviseEpisodesSQL sets the outcome of the episodes a batch closes, raises
// the sensitivity of those that received more sensitive events and adds the
// tags they brought ($6: a JSON array per episode) that the episode lacks,
// up to $7 in all: a revision, with its version and snapshot, only where
// something changed.
const reviseEpisodesSQL = `
WITH u AS (
	SELECT u.id, u.outcome, u.sensitivity, array_position($5::text[], u.sensitivity) - 1 > r.sensitivity_rank AS raise,
		ARRAY(SELECT j.tag FROM jsonb_array_elements_text(u.tags) WITH ORDINALITY AS j(tag, ord)
			WHERE j.tag <> ALL (r.tags) GROUP BY j.tag ORDER BY min(j.ord)
			LIMIT greatest($7 - cardinality(r.tags), 0)) AS added
	FROM unnest($2::uuid[], $3::text[], $4::text[], $6::jsonb[]) AS u(id, outcome, sensitivity, tags)
	JOIN records r ON r.tenant_id = $1 AND r.id = u.id AND r.type = 'episodic'
)
UPDATE records r SET
	payload = CASE WHEN u.outcome <> '' THEN r.payload || jsonb_build_object('outcome', u.outcome) ELSE r.payload END,
	sensitivity = CASE WHEN u.raise THEN u.sensitivity ELSE r.sensitivity END,
	tags = r.tags || u.added,
	version = r.version + 1,
	updated_at = clock_timestamp()
FROM u
WHERE r.tenant_id = $1 AND r.id = u.id AND (u.outcome <> '' OR u.raise OR cardinality(u.added) > 0)`

const auditAppendsSQL = `
INSERT INTO audit_log (tenant_id, record_id, action, actor, rationale)
SELECT $1, u.id, 'append', $3, $4 FROM unnest($2::uuid[]) AS u(id)`

// AppendTimelines extends many episodes at once, for the policy plane's
// batches: one statement for the entries, one for the episodes whose
// outcome, sensitivity or tags change, one for the audit entries.
func (s *Store) AppendTimelines(ctx context.Context, tenant string, appends []TimelineAppend, ch Change) error {
	if len(appends) == 0 {
		return nil
	}
	if err := checkChange(ch); err != nil {
		return err
	}
	var (
		ids, eids             []uuid.UUID
		parts, texts          []string
		entries, tags         []json.RawMessage
		outcomes, sensitivity []string
	)
	for _, a := range appends {
		if a.Texts != nil && len(a.Texts) != len(a.Entries) {
			return fmt.Errorf("append to episode %s: %d texts for %d entries", a.EpisodeID, len(a.Texts), len(a.Entries))
		}
		t, err := json.Marshal(nonNil(a.Tags))
		if err != nil {
			return fmt.Errorf("encode tags: %w", err)
		}
		ids, tags = append(ids, a.EpisodeID), append(tags, t)
		outcomes, sensitivity = append(outcomes, a.Outcome), append(sensitivity, string(a.Sensitivity))
		for i, e := range a.Entries {
			b, err := json.Marshal(e)
			if err != nil {
				return fmt.Errorf("encode timeline: %w", err)
			}
			text := e.Summary
			if a.Texts != nil {
				text = a.Texts[i]
			}
			eids, parts, entries, texts = append(eids, a.EpisodeID), append(parts, "timeline"), append(entries, b), append(texts, text)
		}
		for _, t := range a.ToolGraph {
			b, err := json.Marshal(t)
			if err != nil {
				return fmt.Errorf("encode tool graph: %w", err)
			}
			eids, parts, entries, texts = append(eids, a.EpisodeID), append(parts, "tool_graph"), append(entries, b), append(texts, "")
		}
	}
	if len(entries) > 0 {
		tag, err := s.db.Exec(ctx, insertEntriesSQL, tenant, eids, parts, entries, texts)
		if err != nil {
			return fmt.Errorf("append to episodes: %w", err)
		}
		if int(tag.RowsAffected()) != len(entries) {
			return conflict(CodeNotLive, ids, "some of the episodes are not open")
		}
	}
	levels := make([]string, len(memory.Sensitivities))
	for i, l := range memory.Sensitivities {
		levels[i] = string(l)
	}
	if _, err := s.db.Exec(ctx, reviseEpisodesSQL, tenant, ids, outcomes, sensitivity, levels, tags, memory.MaxEpisodeTags); err != nil {
		return s.writeError(ctx, tenant, memory.Record{}, err)
	}
	if _, err := s.db.Exec(ctx, auditAppendsSQL, tenant, ids, ch.Actor, ch.Rationale); err != nil {
		return fmt.Errorf("audit appends: %w", err)
	}
	return nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

const closeThreadSQL = `UPDATE threads SET status = 'closed', closed_at = now() WHERE tenant_id = $1 AND thread_id = $2 AND generation = $3`

// CloseThread ends a thread whose episode has its outcome: the working
// memory's last state is appended to the episode as a reference to its
// final version, and the working memory is discarded (§6).
func (s *Store) CloseThread(ctx context.Context, tenant string, t Thread, ch Change) error {
	if t.WorkingID != nil {
		wm, err := s.Get(ctx, tenant, *t.WorkingID)
		if err != nil && err != ErrNotFound {
			return err
		}
		if err == nil && wm.Live() {
			var p memory.WorkingPayload
			_ = json.Unmarshal(wm.Payload, &p)
			summary := strings.TrimSpace(p.State + ": " + p.ContextSummary)
			entry := memory.TimelineEntry{T: s.clock(), EventKind: "working_memory",
				Ref: fmt.Sprintf("record://%s?version=%d", wm.ID, wm.Version), Summary: strings.TrimSuffix(summary, ":")}
			if err := s.AppendTimelines(ctx, tenant, []TimelineAppend{{EpisodeID: t.EpisodeID, Entries: []memory.TimelineEntry{entry}}}, ch); err != nil {
				return err
			}
			if _, err := s.Delete(ctx, tenant, wm.ID, ch); err != nil {
				return fmt.Errorf("discard working memory: %w", err)
			}
		}
	}
	if _, err := s.db.Exec(ctx, closeThreadSQL, tenant, t.ThreadID, t.Generation); err != nil {
		return fmt.Errorf("close thread: %w", err)
	}
	return nil
}
