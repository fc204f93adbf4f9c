package revise

import (
	"context"
	"fmt"
	"time"

	"github.com/engram-dev/engram/access"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// opOf is the operation an audit action is (write-path RFC §12.8.2):
// feedback reports a use; validation annotations are review decisions and
// curation notes; soft delete is delete, expiry and restore; governance
// (and curation's pin, unpin and reclassify) is admin.
func opOf(action string) access.Op {
	switch action {
	case ActionFeedback:
		return access.OpFeedback
	case ActionApprove, ActionReject, ActionEscalate, ActionApprovalTimeout, ActionAnnotate:
		return access.OpAnnotate
	case ActionDelete, ActionExpire, ActionRestore:
		return access.OpDelete
	case ActionPurge:
		return access.OpPurge
	case ActionRollback, ActionReactivate, ActionQuarantine, ActionRelease, ActionPin, ActionUnpin, ActionReclassify:
		// Keeping memory from forgetting, and who may read it, are a
		// curator's decisions (write-path RFC §12.7.4).
		return access.OpAdmin
	}
	return access.OpWrite
}

// authorize refuses, with a [*access.DeniedError], a revision ch's
// principal may not make: action on rec, as rec is written. A change with
// no principal is the system's own (the policy plane, decay,
// consolidation) and is not checked. A revision of a record that existed
// before also needs the record visible to the key (its clearance and
// domains): a key does not revise what it may not read. An allowed
// revision counts against the principal's write budget, charged when the
// transaction commits ([Tx.chargeBudgets]).
func (t *Tx) authorize(tenant string, rec memory.Record, action string, ch Change) error {
	p := ch.Principal
	if p == nil {
		return nil
	}
	tgt := access.TargetOf(rec)
	d := access.Decide(*p, opOf(action), tgt, ch.Rules)
	if d.Allowed && action != ActionCreate && action != ActionSubmitForReview {
		d = access.Clear(*p, tgt)
	}
	if err := d.Err(); err != nil {
		return err
	}
	if t.charges == nil {
		t.charges = map[charge]int{}
	}
	t.charges[charge{tenant: tenant, agent: p.BudgetAgent(), session: p.Session, role: p.Role}]++
	return nil
}

// precheck refuses a new record ch's principal may not write, before any
// gate runs: the same decision [Tx.authorize] makes when the record is
// audited, made early so that a refused write costs nothing.
func precheck(rec memory.Record, ch Change) error {
	if ch.Principal == nil || !rec.Type.Valid() {
		return nil // an invalid type is refused by validation, precisely
	}
	return access.Decide(*ch.Principal, access.OpWrite, access.TargetOf(rec), ch.Rules).Err()
}

// checkKeeping refuses, with a [*access.DeniedError] naming the field, a
// new record that ch's principal asks to keep beyond forgetting when the
// principal is not a curator: pinned (decay never prunes it), or a
// deletion policy of manual_only or never that is not its type's
// configured default (substrate RFC §15A.3, §11). Keeping memory from
// decay and deletion is curation (write-path RFC §12.7.4), a person's
// decision; an agent's record is forgotten as its type's records are. The
// system's own writes are not checked.
func (w *Writer) checkKeeping(rec memory.Record, ch Change, pointer string) error {
	p := ch.Principal
	if p == nil || p.Role == access.Curator {
		return nil
	}
	if rec.Lifecycle.Pinned {
		return &access.DeniedError{Rule: "role:" + string(p.Role) + ":pin", Reason: access.ReasonRole, Pointer: pointer + "/lifecycle/pinned",
			Detail: "only a curator's key may pin a record: pinned records are never forgotten"}
	}
	dp := rec.Lifecycle.DeletionPolicy
	if _, def := w.cfg.Defaults(rec.Type); (dp == memory.ManualOnly || dp == memory.Never) && dp != def {
		return &access.DeniedError{Rule: "role:" + string(p.Role) + ":deletion_policy", Reason: access.ReasonRole, Pointer: pointer + "/lifecycle/deletion_policy",
			Detail: fmt.Sprintf("only a curator's key may set deletion policy %s, which keeps a record from being forgotten; %s records get %s", dp, rec.Type, def)}
	}
	return nil
}

// charge is whose write budget a transaction's revisions count against.
type charge struct {
	tenant, agent, session string
	role                   access.Role
}

// chargeBudgets counts the transaction's revisions against their agents'
// session budgets (write-path RFC §12.11.2), in the transaction, and
// refuses the whole transaction with an [*access.OverBudgetError] when one
// is spent: nothing it wrote is kept, and the refused writes are not
// counted.
func (t *Tx) chargeBudgets(ctx context.Context) error {
	b := t.w.cfg.Budgets
	window := b.WindowOrDefault()
	for c, n := range t.charges {
		limit := b.Limit(c.role)
		if limit <= 0 {
			continue
		}
		now := t.w.clock()
		writes, start, err := store.ChargeBudget(ctx, t.tx, c.tenant, c.agent, c.session, n, now, window)
		if err != nil {
			return err
		}
		if writes > int64(limit) {
			return &access.OverBudgetError{Budget: "write:" + string(c.role), Agent: c.agent, Session: c.session,
				Limit: limit, RetryAfter: max(start.Add(window).Sub(now), time.Second)}
		}
	}
	return nil
}

// ChargeBudget counts n writes that do not pass through the write path —
// events staged for the policy plane — against p's session budget, in a
// transaction of its own, and refuses them with an
// [*access.OverBudgetError] when the budget cannot hold them.
func (w *Writer) ChargeBudget(ctx context.Context, p access.Principal, n int) error {
	if w.cfg.Budgets.Limit(p.Role) <= 0 || n == 0 {
		return nil // unbudgeted: no transaction to count in
	}
	return w.InTx(ctx, func(ctx context.Context, tx *Tx) error {
		tx.charges = map[charge]int{{tenant: p.Tenant, agent: p.BudgetAgent(), session: p.Session, role: p.Role}: n}
		return nil
	})
}
