package revise_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/seal"
	"github.com/engram-dev/engram/store"
)

// An erasure cut off (its daemon stopping) is left interrupted, saying to
// run it again, with nothing of the subject in its row; run again, it
// completes.
func TestErasureInterrupted(t *testing.T) {
	t.Parallel()
	db := pgtest.NewSchema(t)
	w := revise.New(db.Pool, revise.Config{})
	s, err := revise.NewSubject(api.ErasureRequest{Names: []string{"Jane Roe"}})
	require.NoError(t, err)
	e, err := w.StartErasure(context.Background(), "acme", s)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = w.Erase(ctx, "acme", e, s, "test")
	require.Error(t, err)
	got, err := store.GetErasure(context.Background(), db.Pool, "acme", e.ID)
	require.NoError(t, err)
	require.Equal(t, api.ErasureInterrupted, got.Status)
	require.Contains(t, got.Error, "run it again")
	require.NotNil(t, got.CompletedAt)
	require.Equal(t, 1, got.Identifiers["name"])
	require.Equal(t, s.SHA256(), got.SubjectSHA256)

	done, err := w.Erase(context.Background(), "acme", got, s, "test")
	require.NoError(t, err)
	require.Equal(t, api.ErasureCompleted, done.Status)
	require.True(t, done.Verified)
	got, err = store.GetErasure(context.Background(), db.Pool, "acme", e.ID)
	require.NoError(t, err)
	require.Equal(t, api.ErasureCompleted, got.Status)
	require.Empty(t, got.Error)
}

// The closure is transitive: a fact derived only from an erased fact is
// erased too; one that also derives from a kept episode is rebuilt, its
// relation and its evidence to the erased one gone.
func TestErasureClosure(t *testing.T) {
	t.Parallel()
	db := pgtest.NewSchema(t)
	ctx := context.Background()
	w := revise.New(db.Pool, revise.Config{})
	require.NoError(t, store.EnsureTenant(ctx, db.Pool, "acme"))
	ch := revise.Change{Actor: "test"}
	episode := func(summary string) memory.Record {
		rec, err := w.Create(ctx, "acme", memory.Record{Type: memory.Episodic, Confidence: 1,
			Payload: json.RawMessage(`{"kind": "episodic", "timeline": [{"t": "2026-01-02T03:04:05Z", "event_kind": "user_input", "ref": "evt://x", "summary": "` + summary + `"}]}`)}, ch)
		require.NoError(t, err)
		return rec
	}
	factFrom := func(subject string, from ...uuid.UUID) memory.Record {
		rec := memory.Record{Type: memory.Semantic, Confidence: 0.9,
			Payload: json.RawMessage(`{"kind": "semantic", "subject": "` + subject + `", "predicate": "p", "object": "o", "validity": {"mode": "global"}}`)}
		for _, id := range from {
			rec.Relations = append(rec.Relations, memory.Relation{Predicate: memory.DerivedFrom, TargetID: id})
			rec.Provenance.Sources = append(rec.Provenance.Sources, memory.Source{Kind: "record", Ref: "record://" + id.String()})
		}
		got, err := w.Create(ctx, "acme", rec, ch)
		require.NoError(t, err)
		return got
	}
	theirs, kept := episode("Jane Roe called"), episode("the build broke")
	a := factFrom("a", theirs.ID)
	b := factFrom("b", a.ID)
	c := factFrom("c", a.ID, kept.ID)
	// What consolidation learned of the episodes (migration 031): the
	// erased one's goes with it, and the kept one's, which could hold what
	// an erased event said, is forgotten too.
	require.NoError(t, store.PutEpisodeFeatures(ctx, db.Pool, "acme", "v1/test", []store.EpisodeFeatures{
		{Episode: theirs.ID, Version: 1, Features: []byte(`{"p": [{"tr": "Jane Roe called"}]}`)},
		{Episode: kept.ID, Version: 1, Features: []byte(`{"p": [{"tr": "the build broke for Jane Roe"}]}`)},
	}))

	s, err := revise.NewSubject(api.ErasureRequest{Names: []string{"Jane Roe"}})
	require.NoError(t, err)
	e, err := w.StartErasure(ctx, "acme", s)
	require.NoError(t, err)
	done, err := w.Erase(ctx, "acme", e, s, "test")
	require.NoError(t, err)
	require.True(t, done.Verified)
	require.Equal(t, 1, done.Counts.Episodic)
	require.Equal(t, 2, done.Counts.Semantic, "a, and b derived from a alone")
	require.Equal(t, []uuid.UUID{c.ID}, done.Rebuilt)
	var features int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM episode_features`).Scan(&features))
	require.Zero(t, features)
	for _, id := range []uuid.UUID{theirs.ID, a.ID, b.ID} {
		_, err := store.Get(ctx, db.Pool, "acme", id)
		require.ErrorIs(t, err, store.ErrNotFound)
	}
	got, err := store.Get(ctx, db.Pool, "acme", c.ID)
	require.NoError(t, err)
	require.Equal(t, c.Version+1, got.Version)
	require.Equal(t, []memory.Source{{Kind: "record", Ref: "record://" + kept.ID.String()}}, got.Provenance.Sources)
	edges, err := store.Relations(ctx, db.Pool, "acme", c.ID)
	require.NoError(t, err)
	require.Len(t, edges, 1)
	_, err = store.Get(ctx, db.Pool, "acme", kept.ID)
	require.NoError(t, err)
	audit, err := store.Audit(ctx, db.Pool, "acme", a.ID)
	require.NoError(t, err)
	require.Len(t, audit, 1, "an erased record keeps one audit entry, naming no data")
	require.Equal(t, revise.ActionErase, audit[0].Action)
}

// An erasure finds the subject inside payloads sealed at rest (substrate
// RFC §15.9): the database holds only ciphertext, so matching opens them.
// Without the master key, the erasure stops rather than leave the subject
// behind unseen.
func TestErasureOpensSealedPayloads(t *testing.T) {
	t.Parallel()
	db := pgtest.NewSchema(t)
	ctx := context.Background()
	require.NoError(t, store.EnsureTenant(ctx, db.Pool, "acme"))
	mk, err := seal.ParseMasterKey(seal.NewMasterKey())
	require.NoError(t, err)
	sealer, err := seal.New(seal.Config{DB: db.Pool, Keys: []seal.MasterKey{mk}})
	require.NoError(t, err)
	w := revise.New(db.Pool, revise.Config{Sealer: sealer})
	ch := revise.Change{Actor: "test"}
	fact := func(subject, object string) memory.Record {
		rec, err := w.Create(ctx, "acme", memory.Record{Type: memory.Semantic, Confidence: 0.9, Sensitivity: memory.High,
			Payload: json.RawMessage(`{"kind": "semantic", "subject": "` + subject + `", "predicate": "diagnosis", "object": "` + object + `", "validity": {"mode": "global"}}`)}, ch)
		require.NoError(t, err)
		return rec
	}
	theirs, other := fact("patient-1", "Jane Roe has asthma"), fact("patient-2", "John Doe has gout")
	var raw string
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT payload::text FROM records WHERE id = $1`, theirs.ID).Scan(&raw))
	require.NotContains(t, raw, "Jane Roe", "the payload is sealed at rest")

	s, err := revise.NewSubject(api.ErasureRequest{Names: []string{"Jane Roe"}})
	require.NoError(t, err)

	// A daemon without the master key cannot match sealed payloads: it says
	// so instead of certifying an erasure it could not check.
	blind := revise.New(db.Pool, revise.Config{})
	e, err := blind.StartErasure(ctx, "acme", s)
	require.NoError(t, err)
	_, err = blind.Erase(ctx, "acme", e, s, "test")
	require.ErrorContains(t, err, "no master key")
	_, err = store.Get(ctx, db.Pool, "acme", theirs.ID)
	require.NoError(t, err, "nothing was erased blind")

	e, err = w.StartErasure(ctx, "acme", s)
	require.NoError(t, err)
	done, err := w.Erase(ctx, "acme", e, s, "test")
	require.NoError(t, err)
	require.True(t, done.Verified)
	require.Equal(t, 1, done.Counts.Semantic)
	_, err = store.Get(ctx, db.Pool, "acme", theirs.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = store.Get(ctx, db.Pool, "acme", other.ID)
	require.NoError(t, err, "the unrelated sealed record stays")
}
