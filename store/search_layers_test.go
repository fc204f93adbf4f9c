package store_test

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/embedding"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// seedWords is a text of n words from a vocabulary of 300 with a Zipf-like
// skew, as natural text has; the row's column (an integer) keeps the
// subquery correlated, so that each row gets its own text.
const seedWords = `(SELECT string_agg('w' || floor(300 * power(random(), 3))::int, ' ') FROM generate_series(1, %d + 0 * %s))`

// seedSQL inserts records $2 to $3 of tenant $1, of every type, with what
// searches filter on varied: sensitivity, scope, visibility, status,
// procedures' conditions and facts' validity windows.
var seedSQL = `
INSERT INTO records (tenant_id, id, type, status, version, sensitivity, confidence, salience, scope, tags,
	decay_curve, decay_half_life_seconds, last_reinforced_at, provenance, payload, created_at, updated_at, decay_inherited,
	visibility, agent_id, thread_id)
SELECT $1, md5($1 || g)::uuid, t.type,
	CASE WHEN g % 31 = 7 THEN 'contested' WHEN g % 37 = 8 THEN 'retracted' ELSE 'active' END, 1,
	CASE WHEN g % 11 = 3 THEN 'high' WHEN g % 13 = 5 THEN 'medium' ELSE 'low' END, 0.5, 0.5,
	CASE WHEN g % 7 = 0 THEN 'prod' WHEN g % 9 = 0 THEN 'dev' ELSE '' END, '{}',
	'exponential', 2592000, now(), '{"sources": [{"kind": "event", "ref": "evt://seed"}]}',
	CASE t.type
		WHEN 'episodic' THEN jsonb_build_object('kind', 'episodic', 'outcome', 'success', 'timeline', jsonb_build_array(
			jsonb_build_object('t', now(), 'event_kind', 'error', 'ref', 'evt://' || g, 'summary', ` + fmt.Sprintf(seedWords, 6, "g") + `)))
		WHEN 'semantic' THEN jsonb_build_object('kind', 'semantic', 'subject', 'subject-' || g, 'predicate', 'relates_to',
			'object', ` + fmt.Sprintf(seedWords, 5, "g") + `, 'validity', CASE
				WHEN g % 5 = 1 THEN jsonb_build_object('mode', 'conditional', 'conditions', jsonb_build_object('os', (ARRAY['linux', 'darwin'])[1 + g % 2]))
				WHEN g % 5 = 2 THEN jsonb_build_object('mode', 'window', 'start', now() - interval '1 day', 'end', now() + interval '1 day')
				WHEN g % 5 = 3 THEN jsonb_build_object('mode', 'window', 'start', now() - interval '2 days', 'end', now() - interval '1 day')
				ELSE jsonb_build_object('mode', 'global') END)
		WHEN 'competence' THEN jsonb_build_object('kind', 'competence', 'skill_name', 'skill-' || g,
			'triggers', CASE WHEN g % 4 = 0 THEN jsonb_build_array(jsonb_build_object('signal', ` + fmt.Sprintf(seedWords, 6, "g") + `))
				ELSE jsonb_build_array(jsonb_build_object('signal', ` + fmt.Sprintf(seedWords, 6, "g") + `,
					'conditions', jsonb_build_object('os', (ARRAY['linux', 'darwin', 'windows'])[1 + g % 3]))) END,
			'recipe', jsonb_build_array(jsonb_build_object('step', ` + fmt.Sprintf(seedWords, 4, "g") + `)))
		ELSE jsonb_build_object('kind', 'plan_graph', 'plan_id', 'plan-' || g, 'version', '1',
			'intent', 'intent_' || (g % 10), 'nodes', jsonb_build_array(jsonb_build_object('id', 'a', 'op', ` + fmt.Sprintf(seedWords, 3, "g") + `)), 'edges', '[]'::jsonb)
	END,
	now(), now(), true,
	CASE WHEN g % 17 = 1 OR g % 19 = 2 THEN 'agent' WHEN g % 23 = 4 THEN 'thread' ELSE 'tenant' END,
	CASE WHEN g % 17 = 1 THEN 'coder' WHEN g % 19 = 2 THEN 'other' ELSE '' END,
	CASE WHEN g % 23 = 4 THEN 't1' ELSE '' END
FROM generate_series($2::int, $3::int) AS g,
LATERAL (SELECT CASE WHEN g % 10 < 4 THEN 'episodic' WHEN g % 10 < 7 THEN 'semantic' WHEN g % 10 < 9 THEN 'competence'
	ELSE 'plan_graph' END AS type) AS t`

// seedEntriesSQL appends $2 timeline entries to every third episode of
// tenant $1, each of which lexical search matches as a passage of its own.
var seedEntriesSQL = `
INSERT INTO episode_entries (tenant_id, record_id, part, entry, tsv)
SELECT r.tenant_id, r.id, 'timeline', jsonb_build_object('t', now(), 'event_kind', 'observation', 'ref', 'evt://entry', 'summary', s.text),
	to_tsvector('english', s.text)
FROM records r, generate_series(1, $2::int) AS k,
	LATERAL (SELECT ` + fmt.Sprintf(seedWords, 5, "k") + ` AS text) AS s
WHERE r.tenant_id = $1 AND r.type = 'episodic' AND get_byte(decode(replace(r.id::text, '-', ''), 'hex'), 0) % 3 = 0`

// seedDenseSQL gives every live record of tenant $1 a dense vector of
// model $2, of 8 dimensions, as an OpenAI-compatible embedder would.
const seedDenseSQL = `
INSERT INTO record_vectors (tenant_id, record_id, model, type, sensitivity_rank, record_version, dense)
SELECT tenant_id, id, $2, type, sensitivity_rank, version,
	(SELECT array_agg(random() - 0.5)::vector FROM generate_series(1, 8 + 0 * length(r.id::text)))
FROM records r WHERE tenant_id = $1 AND status IN ('active', 'contested')`

// A retrieval's layers are one statement reading the task's statistics
// once (or, in a large tenant, a statement per layer at once), and find
// what each layer's statement of their own did, reading them each
// (store.ReferenceSearch): the same hits in the same order, with the same
// scores, terms and similarities, and the same withheld counts, over
// tenants small and large, with statistics and without, for tasks of
// every kind and every vector half.
func TestSearchMatchesReference(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := b.ctx
	// The large tenant's many entries make it large enough for its
	// layers to be searched at once.
	sizes := map[string][2]int{"small": {300, 1}, "large": {1200, 8}, "unindexed": {200, 1}}
	for tenant, n := range sizes {
		require.NoError(t, store.EnsureTenant(ctx, b.pool, tenant))
		_, err := b.pool.Exec(ctx, seedSQL, tenant, 1, n[0])
		require.NoError(t, err)
		_, err = b.pool.Exec(ctx, seedEntriesSQL, tenant, n[1])
		require.NoError(t, err)
	}
	lex := embedding.NewLexical()
	require.NoError(t, embedding.NewBackfiller(b.pool, lex, 1000, nil).Backfill(ctx, nop{}))
	const dense = "dense-test"
	for tenant := range sizes {
		_, err := b.pool.Exec(ctx, seedDenseSQL, tenant, dense)
		require.NoError(t, err)
		if tenant != "unindexed" {
			// The unindexed tenant has no statistics: every term alike.
			st, err := store.RefreshLexicalStats(ctx, b.pool, tenant, time.Now())
			require.NoError(t, err)
			require.Equal(t, tenant == "large", st.Passages >= store.ParallelSearchPassages, "%s: %d passages", tenant, st.Passages)
		}
	}
	// The schema's tables only: a bare ANALYZE reads every schema of the
	// database.
	_, err := b.pool.Exec(ctx, "ANALYZE records, episode_entries, record_vectors, lexeme_stats, embedding_df, corpus_stats")
	require.NoError(t, err)

	rng := rand.New(rand.NewPCG(29, 29))
	word := func() string { x := rng.Float64(); return fmt.Sprintf("w%d", int(300*x*x*x)) }
	texts := []string{"", "it's o'clock in c:\\dir's \"quoted\" w1", "w1 w1 w1", "nothing matches this"}
	for range 60 {
		text := word()
		for range rng.IntN(8) {
			text += " " + word()
		}
		texts = append(texts, text)
	}
	tenants := []string{"small", "large", "unindexed"}
	now := time.Now()
	compared := 0
	for i, text := range texts {
		tenant := tenants[i%len(tenants)]
		q := store.SearchQuery{Text: text, MaxSensitivity: []memory.Sensitivity{memory.Low, memory.Medium, memory.High}[rng.IntN(3)],
			At: now, Limit: []int{10, 40}[rng.IntN(2)], CommonTermShare: []float64{0.05, 0.05, 1}[rng.IntN(3)]}
		if rng.IntN(3) == 0 {
			q.Conditions = map[string]any{"os": []string{"linux", "darwin", "windows"}[rng.IntN(3)]}
		}
		if rng.IntN(4) == 0 {
			scope := "prod"
			q.Scope = &scope
		}
		if rng.IntN(3) == 0 {
			q.AgentID = "coder"
		}
		if rng.IntN(4) == 0 {
			q.ThreadID = "t1"
		}
		switch i % 4 {
		case 0, 1:
			vs, err := lex.Embed(ctx, []string{text})
			require.NoError(t, err)
			q.Model, q.Sparse = lex.Model(), vs[0].Sparse
		case 2:
			v := make([]float32, 8)
			for k := range v {
				v[k] = float32(rng.Float64() - 0.5)
			}
			vec := pgvector.NewVector(v)
			q.Model, q.Dense = dense, &vec
			if rng.IntN(2) == 0 {
				q.DenseScan = &store.DenseScan{Index: store.DenseIndex{Model: dense, Dims: 8}, EfSearch: 40, MaxScanTuples: 20000}
			}
		}
		var qs []store.SearchQuery
		if q.ThreadID != "" {
			qs = append(qs, store.SearchQuery{Type: memory.Working, ThreadID: q.ThreadID, MaxSensitivity: q.MaxSensitivity})
		}
		for _, typ := range []memory.Type{memory.Semantic, memory.Competence, memory.PlanGraph, memory.Episodic} {
			q.Type = typ
			qs = append(qs, q)
		}
		want, err := store.ReferenceSearch(ctx, b.pool, tenant, qs)
		require.NoError(t, err)
		got, err := store.Search(ctx, b.pool, tenant, qs)
		require.NoError(t, err)
		sameResults(t, want, got, "tenant %s, task %d %q", tenant, i, text)
		// Inside a caller's transaction, one statement whatever the
		// tenant's size.
		err = pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			got, err := store.Search(ctx, tx, tenant, qs)
			if err == nil {
				sameResults(t, want, got, "in a transaction: tenant %s, task %d %q", tenant, i, text)
			}
			return err
		})
		require.NoError(t, err)
		for _, r := range want {
			compared += len(r.Hits)
		}
	}
	require.Greater(t, compared, 1000, "the tasks found too little to compare")
}

// sameResults holds got to want: the same layers, withheld counts and
// hits. Hits of equal scores may come in either order, and are compared
// in the order of their ids.
func sameResults(t *testing.T, want, got []store.SearchResult, msg string, args ...any) {
	t.Helper()
	what := fmt.Sprintf(msg, args...)
	require.Len(t, got, len(want), what)
	for l := range want {
		require.Equal(t, want[l].Withheld, got[l].Withheld, "%s: layer %d withheld", what, l)
		w, g := canonical(want[l].Hits), canonical(got[l].Hits)
		require.Len(t, g, len(w), "%s: layer %d", what, l)
		for k := range w {
			require.Equal(t, w[k].Record, g[k].Record, "%s: layer %d hit %d", what, l, k)
			require.InDelta(t, w[k].BM25, g[k].BM25, 1e-9, "%s: layer %d hit %d", what, l, k)
			require.Equal(t, w[k].Terms, g[k].Terms, "%s: layer %d hit %d", what, l, k)
			require.Equal(t, w[k].Similarity == nil, g[k].Similarity == nil, "%s: layer %d hit %d", what, l, k)
			if w[k].Similarity != nil {
				require.InDelta(t, *w[k].Similarity, *g[k].Similarity, 1e-9, "%s: layer %d hit %d", what, l, k)
			}
		}
	}
}

// canonical orders hits as a search does (BM25, then similarity, best
// first), ties by id.
func canonical(hits []store.Hit) []store.Hit {
	sim := func(h store.Hit) float64 {
		if h.Similarity == nil {
			return math.Inf(-1)
		}
		return round(*h.Similarity)
	}
	out := slices.Clone(hits)
	slices.SortStableFunc(out, func(a, b store.Hit) int {
		return cmp.Or(cmp.Compare(round(b.BM25), round(a.BM25)), cmp.Compare(sim(b), sim(a)), cmp.Compare(a.Record.ID.String(), b.Record.ID.String()))
	})
	return out
}

// round drops what summing in another order may change.
func round(x float64) float64 { return math.Round(x*1e9) / 1e9 }
