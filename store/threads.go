package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/engram-dev/engram/internal/pg"

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

// openThreadsSQL looks each thread up in threads_one_open. The lateral
// LIMIT keeps the plan a loop of index lookups, whatever the number of
// open threads: as a prepared statement's generic plan, thread_id =
// ANY($2) scanned every open thread of the tenant against the whole list.
const openThreadsSQL = `
SELECT t.thread_id, t.generation, t.agent_id, t.episode_id, t.working_id, t.status
FROM unnest($2::text[]) AS u(thread_id)
CROSS JOIN LATERAL (
	SELECT * FROM threads t
	WHERE t.tenant_id = $1 AND t.thread_id = u.thread_id AND t.status = 'open'
	LIMIT 1
) t`

// OpenThreads returns the open threads among ids, by thread id.
func OpenThreads(ctx context.Context, db pg.DBTX, tenant string, ids []string) (map[string]Thread, error) {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	rows, err := db.Query(ctx, openThreadsSQL, tenant, ids)
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
func LatestThread(ctx context.Context, db pg.DBTX, tenant, threadID string) (Thread, error) {
	rows, err := db.Query(ctx, threadSQL, tenant, threadID)
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

// InsertThread opens the next generation of a thread with its episode and
// working memory, and returns the generation.
func InsertThread(ctx context.Context, db pg.DBTX, tenant, threadID, agentID string, episode, working uuid.UUID) (int, error) {
	var gen int
	if err := db.QueryRow(ctx, insertThreadSQL, tenant, threadID, agentID, episode, working).Scan(&gen); err != nil {
		return 0, fmt.Errorf("open thread: %w", err)
	}
	return gen, nil
}

// NewThread is a thread to open: its id, agent, and the episode and
// working memory of its new generation.
type NewThread struct {
	ThreadID, AgentID  string
	EpisodeID, Working uuid.UUID
}

const insertThreadsSQL = `
INSERT INTO threads (tenant_id, thread_id, generation, agent_id, episode_id, working_id, status)
SELECT $1, u.thread_id,
	COALESCE((SELECT max(t.generation) FROM threads t WHERE t.tenant_id = $1 AND t.thread_id = u.thread_id), 0) + 1,
	u.agent_id, u.episode_id, u.working_id, 'open'
FROM unnest($2::text[], $3::text[], $4::uuid[], $5::uuid[]) AS u(thread_id, agent_id, episode_id, working_id)
RETURNING thread_id, generation`

// InsertThreads opens the next generation of each of threads (distinct
// thread ids) in one statement, and returns the generations by thread id.
func InsertThreads(ctx context.Context, db pg.DBTX, tenant string, threads []NewThread) (map[string]int, error) {
	ids, agents := make([]string, len(threads)), make([]string, len(threads))
	episodes, working := make([]uuid.UUID, len(threads)), make([]uuid.UUID, len(threads))
	for i, t := range threads {
		ids[i], agents[i], episodes[i], working[i] = t.ThreadID, t.AgentID, t.EpisodeID, t.Working
	}
	rows, err := db.Query(ctx, insertThreadsSQL, tenant, ids, agents, episodes, working)
	if err != nil {
		return nil, fmt.Errorf("open threads: %w", err)
	}
	defer rows.Close()
	out := make(map[string]int, len(threads))
	for rows.Next() {
		var id string
		var gen int
		if err := rows.Scan(&id, &gen); err != nil {
			return nil, fmt.Errorf("open threads: %w", err)
		}
		out[id] = gen
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("open threads: %w", err)
	}
	return out, nil
}

const closeThreadSQL = `UPDATE threads SET status = 'closed', closed_at = now() WHERE tenant_id = $1 AND thread_id = $2 AND generation = $3`

// CloseThread marks a generation of a thread closed.
func CloseThread(ctx context.Context, db pg.DBTX, tenant, threadID string, generation int) error {
	if _, err := db.Exec(ctx, closeThreadSQL, tenant, threadID, generation); err != nil {
		return fmt.Errorf("close thread: %w", err)
	}
	return nil
}

// Entry is one timeline or tool-graph entry appended to an episode, with
// the text lexical search matches it on (timeline entries only).
type Entry struct {
	EpisodeID uuid.UUID
	Part      string // timeline or tool_graph
	Entry     json.RawMessage
	Text      string
}

// EpisodeRevision is what a batch of appends changes in one episode: its
// outcome (once), a sensitivity it rises to, tags it gathers.
type EpisodeRevision struct {
	ID          uuid.UUID
	Outcome     string
	Sensitivity memory.Sensitivity
	Tags        []string
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

const auditEachSQL = `
INSERT INTO audit_log (tenant_id, record_id, action, actor, rationale)
SELECT $1, u.id, $3, $4, $5 FROM unnest($2::uuid[]) AS u(id)`

// InsertEntries appends entries to episodes that are live, in order, and
// returns how many it appended: fewer than given when some episode is not.
func InsertEntries(ctx context.Context, db pg.DBTX, tenant string, entries []Entry) (int, error) {
	eids, parts, texts := make([]uuid.UUID, len(entries)), make([]string, len(entries)), make([]string, len(entries))
	docs := make([]json.RawMessage, len(entries))
	for i, e := range entries {
		eids[i], parts[i], docs[i], texts[i] = e.EpisodeID, e.Part, e.Entry, e.Text
	}
	tag, err := db.Exec(ctx, insertEntriesSQL, tenant, eids, parts, docs, texts)
	if err != nil {
		return 0, fmt.Errorf("append to episodes: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// ReviseEpisodes writes what appends changed in episodes, each changed one
// at its next version; an episode gathers tags up to maxTags.
func ReviseEpisodes(ctx context.Context, db pg.DBTX, tenant string, revs []EpisodeRevision, maxTags int) error {
	ids, outcomes, sens := make([]uuid.UUID, len(revs)), make([]string, len(revs)), make([]string, len(revs))
	tags := make([]json.RawMessage, len(revs))
	for i, r := range revs {
		ids[i], outcomes[i], sens[i] = r.ID, r.Outcome, string(r.Sensitivity)
		t, err := json.Marshal(nonNil(r.Tags))
		if err != nil {
			return fmt.Errorf("encode tags: %w", err)
		}
		tags[i] = t
	}
	levels := make([]string, len(memory.Sensitivities))
	for i, l := range memory.Sensitivities {
		levels[i] = string(l)
	}
	if _, err := db.Exec(ctx, reviseEpisodesSQL, tenant, ids, outcomes, sens, levels, tags, maxTags); err != nil {
		return writeError(tenant, uuid.Nil, err)
	}
	return nil
}

// AuditEach writes one audit entry per record, all alike.
func AuditEach(ctx context.Context, db pg.DBTX, tenant string, ids []uuid.UUID, action, actor, rationale string) error {
	if _, err := db.Exec(ctx, auditEachSQL, tenant, ids, action, actor, rationale); err != nil {
		return fmt.Errorf("audit %s: %w", action, err)
	}
	return nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
