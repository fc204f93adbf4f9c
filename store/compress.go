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

// AgedEpisode is a closed episode old enough to be compressed, and whether
// it may be: whether a live record uses it as evidence, and whether it is
// compressed already.
type AgedEpisode struct {
	ClosedEpisode
	Cited      bool
	Compressed bool
}

// agedEpisodesSQL walks the closed live episodes in closing order, from
// after a mark up to a cutoff. An episode is cited when a live record
// derives from it or supports with it, or names it in its provenance: as
// record://, or as an outcome of a procedure's use (outcome://…/<id>).
const agedEpisodesSQL = `
SELECT t.tenant_id, t.episode_id, t.closed_at, r.sensitivity, coalesce(r.scope, ''),
	coalesce(r.payload ->> 'outcome', ''), coalesce(r.payload -> 'environment', '{}'),
	EXISTS (
		SELECT 1 FROM relations rel
		JOIN records s ON s.tenant_id = rel.tenant_id AND s.id = rel.source_id AND s.status IN ('active', 'contested')
		WHERE rel.tenant_id = t.tenant_id AND rel.target_id = t.episode_id AND rel.predicate IN ('derived_from', 'supports')
	) OR EXISTS (
		SELECT 1 FROM records s
		WHERE s.tenant_id = t.tenant_id AND s.status IN ('active', 'contested')
			AND engram_evidence_refs(s.provenance, s.payload) && ARRAY[
				'record://' || t.episode_id, 'outcome://success/' || t.episode_id, 'outcome://failure/' || t.episode_id]
	),
	r.payload ? 'compressed_at'
FROM threads t
JOIN records r ON r.tenant_id = t.tenant_id AND r.id = t.episode_id
WHERE t.status = 'closed' AND r.status IN ('active', 'contested') AND t.closed_at <= $4
	AND (t.closed_at, t.tenant_id, t.episode_id) > ($1::timestamptz, $2::text, $3::uuid)
ORDER BY t.closed_at, t.tenant_id, t.episode_id
LIMIT $5`

// AgedEpisodes returns up to limit live episodes closed after mark and no
// later than before, in closing order.
func AgedEpisodes(ctx context.Context, db pg.DBTX, mark EpisodeMark, before time.Time, limit int) ([]AgedEpisode, error) {
	rows, err := db.Query(ctx, agedEpisodesSQL, mark.ClosedAt, mark.Tenant, mark.ID, before, limit)
	if err != nil {
		return nil, fmt.Errorf("read aged episodes: %w", err)
	}
	eps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (AgedEpisode, error) {
		var e AgedEpisode
		err := row.Scan(&e.Tenant, &e.ID, &e.ClosedAt, &e.Sensitivity, &e.Scope, &e.Outcome, &e.Environment, &e.Cited, &e.Compressed)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("read aged episodes: %w", err)
	}
	return eps, nil
}

// EpisodePart is one appended timeline or tool-graph entry of an episode.
type EpisodePart struct {
	Seq   int64
	Part  string
	Entry json.RawMessage
}

const episodePartsSQL = `
SELECT seq, part, entry FROM episode_entries WHERE tenant_id = $1 AND record_id = $2 ORDER BY seq`

// EpisodeParts returns the appended entries of an episode, in order.
func EpisodeParts(ctx context.Context, db pg.DBTX, tenant string, id uuid.UUID) ([]EpisodePart, error) {
	rows, err := db.Query(ctx, episodePartsSQL, tenant, id)
	if err != nil {
		return nil, fmt.Errorf("read episode entries: %w", err)
	}
	parts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (EpisodePart, error) {
		var p EpisodePart
		err := row.Scan(&p.Seq, &p.Part, &p.Entry)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("read episode entries: %w", err)
	}
	return parts, nil
}

const citedRefsSQL = `
SELECT DISTINCT u.ref
FROM records s, unnest(engram_evidence_refs(s.provenance, s.payload)) AS u(ref)
WHERE s.tenant_id = $1 AND s.status IN ('active', 'contested')
	AND engram_evidence_refs(s.provenance, s.payload) && $2::text[] AND u.ref = ANY($2)`

// CitedRefs returns the refs among refs that a live record of the tenant
// points to, in its provenance or a fact's evidence.
func CitedRefs(ctx context.Context, db pg.DBTX, tenant string, refs []string) ([]string, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	rows, err := db.Query(ctx, citedRefsSQL, tenant, refs)
	if err != nil {
		return nil, fmt.Errorf("read cited refs: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read cited refs: %w", err)
	}
	return out, nil
}

// releaseEventsSQL deletes staged events, but never one a live record
// still points to.
const (
	deleteEntriesSQL = `DELETE FROM episode_entries WHERE tenant_id = $1 AND record_id = $2 AND seq = ANY($3)`
	releaseEventsSQL = `
DELETE FROM candidates c
WHERE c.tenant_id = $1 AND c.id = ANY($2)
	AND NOT EXISTS (
		SELECT 1 FROM records s
		WHERE s.tenant_id = $1 AND s.status IN ('active', 'contested')
			AND engram_evidence_refs(s.provenance, s.payload) && ARRAY['evt://' || c.id])`
)

// CompressEpisode writes rec, a compressed episode whose version the
// caller advanced by one, deletes its appended entries numbered seqs and
// releases (deletes) the staged events given, and returns how many events
// it released. The database lets an episode shrink, and its entries go,
// only in a transaction that says so (engram.compress); call it in one.
func CompressEpisode(ctx context.Context, db pg.DBTX, tenant string, rec memory.Record, seqs []int64, events []uuid.UUID) (int64, error) {
	if _, err := db.Exec(ctx, "SET LOCAL engram.compress = 'on'"); err != nil {
		return 0, fmt.Errorf("allow compression: %w", err)
	}
	if err := UpdateRecord(ctx, db, tenant, rec); err != nil {
		return 0, err
	}
	if len(seqs) > 0 {
		if _, err := db.Exec(ctx, deleteEntriesSQL, tenant, rec.ID, seqs); err != nil {
			return 0, fmt.Errorf("delete episode entries: %w", err)
		}
	}
	var released int64
	if len(events) > 0 {
		tag, err := db.Exec(ctx, releaseEventsSQL, tenant, events)
		if err != nil {
			return 0, fmt.Errorf("release events: %w", err)
		}
		released = tag.RowsAffected()
	}
	if _, err := db.Exec(ctx, "SET LOCAL engram.compress = 'off'"); err != nil {
		return 0, fmt.Errorf("end compression: %w", err)
	}
	return released, nil
}

const episodeClosedSQL = `
SELECT EXISTS (SELECT 1 FROM threads WHERE tenant_id = $1 AND episode_id = $2 AND status = 'closed')`

// EpisodeClosed reports whether an outcome closed the thread of an
// episode.
func EpisodeClosed(ctx context.Context, db pg.DBTX, tenant string, id uuid.UUID) (bool, error) {
	var closed bool
	if err := db.QueryRow(ctx, episodeClosedSQL, tenant, id).Scan(&closed); err != nil {
		return false, fmt.Errorf("read episode thread: %w", err)
	}
	return closed, nil
}
