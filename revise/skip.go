package revise

import (
	"context"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/store"
)

// ActionSkip is the audit action of a write a job left out because the
// write path refused it.
const ActionSkip = "skip"

// NoteSkipped audits a record a job did not write because the write path
// refused it (substrate RFC §15A.8: who did what, and why): an audit
// entry of the tenant naming no record, its rationale the reason.
func (w *Writer) NoteSkipped(ctx context.Context, tenant, actor, rationale string) error {
	return store.InsertAudit(ctx, w.db, tenant, store.AuditRow{RecordID: uuid.Nil, Action: ActionSkip, Actor: actor, Rationale: rationale})
}
