package store

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
)

// WindowEpisode is a closed episode of a tenant's window, with the
// features consolidation stored for it (migration 031), if any.
type WindowEpisode struct {
	ClosedEpisode
	// Version is the episode record's version.
	Version int
	// Features are the features stored for the episode at Version by the
	// learner asked for; nil when there are none.
	Features []byte
}

// tenantClosedEpisodesSQL reads the window newest first, as the index
// threads_by_tenant_closing serves it, and leaves the order of the result
// to the caller: sorting rows that carry their features would spill.
const tenantClosedEpisodesSQL = `
SELECT x.tenant_id, x.episode_id, x.thread_id, x.closed_at, x.sensitivity, x.scope, x.outcome, x.environment, x.version,
	f.features
FROM (
	SELECT t.tenant_id, t.episode_id, t.thread_id, t.closed_at, r.sensitivity, coalesce(r.scope, '') AS scope,
		coalesce(r.payload ->> 'outcome', '') AS outcome, coalesce(r.payload -> 'environment', '{}') AS environment, r.version
	FROM threads t
	JOIN records r ON r.tenant_id = t.tenant_id AND r.id = t.episode_id
	WHERE t.tenant_id = $1 AND t.status = 'closed' AND r.status IN ('active', 'contested')
	ORDER BY t.closed_at DESC, t.episode_id DESC
	LIMIT $2
) x
LEFT JOIN episode_features f ON f.tenant_id = x.tenant_id AND f.episode_id = x.episode_id
	AND f.learner = $3 AND f.episode_version = x.version`

// TenantClosedEpisodes returns a tenant's latest limit live closed
// episodes, in closing order, each with the features learner stored for
// it at its current version.
func TenantClosedEpisodes(ctx context.Context, db pg.DBTX, tenant string, limit int, learner string) ([]WindowEpisode, error) {
	rows, err := db.Query(ctx, tenantClosedEpisodesSQL, tenant, limit, learner)
	if err != nil {
		return nil, fmt.Errorf("read closed episodes: %w", err)
	}
	eps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (WindowEpisode, error) {
		var e WindowEpisode
		err := row.Scan(&e.Tenant, &e.ID, &e.Thread, &e.ClosedAt, &e.Sensitivity, &e.Scope, &e.Outcome, &e.Environment,
			&e.Version, &e.Features)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("read closed episodes: %w", err)
	}
	// PostgreSQL's order: closing time, then the uuid's bytes.
	slices.SortFunc(eps, func(a, b WindowEpisode) int {
		return cmp.Or(a.ClosedAt.Compare(b.ClosedAt), bytes.Compare(a.ID[:], b.ID[:]))
	})
	return eps, nil
}

// EpisodeFeatures are the features learned of one episode at one of its
// versions.
type EpisodeFeatures struct {
	Episode  uuid.UUID
	Version  int
	Features []byte
}

// putEpisodeFeaturesSQL skips an episode deleted since the pass read it:
// its row would only be deleted again.
const putEpisodeFeaturesSQL = `
INSERT INTO episode_features (tenant_id, episode_id, learner, episode_version, features)
SELECT $1, f.episode_id, $2, f.episode_version, f.features
FROM unnest($3::uuid[], $4::int[], $5::bytea[]) AS f(episode_id, episode_version, features)
WHERE EXISTS (SELECT 1 FROM records r WHERE r.tenant_id = $1 AND r.id = f.episode_id)
ON CONFLICT (tenant_id, episode_id) DO UPDATE
SET learner = excluded.learner, episode_version = excluded.episode_version, features = excluded.features,
	learned_at = now()`

// PutEpisodeFeatures stores the features learner learned of a tenant's
// episodes, replacing what was stored for them.
func PutEpisodeFeatures(ctx context.Context, db pg.DBTX, tenant, learner string, fs []EpisodeFeatures) error {
	if len(fs) == 0 {
		return nil
	}
	ids := make([][16]byte, len(fs))
	versions := make([]int32, len(fs))
	docs := make([][]byte, len(fs))
	for i, f := range fs {
		ids[i], versions[i], docs[i] = f.Episode, int32(f.Version), f.Features
	}
	if _, err := db.Exec(ctx, putEpisodeFeaturesSQL, tenant, learner, ids, versions, docs); err != nil {
		return fmt.Errorf("store episode features: %w", err)
	}
	return nil
}

const forgetEpisodeFeaturesSQL = `DELETE FROM episode_features WHERE tenant_id = $1`

// ForgetEpisodeFeatures deletes every feature row of a tenant, and returns
// how many there were.
func ForgetEpisodeFeatures(ctx context.Context, db pg.DBTX, tenant string) (int, error) {
	tag, err := db.Exec(ctx, forgetEpisodeFeaturesSQL, tenant)
	if err != nil {
		return 0, fmt.Errorf("forget episode features: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
