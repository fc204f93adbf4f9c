package revise

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// FactOutcome says what [Tx.ObserveFact] did with an observed fact.
type FactOutcome string

// Fact outcomes.
const (
	// FactCreated: no active fact had its key; it is the fact now.
	FactCreated FactOutcome = "created"
	// FactAbsorbed: the active fact with its key says the same; nothing
	// new was stored.
	FactAbsorbed FactOutcome = "absorbed"
	// FactContested: the active fact with its key says otherwise; both are
	// contested until consolidation or an operator resolves them.
	FactContested FactOutcome = "contested"
)

// ObserveFact writes an observed semantic fact under the semantic revision
// rules (substrate RFC §7; write-path RFC §12.2.4, structurally): an active
// fact with the same scope, subject, predicate and conditions and the same
// object absorbs it; one with another object is contested by it. It returns
// the record that stands for the observation: the new, the absorbing or the
// contesting one. Every writer of observed facts (the policy plane,
// consolidation) decides here, the same way.
func (t *Tx) ObserveFact(ctx context.Context, tenant string, rec memory.Record, ch Change) (memory.Record, FactOutcome, error) {
	if err := checkChange(ch); err != nil {
		return memory.Record{}, "", err
	}
	if rec.Type != memory.Semantic {
		return memory.Record{}, "", fmt.Errorf("observe fact: a %s record is not a fact", rec.Type)
	}
	// The insert runs in a savepoint: running into the active fact must
	// not abort the caller's transaction.
	var created memory.Record
	err := pg.WithTx(ctx, t.tx, func(ctx context.Context, sp pgx.Tx) error {
		var err error
		created, err = (&Tx{w: t.w, tx: sp}).create(ctx, tenant, rec, memory.Active, "", ch)
		return err
	})
	var ce *ConflictError
	if err == nil {
		return created, FactCreated, nil
	}
	if !errors.As(err, &ce) || ce.Code != CodeActiveFactExists {
		return memory.Record{}, "", err
	}
	id, err := store.FindActiveFact(ctx, t.tx, tenant, rec.Scope, rec.Payload)
	if err != nil {
		return memory.Record{}, "", err
	}
	existing, err := store.Get(ctx, t.tx, tenant, id)
	if err != nil {
		return memory.Record{}, "", err
	}
	var cur, next memory.SemanticPayload
	if err := json.Unmarshal(existing.Payload, &cur); err != nil {
		return memory.Record{}, "", fmt.Errorf("decode fact: %w", err)
	}
	if err := json.Unmarshal(rec.Payload, &next); err != nil {
		return memory.Record{}, "", fmt.Errorf("decode fact: %w", err)
	}
	if jsonEqual(cur.Object, next.Object) {
		return existing, FactAbsorbed, nil
	}
	recs, err := t.Contest(ctx, tenant, []uuid.UUID{existing.ID}, &rec,
		Change{Actor: ch.Actor, Rationale: "a new observation contradicts this fact", Evidence: ch.Evidence})
	if err != nil {
		return memory.Record{}, "", err
	}
	return recs[len(recs)-1], FactContested, nil
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
