package revise_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/seal"
	"github.com/engram-dev/engram/store"
)

// The revision operations work on sealed records: the gates and each
// operation read the plaintext and write ciphertext; an episode's sealed
// entries hold no searchable text; a data-key rotation re-seals all of it.
func TestRevisionsOfSealedRecords(t *testing.T) {
	t.Parallel()
	schema := pgtest.NewSchema(t)
	ctx := context.Background()
	require.NoError(t, store.EnsureTenant(ctx, schema.Pool, "acme"))
	mk, err := seal.ParseMasterKey(seal.NewMasterKey())
	require.NoError(t, err)
	s, err := seal.New(seal.Config{DB: schema.Pool, Keys: []seal.MasterKey{mk}})
	require.NoError(t, err)
	w := revise.New(schema.Pool, revise.Config{Sealer: s})
	ch := revise.Change{Actor: "test", Rationale: "because"}
	raw := func(id any) string {
		t.Helper()
		var p string
		require.NoError(t, schema.Pool.QueryRow(ctx, `SELECT payload::text FROM records WHERE id = $1`, id).Scan(&p))
		return p
	}

	fact := func(object string, sources ...memory.Source) memory.Record {
		return memory.Record{Type: memory.Semantic, Sensitivity: memory.High, Confidence: 0.9, Salience: 1,
			Provenance: memory.Provenance{Sources: sources},
			Payload:    json.RawMessage(`{"kind":"semantic","subject":"patient","predicate":"diagnosis","object":"` + object + `","validity":{"mode":"global"}}`)}
	}
	v1, err := w.Create(ctx, "acme", fact("gryphonalpha", memory.Source{Kind: "human", Ref: "person://doctor"}), ch)
	require.NoError(t, err)
	require.Contains(t, string(v1.Payload), "gryphonalpha", "the write's answer is in the clear")
	require.NotContains(t, raw(v1.ID), "gryphonalpha")
	require.Contains(t, raw(v1.ID), `"subject": "patient"`, "a fact's identity stays in the clear")

	// A writer's payload cannot pose as a sealed one.
	forged := fact("x")
	forged.Payload = json.RawMessage(`{"kind":"semantic","subject":"s","predicate":"p","sealed":{"key":1,"data":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}`)
	_, err = w.Create(ctx, "acme", forged, ch)
	var ve *schemas.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "/payload/sealed", ve.Violations[0].Pointer)

	// The same fact again is absorbed by the dedup gate, on the plaintext.
	again, err := w.Admit(ctx, "acme", fact("gryphonalpha"), ch)
	require.NoError(t, err)
	require.Equal(t, v1.ID, again.Record.ID)

	// A contradiction is seen on the plaintext: refused, the doctor's word
	// clearly outweighing the writer's.
	_, err = w.Create(ctx, "acme", fact("gryphonbeta"), ch)
	var re *revise.RejectedError
	require.ErrorAs(t, err, &re)
	require.Equal(t, []uuid.UUID{v1.ID}, re.RecordIDs)

	old, next, err := w.Supersede(ctx, "acme", v1.ID, 1, fact("gryphonbeta"), ch)
	require.NoError(t, err)
	require.Equal(t, memory.Superseded, old.Status)
	require.Contains(t, string(old.Payload), "gryphonalpha")
	require.Contains(t, string(next.Payload), "gryphonbeta")
	require.NotContains(t, raw(next.ID), "gryphonbeta")

	rb, err := w.Rollback(ctx, "acme", next.ID, 1, ch)
	require.NoError(t, err)
	require.Equal(t, memory.Retracted, rb.RolledBack.Status)
	require.NotContains(t, raw(v1.ID), "gryphonalpha")
	got, err := store.Get(ctx, schema.Pool, "acme", v1.ID)
	require.NoError(t, err)
	require.NoError(t, s.OpenRecord(ctx, "acme", &got))
	require.JSONEq(t, string(v1.Payload), string(got.Payload), "reactivated as it was")
	require.Equal(t, memory.Active, got.Status)

	// An episode: created sealed, appended to (sealed entries), deleted
	// (a revision under the append-only trigger).
	ep, err := w.Create(ctx, "acme", memory.Record{Type: memory.Episodic, Sensitivity: memory.Hyper, Confidence: 1, Salience: 1,
		Payload: json.RawMessage(`{"kind":"episodic","episode_id":"e1","timeline":[{"t":"2026-01-01T00:00:00Z","event_kind":"observation","ref":"evt://a","summary":"hippogriffone"}],"tool_graph":[]}`)}, ch)
	require.NoError(t, err)
	require.NoError(t, w.InTx(ctx, func(ctx context.Context, tx *revise.Tx) error {
		return tx.AppendTimelines(ctx, "acme", []revise.TimelineAppend{{EpisodeID: ep.ID, Sensitivity: memory.Hyper,
			Entries: []memory.TimelineEntry{{T: time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC), EventKind: "observation", Ref: "evt://b", Summary: "hippogrifftwo"}},
			Texts:   []string{"hippogrifftwo"}}}, ch)
	}))
	var entry, tsv string
	require.NoError(t, schema.Pool.QueryRow(ctx, `SELECT entry::text, coalesce(tsv::text, '') FROM episode_entries WHERE record_id = $1`, ep.ID).Scan(&entry, &tsv))
	require.NotContains(t, entry, "hippogriff")
	require.Contains(t, entry, "evt://b")
	require.Empty(t, tsv, "a sealed entry has no search text")
	require.NotContains(t, raw(ep.ID), "hippogriff")

	deleted, err := w.Delete(ctx, "acme", ep.ID, ch)
	require.NoError(t, err)
	require.Equal(t, memory.Deleted, deleted.Status)
	require.Contains(t, string(deleted.Payload), "hippogriffone")
	got, err = store.Get(ctx, schema.Pool, "acme", ep.ID)
	require.NoError(t, err)
	require.NoError(t, s.OpenRecord(ctx, "acme", &got))
	require.Contains(t, string(got.Payload), "hippogriffone")
	require.Contains(t, string(got.Payload), "hippogrifftwo", "the appended entry, opened in its place")

	// No version snapshot holds a sealed word.
	var leaks int
	require.NoError(t, schema.Pool.QueryRow(ctx, `SELECT count(*) FROM record_versions
		WHERE snapshot::text LIKE '%gryphon%' OR snapshot::text LIKE '%hippogriff%'`).Scan(&leaks))
	require.Zero(t, leaks)

	// An artifact, sealed under the first data key.
	art, err := w.PutArtifact(ctx, "acme", "text/plain", []byte("hippogriff build log"))
	require.NoError(t, err)
	require.True(t, art.Sealed)

	// A data-key rotation re-seals all of it, in steps, and it reads back.
	steps := 0
	for {
		st, err := w.RotateDataKey(ctx, "acme", 2)
		require.NoError(t, err)
		require.Equal(t, 2, st.Version)
		steps++
		if st.Done {
			break
		}
		require.Less(t, steps, 50)
	}
	require.Greater(t, steps, 2, "bounded batches")
	got, err = store.Get(ctx, schema.Pool, "acme", ep.ID)
	require.NoError(t, err)
	require.NoError(t, s.OpenRecord(ctx, "acme", &got))
	require.Contains(t, string(got.Payload), "hippogrifftwo")
	hist, err := store.History(ctx, schema.Pool, "acme", v1.ID)
	require.NoError(t, err)
	for _, v := range hist {
		require.NoError(t, s.OpenRecord(ctx, "acme", &v.Record))
		require.Contains(t, string(v.Record.Payload), "gryphonalpha")
	}
	a, content, err := store.GetArtifact(ctx, schema.Pool, "acme", art.SHA256)
	require.NoError(t, err)
	var env struct{ Sealed struct{ Key int } }
	require.NoError(t, json.Unmarshal(content, &env))
	require.Equal(t, 2, env.Sealed.Key, "the artifact is re-sealed under the new key")
	require.True(t, a.Sealed)
	plain, err := s.Open(ctx, "acme", content)
	require.NoError(t, err)
	require.Equal(t, "hippogriff build log", string(plain))
}
