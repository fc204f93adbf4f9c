package store_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pg"
)

// An episode shrinks only in a transaction that says it compresses, only
// once, and only by leaving timeline entries out: no entry rewritten,
// reordered or added, no other key changed (migration 013, substrate RFC
// §5).
func TestEpisodeShrinksOnlyWhenCompressed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.create(t, episode("evt://1", "evt://2", "evt://3"))
	compressed := `payload || '{"summary": "s", "compressed_at": "2026-01-02T00:00:00Z"}'`
	update := func(compress bool, edit string) error {
		return pg.WithTx(b.ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
			if compress {
				if _, err := tx.Exec(ctx, "SET LOCAL engram.compress = 'on'"); err != nil {
					return err
				}
			}
			_, err := tx.Exec(ctx, `UPDATE records SET payload = `+edit+`, version = version + 1 WHERE id = $1`, e.ID)
			return err
		})
	}
	drop1 := `jsonb_set(` + compressed + `, '{timeline}', (payload->'timeline') - 1)`
	require.ErrorContains(t, update(false, drop1), "append-only", "not without saying so")
	for _, edit := range []string{
		`jsonb_set(` + compressed + `, '{timeline,0,ref}', '"evt://forged"')`,
		`jsonb_set(` + compressed + `, '{timeline}', jsonb_build_array(payload->'timeline'->2, payload->'timeline'->0))`,
		`jsonb_set(` + compressed + `, '{outcome}', '"success"')`,
		`jsonb_set(payload, '{timeline}', (payload->'timeline') - 1)`, // no compressed_at
	} {
		require.ErrorContains(t, update(true, edit), "episodic record", edit)
	}
	require.NoError(t, update(true, drop1), "a subsequence, compressed")
	require.ErrorContains(t, update(true, `jsonb_set(payload, '{timeline}', (payload->'timeline') - 0)`), "append-only", "compressed once")
}
