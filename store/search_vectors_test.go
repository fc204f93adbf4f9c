package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/embedding"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// procedureOf is a procedure with one trigger per condition set (nil: a
// trigger without conditions).
func procedureOf(skill string, conds ...map[string]any) memory.Record {
	var triggers []any
	for _, c := range conds {
		trig := map[string]any{"signal": "deploy fails on " + skill}
		if c != nil {
			trig["conditions"] = c
		}
		triggers = append(triggers, trig)
	}
	p, _ := json.Marshal(map[string]any{"kind": "competence", "skill_name": skill,
		"triggers": triggers, "recipe": []any{map[string]any{"step": "retry the deploy"}}})
	return memory.Record{Type: memory.Competence, Confidence: 0.7, Payload: p}
}

// A record's precomputed conditions (migration 016) leave out exactly what
// walking its triggers and validity did: a procedure applies where one of
// its triggers' conditions hold, whether its triggers name the same
// conditions, different ones (checked on the payload) or none.
func TestPrecomputedConditionsAgreeWithTriggers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	linux, darwin := map[string]any{"os": "linux"}, map[string]any{"os": "darwin"}
	armLinux := map[string]any{"os": "linux", "arch": "arm"}
	recs := []memory.Record{
		procedureOf("one-linux", linux),
		procedureOf("two-same", armLinux, armLinux),
		procedureOf("linux-or-darwin", linux, darwin),
		procedureOf("linux-or-anywhere", linux, nil),
		procedureOf("anywhere", nil),
		procedureOf("arm-linux", armLinux),
	}
	for i := range recs {
		recs[i] = b.create(t, recs[i])
	}
	for _, ctx := range []map[string]any{
		{}, linux, darwin, {"os": "windows"}, {"arch": "arm"}, {"arch": "x86"}, {"os": "linux", "arch": "x86"}, {"os": 7},
	} {
		res, err := store.Search(b.ctx, b.pool, b.tenant, []store.SearchQuery{{
			Type: memory.Competence, Text: "deploy", Conditions: ctx, MaxSensitivity: memory.Hyper, At: time.Now(),
		}})
		require.NoError(t, err)
		ctxJSON, _ := json.Marshal(ctx)
		var want []uuid.UUID
		for _, r := range recs {
			var applies bool
			err := b.pool.QueryRow(b.ctx, `SELECT engram_procedure_applies(payload, $3) FROM records WHERE tenant_id = $1 AND id = $2`,
				b.tenant, r.ID, ctxJSON).Scan(&applies)
			require.NoError(t, err)
			if applies {
				want = append(want, r.ID)
			}
		}
		got := ids(res[0].Hits)
		slices.SortFunc(want, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
		slices.SortFunc(got, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
		require.Equal(t, want, got, "context %s", ctxJSON)
	}
}

// nop is a job run's progress that keeps nothing.
type nop struct{}

func (nop) Cursor(context.Context, any) (bool, error) { return false, nil }
func (nop) SaveCursor(context.Context, any) error     { return nil }
func (nop) Add(string, int64)                         {}

// With every feature selecting (a share of 1), the vector half's
// candidates from the features' index rank as an exact scan of every
// vector of the tenant and type does: a vector that shares no feature
// with the query's is at distance 1, never a hit.
func TestVectorHalfIsExactWithEveryFeature(t *testing.T) {
	t.Parallel()
	b := setup(t)
	words := []string{"deploy", "kubectl", "helm", "terraform", "postgres", "vacuum", "index", "timeout", "lock", "replica"}
	for i := range 60 {
		object := fmt.Sprintf("%s %s %s", words[i%10], words[(i*3+1)%10], words[(i*7+2)%10])
		b.create(t, fact(fmt.Sprintf("subject-%d", i), "relates_to", object, nil))
	}
	lex := embedding.NewLexical()
	require.NoError(t, embedding.NewBackfiller(b.pool, lex, 100, nil).Backfill(b.ctx, nop{}))
	_, err := store.RefreshLexicalStats(b.ctx, b.pool, b.tenant, time.Now())
	require.NoError(t, err)

	for _, text := range []string{"helm timeout", "terraformm lokc", "replica vacuum index postgres", "nothing shared"} {
		vs, err := lex.Embed(b.ctx, []string{text})
		require.NoError(t, err)
		res, err := store.Search(b.ctx, b.pool, b.tenant, []store.SearchQuery{{
			Type: memory.Semantic, MaxSensitivity: memory.Hyper, At: time.Now(), Limit: 10, CommonTermShare: 1,
			Model: lex.Model(), Sparse: vs[0].Sparse,
		}})
		require.NoError(t, err)
		// Equal distances may tie in either order: the distances are the
		// top-k.
		var got []float64
		for _, h := range res[0].Hits {
			require.NotNil(t, h.Similarity)
			got = append(got, 1-*h.Similarity)
		}
		rows, err := b.pool.Query(b.ctx, `
			SELECT sparse <=> $3 FROM record_vectors
			WHERE tenant_id = $1 AND model = $2 AND type = 'semantic' AND sparse <=> $3 <= 0.95
			ORDER BY sparse <=> $3 LIMIT 10`, b.tenant, lex.Model(), vs[0].Sparse)
		require.NoError(t, err)
		want, err := pgx.CollectRows(rows, pgx.RowTo[float64])
		require.NoError(t, err)
		slices.Sort(got)
		require.InDeltaSlice(t, want, got, 1e-9, "query %q", text)
		if text == "nothing shared" {
			require.Empty(t, got)
		} else {
			require.NotEmpty(t, got)
		}
	}
}

// A vector's feature keys (migration 026) carry its tenant, model and type
// with each feature, so that the same text in another tenant or of another
// type shares no key, and a layer's vector half finds only its own
// tenant's vectors of its type.
func TestFeatureKeysKeepTenantsAndTypesApart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mine := b.create(t, fact("ld", "reports", "cache mismatch", nil))
	proc := b.create(t, procedureOf("ld cache mismatch", nil))
	require.NoError(t, store.EnsureTenant(b.ctx, b.pool, "globex"))
	theirs, err := b.w.Create(b.ctx, "globex", fact("ld", "reports", "cache mismatch", nil), b.ch)
	require.NoError(t, err)
	lex := embedding.NewLexical()
	require.NoError(t, embedding.NewBackfiller(b.pool, lex, 100, nil).Backfill(b.ctx, nop{}))

	shared := func(a, c uuid.UUID) (features, keys int) {
		t.Helper()
		require.NoError(t, b.pool.QueryRow(b.ctx, `
			SELECT cardinality(ARRAY(SELECT unnest(x.features) INTERSECT SELECT unnest(y.features))),
				cardinality(ARRAY(SELECT unnest(x.feature_keys) INTERSECT SELECT unnest(y.feature_keys)))
			FROM record_vectors x, record_vectors y WHERE x.record_id = $1 AND y.record_id = $2`, a, c).Scan(&features, &keys))
		return features, keys
	}
	f, k := shared(mine.ID, theirs.ID)
	require.Positive(t, f, "the same text has the same features")
	require.Zero(t, k, "in another tenant, no key")
	f, k = shared(mine.ID, proc.ID)
	require.Positive(t, f)
	require.Zero(t, k, "of another type, no key")

	vs, err := lex.Embed(b.ctx, []string{"ld cache mismatch"})
	require.NoError(t, err)
	for _, tc := range []struct {
		tenant string
		typ    memory.Type
		want   uuid.UUID
	}{{"acme", memory.Semantic, mine.ID}, {"acme", memory.Competence, proc.ID}, {"globex", memory.Semantic, theirs.ID}} {
		res, err := store.Search(b.ctx, b.pool, tc.tenant, []store.SearchQuery{{
			Type: tc.typ, MaxSensitivity: memory.Hyper, At: time.Now(), Limit: 10, Model: lex.Model(), Sparse: vs[0].Sparse,
		}})
		require.NoError(t, err)
		var got []uuid.UUID
		for _, h := range res[0].Hits {
			got = append(got, h.Record.ID)
		}
		require.Equal(t, []uuid.UUID{tc.want}, got, "%s %s", tc.tenant, tc.typ)
	}
}
