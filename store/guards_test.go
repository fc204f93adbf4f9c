package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// Each append-only table allows a DELETE only under the settings its guard
// names (migration 032): the version log under a purge or an erasure, a
// timeline under those or a compression, the audit trail under an erasure
// alone; TRUNCATE never.
func TestAppendOnlyGuards(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.create(t, episode("evt://1"))
	_, err := b.w.AppendEpisode(b.ctx, b.tenant, e.ID, revise.EpisodeAppend{
		Timeline: []memory.TimelineEntry{{T: time.Now().UTC(), EventKind: "tool_call", Ref: "evt://2"}},
	}, b.ch)
	require.NoError(t, err)
	allowed := map[string][]string{
		"record_versions": {"engram.purge", "engram.erase"},
		"episode_entries": {"engram.purge", "engram.compress", "engram.erase"},
		"audit_log":       {"engram.erase"},
	}
	settings := []string{"", "engram.purge", "engram.compress", "engram.erase", "engram.reseal"}
	for table, ok := range allowed {
		for _, setting := range settings {
			n, err := deleteUnder(b, table, setting, e.ID)
			if slices.Contains(ok, setting) {
				require.NoError(t, err, "%s under %q", table, setting)
				require.Positive(t, n, "%s under %q: the guard saw a row", table, setting)
			} else {
				require.ErrorContains(t, err, table+" is append-only: DELETE refused", "%s under %q", table, setting)
			}
		}
		_, err := b.pool.Exec(b.ctx, "TRUNCATE "+table)
		require.ErrorContains(t, err, table+" is append-only: TRUNCATE refused")
	}
}

// deleteUnder deletes the record's rows of table in a transaction that
// says setting, and rolls it back.
func deleteUnder(b *bundle, table, setting string, id uuid.UUID) (int64, error) {
	tx, err := b.pool.Begin(b.ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(b.ctx) }()
	if setting != "" {
		if _, err := tx.Exec(b.ctx, "SELECT set_config($1, 'on', true)", setting); err != nil {
			return 0, err
		}
	}
	tag, err := tx.Exec(b.ctx, "DELETE FROM "+pgx.Identifier{table}.Sanitize()+" WHERE record_id = $1", id)
	return tag.RowsAffected(), err
}
