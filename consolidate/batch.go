package consolidate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/store"
)

// writeBatch is how many learned records one transaction writes: a pass
// commits in batches rather than once a record; a batch that fails is
// rolled back whole and redone by the next pass (writes are idempotent).
const writeBatch = 50

// written is what writing one learned record did, counted once its batch
// has committed.
type written struct {
	outcome string
	uses    [2]int // a procedure's successes and failures since its stored version
	reused  int    // a plan's uses since its stored version
}

// inBatches writes items through the write path, writeBatch a
// transaction, and hands each committed write to done. A batch the write
// path refuses is written again one item a transaction, and an item it
// still refuses — a record its schema or gates refuse, a value too large
// to index — is handed to skip and left out: one bad record never stops a
// pass, or every pass after it, from learning the rest. Other errors (the
// database gone) fail the call.
func inBatches[T any](ctx context.Context, w *revise.Writer, items []T, write func(context.Context, *revise.Tx, T) (written, error), done func(written), skip func(T, error) error) error {
	for len(items) > 0 {
		batch := items[:min(len(items), writeBatch)]
		items = items[len(batch):]
		out, err := writeAll(ctx, w, batch, write)
		if err == nil {
			for _, wr := range out {
				done(wr)
			}
			continue
		}
		if !refused(err) || len(batch) == 1 && skip == nil {
			return err
		}
		for _, it := range batch {
			out, err := writeAll(ctx, w, []T{it}, write)
			switch {
			case err == nil:
				done(out[0])
			case refused(err) && skip != nil:
				if err := skip(it, err); err != nil {
					return err
				}
			default:
				return err
			}
		}
	}
	return nil
}

// writeAll writes items in one transaction.
func writeAll[T any](ctx context.Context, w *revise.Writer, items []T, write func(context.Context, *revise.Tx, T) (written, error)) ([]written, error) {
	var out []written
	err := w.InTx(ctx, func(ctx context.Context, tx *revise.Tx) error {
		out = out[:0]
		for _, it := range items {
			wr, err := write(ctx, tx, it)
			if err != nil {
				return err
			}
			out = append(out, wr)
		}
		return nil
	})
	return out, err
}

// refused reports whether the write path refused a record for what it
// is (its schema, a gate, a limit, a value too large to index, a value
// the database rejects), rather than failing for want of a database: the
// record can be skipped, the pass go on.
func refused(err error) bool {
	var ve *schemas.ValidationError
	var re *revise.RejectedError
	var tl *revise.TooLargeError
	var ce *revise.ConflictError
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &ve), errors.As(err, &re), errors.As(err, &tl), errors.As(err, &ce),
		errors.Is(err, store.ErrTooLargeToIndex), errors.Is(err, store.ErrActiveFactExists), errors.Is(err, store.ErrExists):
		return true
	case errors.As(err, &pe):
		// Data exceptions, integrity violations, program limits (an index
		// row too large): the record's, not the database's.
		return strings.HasPrefix(pe.Code, "22") || strings.HasPrefix(pe.Code, "23") || strings.HasPrefix(pe.Code, "54")
	}
	return false
}

// skipped notes a learned record the write path refused: counted in the
// run and the metric, logged, and audited on the tenant (substrate RFC
// §15A.8: who did what and why), so that an operator sees what a pass
// left out and why.
func (c *Consolidator) skipped(ctx context.Context, run Run, tenant, kind, name string, err error) error {
	c.metrics.skipped.WithLabelValues(kind).Inc()
	run.Add("skipped_"+kind, 1)
	c.cfg.Logger.Warn("consolidation skipped a record the write path refused", slog.String("tenant", tenant),
		slog.String("type", kind), slog.String("name", name), slog.Any("error", err))
	return c.cfg.Writer.NoteSkipped(ctx, tenant, actor, fmt.Sprintf("skipped %s %q: %v", kind, name, err))
}
