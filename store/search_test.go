package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/store"
)

func procedure(skill, signal string, conds map[string]any, steps ...string) memory.Record {
	var recipe []any
	for _, s := range steps {
		recipe = append(recipe, map[string]any{"step": s})
	}
	trig := map[string]any{"signal": signal}
	if conds != nil {
		trig["conditions"] = conds
	}
	p, _ := json.Marshal(map[string]any{"kind": "competence", "skill_name": skill,
		"triggers": []any{trig}, "recipe": recipe})
	return memory.Record{Type: memory.Competence, Confidence: 0.7, Payload: p}
}

func ids(hits []store.Hit) []uuid.UUID {
	var out []uuid.UUID
	for _, h := range hits {
		out = append(out, h.Record.ID)
	}
	return out
}

// Lexical search ORs the query's terms, so a differently worded message of
// the same error finds its procedure; a procedure whose conditions the task
// contradicts is not a candidate.
func TestSearchMatchesAnyTermWithinConditions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	linux := b.create(t, procedure("fix-resolve-linux", "npm ERR! code ERESOLVE unable to resolve dependency tree",
		map[string]any{"os": "linux"}, "run npm install --legacy-peer-deps"))
	mac := b.create(t, procedure("fix-resolve-mac", "npm ERR! code ERESOLVE unable to resolve dependency tree",
		map[string]any{"os": "darwin"}, "delete node_modules"))
	b.create(t, procedure("fix-disk", "ENOSPC no space left on device", nil, "free disk space"))

	res, err := store.Search(b.ctx, b.pool, b.tenant, []store.SearchQuery{{
		Type: memory.Competence, Text: "npm error ERESOLVE could not resolve the dependency tree",
		Conditions: map[string]any{"os": "linux"}, MaxSensitivity: memory.Hyper, At: time.Now(),
	}})
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.Equal(t, []uuid.UUID{linux.ID}, ids(res[0].Hits))
	require.Greater(t, res[0].Hits[0].BM25, 0.0)
	require.Contains(t, res[0].Hits[0].Terms, "eresolv")
	require.NotContains(t, ids(res[0].Hits), mac.ID)
}

// Records above the caller's sensitivity are never returned; the count of
// those that would have ranked is.
func TestSearchWithholdsAboveClearance(t *testing.T) {
	t.Parallel()
	b := setup(t)
	open := fact("deploy", "uses_tool", "kubectl apply", nil)
	secret := fact("deploy-secrets", "stored_in", "vault path for the deploy token", nil)
	secret.Sensitivity = memory.High
	o := b.create(t, open)
	b.create(t, secret)

	res, err := store.Search(b.ctx, b.pool, b.tenant, []store.SearchQuery{
		{Type: memory.Semantic, Text: "how do we deploy", MaxSensitivity: memory.Medium, At: time.Now()},
		{Type: memory.Semantic, Text: "how do we deploy", MaxSensitivity: memory.High, At: time.Now()},
		{Type: memory.Semantic, Text: "nothing here matches", MaxSensitivity: memory.Medium, At: time.Now()},
	})
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{o.ID}, ids(res[0].Hits))
	require.Equal(t, 1, res[0].Withheld)
	require.Len(t, res[1].Hits, 2)
	require.Zero(t, res[1].Withheld)
	require.Empty(t, res[2].Hits)
	require.Zero(t, res[2].Withheld)
}

// With statistics, a rare term outweighs a common one (BM25's IDF).
func TestSearchWeighsRareTerms(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, s := range []string{"a", "b", "c", "d", "e", "f"} {
		b.create(t, fact("build-"+s, "fails_with", "error in the build step "+s, nil))
	}
	rare := b.create(t, fact("linker", "fails_with", "segfault", nil))
	st, err := store.RefreshLexicalStats(b.ctx, b.pool, b.tenant, time.Now())
	require.NoError(t, err)
	require.Equal(t, int64(7), st.Docs)
	stale, err := store.StaleLexicalTenants(b.ctx, b.pool)
	require.NoError(t, err)
	require.NotContains(t, stale, b.tenant)

	res, err := store.Search(b.ctx, b.pool, b.tenant, []store.SearchQuery{{
		Type: memory.Semantic, Text: "build error segfault", MaxSensitivity: memory.Hyper, At: time.Now(),
	}})
	require.NoError(t, err)
	require.Len(t, res[0].Hits, 7)
	require.Equal(t, rare.ID, res[0].Hits[0].Record.ID)
}

// An episode is searchable by its appended events at once, open or closed
// (issue 9: it was only once an outcome closed it), and ranks by its best
// passage; entries count in the BM25 statistics, and a new entry makes
// them stale.
func TestSearchFindsEpisodesByTheirEventsAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.create(t, episode())
	other := b.create(t, episode())
	_, err := b.w.AppendEpisode(b.ctx, b.tenant, e.ID, revise.EpisodeAppend{Timeline: []memory.TimelineEntry{
		{T: time.Now(), EventKind: "error", Ref: "evt://1", Summary: "terraform state lock timeout"}}}, b.ch)
	require.NoError(t, err)
	require.NoError(t, b.w.InTx(b.ctx, func(ctx context.Context, tx *revise.Tx) error {
		return tx.AppendTimelines(ctx, b.tenant, []revise.TimelineAppend{{
			EpisodeID: other.ID,
			Entries:   []memory.TimelineEntry{{T: time.Now(), EventKind: "observation", Ref: "evt://2", Summary: "a short summary"}},
			Texts:     []string{"a short summary of a much longer text that mentions terraform once"},
		}}, b.ch)
	}))
	q := []store.SearchQuery{{Type: memory.Episodic, Text: "terraform lock", MaxSensitivity: memory.Hyper, At: time.Now()}}
	res, err := store.Search(b.ctx, b.pool, b.tenant, q)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{e.ID, other.ID}, ids(res[0].Hits), "the entry holding both terms ranks first")
	require.Equal(t, []string{"lock", "terraform"}, res[0].Hits[0].Terms)

	st, err := store.RefreshLexicalStats(b.ctx, b.pool, b.tenant, time.Now())
	require.NoError(t, err)
	require.Equal(t, store.LexicalStats{Docs: 2, Passages: 4, Lexemes: st.Lexemes}, st, "two episodes, two entries")
	stale, err := store.StaleLexicalTenants(b.ctx, b.pool)
	require.NoError(t, err)
	require.NotContains(t, stale, b.tenant)

	_, err = b.w.AppendEpisode(b.ctx, b.tenant, e.ID, revise.EpisodeAppend{Outcome: "failure"}, b.ch)
	require.NoError(t, err)
	_, err = b.w.AppendEpisode(b.ctx, b.tenant, other.ID, revise.EpisodeAppend{Timeline: []memory.TimelineEntry{
		{T: time.Now(), EventKind: "error", Ref: "evt://3", Summary: "plan failed"}}}, b.ch)
	require.NoError(t, err)
	stale, err = store.StaleLexicalTenants(b.ctx, b.pool)
	require.NoError(t, err)
	require.Contains(t, stale, b.tenant)
	res, err = store.Search(b.ctx, b.pool, b.tenant, q)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{e.ID, other.ID}, ids(res[0].Hits))
}

// A record private to an agent or thread must name it; a replacement keeps
// its visibility.
func TestVisibilityNamesItsOwner(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := fact("s", "p", "o", nil)
	r.Visibility = memory.VisibilityAgent
	_, err := b.w.Create(b.ctx, b.tenant, r, b.ch)
	var ve *schemas.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, []schemas.Violation{{Pointer: "/agent_id", Message: "is required"}}, ve.Violations)
	r.Visibility = "everyone"
	_, err = b.w.Create(b.ctx, b.tenant, r, b.ch)
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "/visibility", ve.Violations[0].Pointer)

	r.Visibility, r.AgentID = memory.VisibilityAgent, "coder"
	rec := b.create(t, r)
	require.Equal(t, memory.VisibilityAgent, rec.Visibility)
	_, next, err := b.w.Supersede(b.ctx, b.tenant, rec.ID, 0, fact("s", "p", "o2", nil), b.ch)
	require.NoError(t, err)
	require.Equal(t, memory.VisibilityAgent, next.Visibility)
	require.Equal(t, "coder", next.AgentID)
}

// A term held by more than CommonTermShare of a tenant's passages selects
// no candidates while the rarer terms bring enough: every hit holds the
// rare term, though records holding only the common one are shorter and
// would outscore them. The share is a fraction, and once arrived as a
// whole number (0): the common term then selected, and short records
// holding only it filled the answer.
func TestSearchCommonTermsSelectOnlyWhenRareOnesAreTooFew(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var recs []memory.Record
	for i := range 40 {
		words := "zebra"
		for k := range 19 {
			words += fmt.Sprintf(" lw%dk%d", i, k)
		}
		recs = append(recs, fact(fmt.Sprintf("long-%d", i), "notes", words, nil))
	}
	for i := range 120 {
		recs = append(recs, fact(fmt.Sprintf("short-%d", i), "notes", "common", nil))
	}
	for i := range 860 {
		recs = append(recs, fact(fmt.Sprintf("other-%d", i), "notes", fmt.Sprintf("fw%da fw%db", i, i), nil))
	}
	var g errgroup.Group
	g.SetLimit(4)
	for _, r := range recs {
		g.Go(func() error {
			_, err := b.w.Create(b.ctx, b.tenant, r, b.ch)
			return err
		})
	}
	require.NoError(t, g.Wait())
	_, err := store.RefreshLexicalStats(b.ctx, b.pool, b.tenant, time.Now())
	require.NoError(t, err)

	q := store.SearchQuery{Type: memory.Semantic, Text: "zebra common", MaxSensitivity: memory.Hyper, At: time.Now(), Limit: 20}
	for _, share := range []float64{0.05, 0.5} {
		q.CommonTermShare = share
		res, err := store.Search(b.ctx, b.pool, b.tenant, []store.SearchQuery{q})
		require.NoError(t, err)
		require.Len(t, res[0].Hits, 20)
		for _, h := range res[0].Hits {
			if share == 0.05 {
				require.Contains(t, h.Terms, "zebra", "share %g: a record only the common term brings", share)
			} else {
				// At half, both terms select, and the short records
				// holding only the common one rank first.
				require.Equal(t, []string{"common"}, h.Terms, "share %g", share)
			}
		}
	}
}
