package revise

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// ObserveFact writes an observed semantic fact — from an event, or learned
// by consolidation — through the gates ([Tx.Admit]), so that every writer
// of facts follows the same semantic revision rules (substrate RFC §7;
// write-path RFC §12.2.4, §12.3): the same fact again is absorbed (merged
// when it brings new evidence), a contradicting one is decided by its
// scope's contradiction policy. It runs in a savepoint: a fact the gates
// refuse, or one that runs into a concurrent writer of the same fact, does
// not abort the caller's transaction; the refusal is returned.
func (t *Tx) ObserveFact(ctx context.Context, tenant string, rec memory.Record, ch Change) (Admission, error) {
	if rec.Type != memory.Semantic {
		return Admission{}, fmt.Errorf("observe fact: %s is not a fact", rec.Type.ARecord())
	}
	var a Admission
	var inner *Tx
	err := pg.WithTx(ctx, t.tx, func(ctx context.Context, sp pgx.Tx) error {
		inner = &Tx{w: t.w, tx: sp, reads: t.reads}
		var err error
		a, err = inner.Admit(ctx, tenant, rec, ch)
		return err
	})
	if err == nil {
		t.audited = append(t.audited, inner.audited...)
		t.mergeReputation(inner)
	}
	var re *RejectedError
	if errors.As(err, &re) {
		// Counted against the agent with the transaction's other counts.
		d := store.ReputationDelta{Rejected: 1}
		if re.Reason == string(ReasonContradiction) {
			d.Contradictions = 1
		}
		t.noteLater(tenant, rec, d)
	}
	return a, err
}

// jsonEqual reports whether two JSON documents hold the same value.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}
