package revise_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/store"
)

func episode(thread string) memory.Record {
	return memory.Record{Type: memory.Episodic, Confidence: 1, ThreadID: thread, Tags: []string{"thread:" + thread},
		Payload:    json.RawMessage(`{"kind":"episodic","timeline":[]}`),
		Provenance: memory.Provenance{Sources: []memory.Source{src("event", "evt://"+thread)}}}
}

func working(thread string) memory.Record {
	return memory.Record{Type: memory.Working, Confidence: 1, ThreadID: thread,
		Payload: json.RawMessage(`{"kind":"working","thread_id":"` + thread + `","state":"planning"}`)}
}

// CreateMany writes what Create writes, record by record: the record at
// version 1, its audit entry, and its signed stamp (none for working
// memory); a record the gates must read memory for (a fact) is admitted
// as Create admits it, in its place.
func TestCreateManyWritesWhatCreateWrites(t *testing.T) {
	t.Parallel()
	b := setup(t)
	recs := []memory.Record{episode("t1"), working("t1"), fact("make", nil, 0.7, src("event", "evt://f")), episode("t2"), working("t2")}
	var created []memory.Record
	require.NoError(t, b.w.InTx(b.ctx, func(ctx context.Context, tx *revise.Tx) error {
		var err error
		created, err = tx.CreateMany(ctx, "acme", recs, b.ch)
		return err
	}))
	require.Len(t, created, len(recs))
	var ids []uuid.UUID
	for i, c := range created {
		require.Equal(t, recs[i].Type, c.Type)
		got, err := store.Get(b.ctx, b.pool, "acme", c.ID)
		require.NoError(t, err)
		require.Equal(t, memory.Active, got.Status)
		require.Equal(t, 1, got.Version)
		audit, err := store.Audit(b.ctx, b.pool, "acme", c.ID)
		require.NoError(t, err)
		require.Len(t, audit, 1)
		require.Equal(t, revise.ActionCreate, audit[0].Action)
		ids = append(ids, c.ID)
	}
	stamps, err := store.Stamps(b.ctx, b.pool, "acme", ids)
	require.NoError(t, err)
	require.Contains(t, stamps, created[0].ID)
	require.Contains(t, stamps, created[2].ID)
	require.NotContains(t, stamps, created[1].ID, "working memory is not stamped")
	res, err := b.w.AuditProvenance(b.ctx, store.Key{}, 100, nil)
	require.NoError(t, err)
	require.Equal(t, revise.ProvenanceAudit{Checked: 3, Valid: 3}, res, "every stamp is signed and matches its record")
}

// One record the schema gate refuses refuses the call: nothing is written.
func TestCreateManyRefusesAnInvalidRecord(t *testing.T) {
	t.Parallel()
	b := setup(t)
	bad := episode("t2")
	bad.Confidence = 2
	err := b.w.InTx(b.ctx, func(ctx context.Context, tx *revise.Tx) error {
		_, err := tx.CreateMany(ctx, "acme", []memory.Record{episode("t1"), bad}, b.ch)
		return err
	})
	var ve *schemas.ValidationError
	require.ErrorAs(t, err, &ve)
	page, err := store.List(b.ctx, b.pool, "acme", store.Filter{Statuses: memory.Statuses})
	require.NoError(t, err)
	require.Empty(t, page.Records)
}
