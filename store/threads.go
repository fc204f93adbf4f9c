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
	EpisodeID   uuid.UUID
	Entries     []memory.TimelineEntry
	ToolGraph   []map[string]any
	Outcome     string             // set once, when the batch closes the episode
	Sensitivity memory.Sensitivity // the episode's sensitivity rises to at least this
}

// appendTimelinesSQL extends many episodes in one statement. The entries
// were built by the policy plane from validated events; the database's
// revision trigger still refuses anything but growth (§5).
const appendTimelinesSQL = `
UPDATE records r SET
	payload = r.payload
		|| jsonb_build_object('timeline', COALESCE(r.payload -> 'timeline', '[]') || u.entries)
		|| CASE WHEN jsonb_array_length(u.tools) > 0
			THEN jsonb_build_object('tool_graph', COALESCE(r.payload -> 'tool_graph', '[]') || u.tools) ELSE '{}' END
		|| CASE WHEN u.outcome <> '' THEN jsonb_build_object('outcome', u.outcome) ELSE '{}' END,
	sensitivity = CASE WHEN array_position($5::text[], u.sensitivity) - 1 > r.sensitivity_rank
		THEN u.sensitivity ELSE r.sensitivity END,
	version = r.version + 1,
	updated_at = clock_timestamp()
FROM unnest($2::uuid[], $3::jsonb[], $4::jsonb[], $6::text[], $7::text[]) AS u(id, entries, tools, outcome, sensitivity)
WHERE r.tenant_id = $1 AND r.id = u.id AND r.type = 'episodic' AND r.status IN ('active', 'contested')
RETURNING r.id, r.version`

const auditManySQL = `
INSERT INTO audit_log (tenant_id, record_id, action, actor, version, rationale)
SELECT $1, u.id, $4, $5, u.version, $6 FROM unnest($2::uuid[], $3::int[]) AS u(id, version)`

// AppendTimelines extends many episodes at once — one statement for the
// records, one for their audit entries — for the policy plane's batches.
func (s *Store) AppendTimelines(ctx context.Context, tenant string, appends []TimelineAppend, ch Change) error {
	if len(appends) == 0 {
		return nil
	}
	if err := checkChange(ch); err != nil {
		return err
	}
	n := len(appends)
	ids, entries, tools := make([]uuid.UUID, n), make([]json.RawMessage, n), make([]json.RawMessage, n)
	outcomes, sens := make([]string, n), make([]string, n)
	for i, a := range appends {
		ids[i], outcomes[i], sens[i] = a.EpisodeID, a.Outcome, string(a.Sensitivity)
		if sens[i] == "" {
			sens[i] = string(memory.Public)
		}
		var err error
		if entries[i], err = json.Marshal(nonNil(a.Entries)); err != nil {
			return fmt.Errorf("encode timeline: %w", err)
		}
		if tools[i], err = json.Marshal(nonNil(a.ToolGraph)); err != nil {
			return fmt.Errorf("encode tool graph: %w", err)
		}
	}
	levels := make([]string, len(memory.Sensitivities))
	for i, l := range memory.Sensitivities {
		levels[i] = string(l)
	}
	rows, err := s.db.Query(ctx, appendTimelinesSQL, tenant, ids, entries, tools, levels, outcomes, sens)
	if err != nil {
		return fmt.Errorf("append timelines: %w", err)
	}
	var done []uuid.UUID
	var versions []int32
	for rows.Next() {
		var id uuid.UUID
		var v int32
		if err := rows.Scan(&id, &v); err != nil {
			rows.Close()
			return fmt.Errorf("append timelines: %w", err)
		}
		done, versions = append(done, id), append(versions, v)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("append timelines: %w", s.writeError(ctx, tenant, memory.Record{}, err))
	}
	if len(done) != n {
		return fmt.Errorf("append timelines: %d of %d episodes were open", len(done), n)
	}
	if _, err := s.db.Exec(ctx, auditManySQL, tenant, done, versions, ActionAppend, ch.Actor, ch.Rationale); err != nil {
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
