package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
)

// ClosedEpisode is an episode whose thread an outcome has closed: what
// consolidation learns from (substrate RFC §15.7).
type ClosedEpisode struct {
	Tenant string
	ID     uuid.UUID
	// Thread is the thread the episode is of: one task of an agent.
	Thread      string
	ClosedAt    time.Time
	Sensitivity memory.Sensitivity
	Scope       string
	Outcome     string
	Environment map[string]any
}

// EpisodeMark is a position in the order of closed episodes: closing time,
// then tenant and episode id.
type EpisodeMark struct {
	ClosedAt time.Time `json:"closed_at"`
	Tenant   string    `json:"tenant"`
	ID       uuid.UUID `json:"id"`
}

const closedEpisodesSQL = `
SELECT t.tenant_id, t.episode_id, t.thread_id, t.closed_at, r.sensitivity, coalesce(r.scope, ''),
	coalesce(r.payload ->> 'outcome', ''), coalesce(r.payload -> 'environment', '{}')
FROM threads t
JOIN records r ON r.tenant_id = t.tenant_id AND r.id = t.episode_id
WHERE t.status = 'closed' AND r.status IN ('active', 'contested')
	AND (t.closed_at, t.tenant_id, t.episode_id) > ($1::timestamptz, $2::text, $3::uuid)
ORDER BY t.closed_at, t.tenant_id, t.episode_id
LIMIT $4`

// ClosedEpisodesAfter returns up to limit live episodes closed after mark,
// in closing order.
func ClosedEpisodesAfter(ctx context.Context, db pg.DBTX, mark EpisodeMark, limit int) ([]ClosedEpisode, error) {
	rows, err := db.Query(ctx, closedEpisodesSQL, mark.ClosedAt, mark.Tenant, mark.ID, limit)
	if err != nil {
		return nil, fmt.Errorf("read closed episodes: %w", err)
	}
	return collectEpisodes(rows)
}

func collectEpisodes(rows pgx.Rows) ([]ClosedEpisode, error) {
	eps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ClosedEpisode, error) {
		var e ClosedEpisode
		err := row.Scan(&e.Tenant, &e.ID, &e.Thread, &e.ClosedAt, &e.Sensitivity, &e.Scope, &e.Outcome, &e.Environment)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("read closed episodes: %w", err)
	}
	return eps, nil
}

// EpisodeEvent is one staged event of an episode's timeline.
type EpisodeEvent struct {
	Episode     uuid.UUID
	ID          uuid.UUID
	Time        time.Time
	Event       json.RawMessage
	Sensitivity memory.Sensitivity
	// Sealed: the event is stored sealed (substrate RFC §15.9), whatever
	// Event holds once opened.
	Sealed bool
}

// episodeEventsSQL joins each episode's timeline (a sealed episode's
// references to it, migration 022) — the entries it was
// created with, then those appended — to the staged events its evt://
// references name.
const episodeEventsSQL = `
WITH eps AS (
	SELECT id, payload FROM records WHERE tenant_id = $1 AND id = ANY($2)
), refs AS (
	SELECT e.id AS episode_id, 0 AS src, t.ord AS ord, t.entry ->> 'ref' AS ref
	FROM eps e, jsonb_array_elements(coalesce(e.payload -> 'timeline', e.payload -> 'refs', '[]')) WITH ORDINALITY AS t(entry, ord)
	UNION ALL
	SELECT x.record_id, 1, x.seq, x.entry ->> 'ref'
	FROM episode_entries x
	WHERE x.tenant_id = $1 AND x.record_id = ANY($2) AND x.part = 'timeline'
)
SELECT r.episode_id, c.id, c.event_time, c.event, c.sensitivity, c.event ? 'sealed'
FROM refs r
JOIN candidates c ON c.tenant_id = $1
	AND c.id = (CASE WHEN r.ref ~ '^evt://[0-9a-fA-F-]{36}$' THEN substr(r.ref, 7)::uuid END)
ORDER BY r.episode_id, r.src, r.ord`

// EpisodeEvents returns the staged events of a tenant's episodes, each
// episode's in timeline order.
func EpisodeEvents(ctx context.Context, db pg.DBTX, tenant string, episodes []uuid.UUID) ([]EpisodeEvent, error) {
	rows, err := db.Query(ctx, episodeEventsSQL, tenant, episodes)
	if err != nil {
		return nil, fmt.Errorf("read episode events: %w", err)
	}
	evs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (EpisodeEvent, error) {
		var e EpisodeEvent
		err := row.Scan(&e.Episode, &e.ID, &e.Time, &e.Event, &e.Sensitivity, &e.Sealed)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("read episode events: %w", err)
	}
	return evs, nil
}

// NewestClosedEpisode is the closing time of the newest closed episode of
// any tenant: how far consolidation has to go.
func NewestClosedEpisode(ctx context.Context, db pg.DBTX) (time.Time, bool, error) {
	var t *time.Time
	if err := db.QueryRow(ctx, `SELECT max(closed_at) FROM threads WHERE status = 'closed'`).Scan(&t); err != nil {
		return time.Time{}, false, fmt.Errorf("read newest closed episode: %w", err)
	}
	if t == nil {
		return time.Time{}, false, nil
	}
	return *t, true, nil
}
