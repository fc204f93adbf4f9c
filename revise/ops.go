package revise

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
)

// Update runs [Tx.Update] in a transaction of its own.
func (w *Writer) Update(ctx context.Context, tenant string, id uuid.UUID, version int, payload json.RawMessage, tags []string, ch Change) (memory.Record, error) {
	return inTx(ctx, w, func(ctx context.Context, tx *Tx) (memory.Record, error) {
		return tx.Update(ctx, tenant, id, version, payload, tags, ch)
	})
}

// AppendEpisode runs [Tx.AppendEpisode] in a transaction of its own.
func (w *Writer) AppendEpisode(ctx context.Context, tenant string, id uuid.UUID, add EpisodeAppend, ch Change) (memory.Record, error) {
	return inTx(ctx, w, func(ctx context.Context, tx *Tx) (memory.Record, error) {
		return tx.AppendEpisode(ctx, tenant, id, add, ch)
	})
}

// Supersede runs [Tx.Supersede] in a transaction of its own.
func (w *Writer) Supersede(ctx context.Context, tenant string, id uuid.UUID, version int, next memory.Record, ch Change) (old, created memory.Record, err error) {
	err = w.InTx(ctx, func(ctx context.Context, tx *Tx) error {
		var err error
		old, created, err = tx.Supersede(ctx, tenant, id, version, next, ch)
		return err
	})
	return old, created, err
}

// Fork runs [Tx.Fork] in a transaction of its own.
func (w *Writer) Fork(ctx context.Context, tenant string, id uuid.UUID, version int, variants []memory.Record, ch Change) (old memory.Record, created []memory.Record, err error) {
	err = w.InTx(ctx, func(ctx context.Context, tx *Tx) error {
		var err error
		old, created, err = tx.Fork(ctx, tenant, id, version, variants, ch)
		return err
	})
	return old, created, err
}

// Contest runs [Tx.Contest] in a transaction of its own.
func (w *Writer) Contest(ctx context.Context, tenant string, ids []uuid.UUID, next *memory.Record, ch Change) ([]memory.Record, error) {
	return inTx(ctx, w, func(ctx context.Context, tx *Tx) ([]memory.Record, error) {
		return tx.Contest(ctx, tenant, ids, next, ch)
	})
}

// Reinstate runs [Tx.Reinstate] in a transaction of its own.
func (w *Writer) Reinstate(ctx context.Context, tenant string, id uuid.UUID, version int, ch Change) (memory.Record, error) {
	return inTx(ctx, w, func(ctx context.Context, tx *Tx) (memory.Record, error) {
		return tx.Reinstate(ctx, tenant, id, version, ch)
	})
}

// Retract runs [Tx.Retract] in a transaction of its own.
func (w *Writer) Retract(ctx context.Context, tenant string, id uuid.UUID, version int, ch Change) (memory.Record, error) {
	return inTx(ctx, w, func(ctx context.Context, tx *Tx) (memory.Record, error) {
		return tx.Retract(ctx, tenant, id, version, ch)
	})
}

// Merge runs [Tx.Merge] in a transaction of its own.
func (w *Writer) Merge(ctx context.Context, tenant string, ids []uuid.UUID, template *memory.Record, ch Change) (memory.Record, error) {
	return inTx(ctx, w, func(ctx context.Context, tx *Tx) (memory.Record, error) {
		return tx.Merge(ctx, tenant, ids, template, ch)
	})
}

// Delete runs [Tx.Delete] in a transaction of its own.
func (w *Writer) Delete(ctx context.Context, tenant string, id uuid.UUID, ch Change) (memory.Record, error) {
	return inTx(ctx, w, func(ctx context.Context, tx *Tx) (memory.Record, error) {
		return tx.Delete(ctx, tenant, id, ch)
	})
}

// Purge runs [Tx.Purge] in a transaction of its own.
func (w *Writer) Purge(ctx context.Context, tenant string, id uuid.UUID, ch Change) error {
	return w.InTx(ctx, func(ctx context.Context, tx *Tx) error { return tx.Purge(ctx, tenant, id, ch) })
}

// Amend runs [Tx.Amend] in a transaction of its own.
func (w *Writer) Amend(ctx context.Context, tenant string, id uuid.UUID, version int, next memory.Record, ch Change) (memory.Record, error) {
	return inTx(ctx, w, func(ctx context.Context, tx *Tx) (memory.Record, error) {
		return tx.Amend(ctx, tenant, id, version, next, ch)
	})
}
