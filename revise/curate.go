package revise

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/access"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/schemas"
)

// Curation (write-path RFC §12.7.4, "Mode 3: Manual Curation"): "Human
// curators can: Pin items to prevent GC ...; Reclassify items ...;
// Annotate items with curation notes". Each is a revision of an existing
// record, audited; pin, unpin and reclassify are governance (admin: a
// curator's, as the role matrix of package access has it), an annotation
// is a validation annotation (a verifier's, an orchestrator's or a
// curator's).
const (
	ActionPin        = "pin"
	ActionUnpin      = "unpin"
	ActionReclassify = "reclassify"
	ActionAnnotate   = "annotate"
)

// MaxNoteBytes bounds a curation note.
const MaxNoteBytes = 4096

// Keeping is what pin and unpin set: DeletionPolicy, when not empty, is
// the record's new deletion policy (substrate RFC §15A.3).
type Keeping struct {
	DeletionPolicy memory.DeletionPolicy
}

// Pin keeps a live record from being forgotten (§12.7.4: "Pin items to
// prevent GC"): decay never prunes a pinned record. With a deletion policy,
// it sets that too. version, when non-zero, must be the record's current
// version. Pinning a pinned record with nothing else to change is a
// revision all the same: the curator's decision is audited.
func (t *Tx) Pin(ctx context.Context, tenant string, id uuid.UUID, version int, k Keeping, ch Change) (memory.Record, error) {
	return t.keep(ctx, tenant, id, version, true, k, ActionPin, ch)
}

// Unpin lets a pinned record be forgotten again as its deletion policy
// says; with a deletion policy, it sets that too.
func (t *Tx) Unpin(ctx context.Context, tenant string, id uuid.UUID, version int, k Keeping, ch Change) (memory.Record, error) {
	return t.keep(ctx, tenant, id, version, false, k, ActionUnpin, ch)
}

func (t *Tx) keep(ctx context.Context, tenant string, id uuid.UUID, version int, pinned bool, k Keeping, action string, ch Change) (memory.Record, error) {
	if err := checkChange(ch); err != nil {
		return memory.Record{}, err
	}
	switch k.DeletionPolicy {
	case "", memory.AutoPrune, memory.ManualOnly, memory.Never:
	default:
		return memory.Record{}, &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: "/deletion_policy",
			Message: "must be one of auto_prune, manual_only, never"}}}
	}
	rec, err := t.lockLive(ctx, tenant, id, version)
	if err != nil {
		return memory.Record{}, err
	}
	rec.Lifecycle.Pinned = pinned
	if k.DeletionPolicy != "" {
		rec.Lifecycle.DeletionPolicy = k.DeletionPolicy
	}
	return rec, t.curate(ctx, tenant, &rec, action, ch)
}

// Reclassify sets a live record's sensitivity class (§12.7.4: "Reclassify
// items"), which decides who may read it (write-path RFC §12.8) and
// whether its payload is sealed at rest; its type, payload and everything
// else are kept. version, when non-zero, must be its current version.
func (t *Tx) Reclassify(ctx context.Context, tenant string, id uuid.UUID, version int, s memory.Sensitivity, ch Change) (memory.Record, error) {
	if err := checkChange(ch); err != nil {
		return memory.Record{}, err
	}
	if !s.Valid() {
		return memory.Record{}, &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: "/sensitivity",
			Message: "is required: one of public, low, medium, high, hyper"}}}
	}
	rec, err := t.lockLive(ctx, tenant, id, version)
	if err != nil {
		return memory.Record{}, err
	}
	if rec.Sensitivity == s {
		return memory.Record{}, conflict(CodeNotAllowed, []uuid.UUID{id}, "record %s is %s already", id, s)
	}
	if p := ch.Principal; p != nil {
		// As it was: a key reclassifies only what it may read, and the
		// audit below decides on the record as it is written.
		tgt := access.TargetOf(rec)
		d := access.Decide(*p, opOf(ActionReclassify), tgt, ch.Rules)
		if d.Allowed {
			d = access.Clear(*p, tgt)
		}
		if err := d.Err(); err != nil {
			return memory.Record{}, err
		}
	}
	rec.Sensitivity = s
	return rec, t.curate(ctx, tenant, &rec, ActionReclassify, ch)
}

// curate writes rec as its next version and audits action, which
// authorizes it.
func (t *Tx) curate(ctx context.Context, tenant string, rec *memory.Record, action string, ch Change) error {
	if err := t.w.validate(*rec, ""); err != nil {
		return err
	}
	if err := t.revise(ctx, tenant, rec); err != nil {
		return err
	}
	return t.audit(ctx, tenant, *rec, action, ch)
}

// Annotate keeps a curator's note on a record in its audit trail
// (§12.7.4: "Annotate items with curation notes"), at its current version,
// whatever its status: a note is no revision, and the record is not
// changed.
func (t *Tx) Annotate(ctx context.Context, tenant string, id uuid.UUID, note string, ch Change) (memory.Record, error) {
	if err := checkChange(ch); err != nil {
		return memory.Record{}, err
	}
	note = strings.TrimSpace(note)
	switch {
	case note == "":
		return memory.Record{}, &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: "/note", Message: "is required: the curation note"}}}
	case len(note) > MaxNoteBytes || !utf8.ValidString(note) || strings.ContainsRune(note, 0):
		return memory.Record{}, &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: "/note",
			Message: fmt.Sprintf("must be UTF-8 text without NUL, at most %d bytes", MaxNoteBytes)}}}
	}
	rec, err := t.lock(ctx, tenant, id)
	if err != nil {
		return memory.Record{}, err
	}
	ch.Rationale = note
	return rec, t.audit(ctx, tenant, rec, ActionAnnotate, ch)
}

// Pin runs [Tx.Pin] in a transaction of its own.
func (w *Writer) Pin(ctx context.Context, tenant string, id uuid.UUID, version int, k Keeping, ch Change) (memory.Record, error) {
	return inTx(ctx, w, func(ctx context.Context, tx *Tx) (memory.Record, error) {
		return tx.Pin(ctx, tenant, id, version, k, ch)
	})
}

// Unpin runs [Tx.Unpin] in a transaction of its own.
func (w *Writer) Unpin(ctx context.Context, tenant string, id uuid.UUID, version int, k Keeping, ch Change) (memory.Record, error) {
	return inTx(ctx, w, func(ctx context.Context, tx *Tx) (memory.Record, error) {
		return tx.Unpin(ctx, tenant, id, version, k, ch)
	})
}

// Reclassify runs [Tx.Reclassify] in a transaction of its own.
func (w *Writer) Reclassify(ctx context.Context, tenant string, id uuid.UUID, version int, s memory.Sensitivity, ch Change) (memory.Record, error) {
	return inTx(ctx, w, func(ctx context.Context, tx *Tx) (memory.Record, error) {
		return tx.Reclassify(ctx, tenant, id, version, s, ch)
	})
}

// Annotate runs [Tx.Annotate] in a transaction of its own.
func (w *Writer) Annotate(ctx context.Context, tenant string, id uuid.UUID, note string, ch Change) (memory.Record, error) {
	return inTx(ctx, w, func(ctx context.Context, tx *Tx) (memory.Record, error) {
		return tx.Annotate(ctx, tenant, id, note, ch)
	})
}
