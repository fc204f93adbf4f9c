package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/engram-dev/engram/internal/pg"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
)

const episodeEntriesSQL = `
SELECT record_id, part, entry, appended_at
FROM episode_entries
WHERE tenant_id = $1 AND record_id = ANY($2) AND ($3::timestamptz IS NULL OR appended_at <= $3)
ORDER BY record_id, seq`

// entry is one appended timeline or tool-graph entry of an episode.
type entry struct {
	part  string
	value json.RawMessage
	at    time.Time
}

// episodeEntries reads the appended entries of the episodes among recs (as
// they were at asOf, when set), by record.
func episodeEntries(ctx context.Context, db pg.DBTX, tenant string, recs []memory.Record, asOf *time.Time) (map[uuid.UUID][]entry, error) {
	var ids []uuid.UUID
	for _, r := range recs {
		if r.Type == memory.Episodic {
			ids = append(ids, r.ID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := db.Query(ctx, episodeEntriesSQL, tenant, ids, asOf)
	if err != nil {
		return nil, fmt.Errorf("read episode entries: %w", err)
	}
	defer rows.Close()
	out := make(map[uuid.UUID][]entry, len(ids))
	for rows.Next() {
		var id uuid.UUID
		var e entry
		if err := rows.Scan(&id, &e.part, &e.value, &e.at); err != nil {
			return nil, fmt.Errorf("read episode entries: %w", err)
		}
		out[id] = append(out[id], e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read episode entries: %w", err)
	}
	return out, nil
}

// mergeEntries appends an episode's entries (those appended by until, when
// set) to the arrays of its payload, after the entries it was created with.
func mergeEntries(payload json.RawMessage, entries []entry, until *time.Time) (json.RawMessage, error) {
	if len(entries) == 0 {
		return payload, nil
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, fmt.Errorf("decode episode: %w", err)
	}
	parts := map[string][]json.RawMessage{}
	for _, e := range entries {
		if until != nil && e.at.After(*until) {
			continue
		}
		if parts[e.part] == nil {
			list := []json.RawMessage{}
			if raw := p[e.part]; raw != nil {
				if err := json.Unmarshal(raw, &list); err != nil {
					return nil, fmt.Errorf("decode episode %s: %w", e.part, err)
				}
			}
			parts[e.part] = list
		}
		parts[e.part] = append(parts[e.part], e.value)
	}
	for part, list := range parts {
		b, err := json.Marshal(list)
		if err != nil {
			return nil, err
		}
		p[part] = b
	}
	return json.Marshal(p)
}

// complete fills in what a record's row does not hold: its outgoing
// relations and, for episodes, their appended entries — as they were at
// asOf, when set.
func complete(ctx context.Context, db pg.DBTX, tenant string, recs []memory.Record, asOf *time.Time) error {
	if err := attachRelations(ctx, db, tenant, recs, asOf); err != nil {
		return err
	}
	return mergeEpisodeEntries(ctx, db, tenant, recs, asOf)
}

// mergeEpisodeEntries merges the appended entries of the episodes among
// recs into their payloads.
func mergeEpisodeEntries(ctx context.Context, db pg.DBTX, tenant string, recs []memory.Record, asOf *time.Time) error {
	entries, err := episodeEntries(ctx, db, tenant, recs, asOf)
	if err != nil {
		return err
	}
	for i := range recs {
		if es := entries[recs[i].ID]; len(es) > 0 {
			if recs[i].Payload, err = mergeEntries(recs[i].Payload, es, nil); err != nil {
				return err
			}
		}
	}
	return nil
}
