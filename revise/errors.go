package revise

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/store"
)

// Conflict codes: why a revision was refused given the current state.
const (
	// CodeVersionConflict: the record changed since the version the caller read.
	CodeVersionConflict = "version_conflict"
	// CodeNotLive: the record has left the active set (superseded, retracted, …).
	CodeNotLive = "not_live"
	// CodeActiveFactExists: another active fact has the same scope, subject,
	// predicate and condition set (substrate RFC §7).
	CodeActiveFactExists = "active_fact_exists"
	// CodeNotAllowed: the operation does not apply to this record's type or
	// policy (e.g. updating a non-working record, revising an episode).
	CodeNotAllowed = "not_allowed"
	// CodeImmutable: the change would rewrite what may only grow or never
	// change (an episodic timeline, a record's identity).
	CodeImmutable = "immutable"
	// CodeExists: a record with that id already exists.
	CodeExists = "exists"
	// CodeEntryKeyTaken: another OpenIntent memory entry has the same
	// agent, namespace and key (OpenIntent RFC-0015 §1.2).
	CodeEntryKeyTaken = "entry_key_taken"
)

// ConflictError is a revision refused because of the current state of the
// records it names. Nothing was written.
type ConflictError struct {
	Code      string
	Detail    string
	RecordIDs []uuid.UUID

	// For CodeActiveFactExists: the fact that ran into another, and its
	// tenant, so that the other can be named once the transaction ended.
	fact   *memory.Record
	tenant string
}

func (e *ConflictError) Error() string { return e.Code + ": " + e.Detail }

func conflict(code string, ids []uuid.UUID, format string, args ...any) *ConflictError {
	return &ConflictError{Code: code, Detail: fmt.Sprintf(format, args...), RecordIDs: ids}
}

// TooLargeError is a payload over the configured size limit.
type TooLargeError struct {
	Pointer string
	Size    int
	Limit   int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is %d bytes, over the limit of %d", strings.TrimPrefix(e.Pointer, "/"), e.Size, e.Limit)
}

// written turns a store error of a write of rec into the write path's.
func written(tenant string, rec memory.Record, err error) error {
	var im *store.ImmutableError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrActiveFactExists):
		var p memory.SemanticPayload
		_ = json.Unmarshal(rec.Payload, &p)
		ce := conflict(CodeActiveFactExists, nil,
			"an active fact %q %q with the same scope and conditions exists: supersede, fork or contest it", p.Subject, p.Predicate)
		ce.fact, ce.tenant = &rec, tenant
		return ce
	case errors.Is(err, store.ErrEntryKeyTaken):
		return conflict(CodeEntryKeyTaken, nil, "a memory entry with the same agent, namespace and key exists")
	case errors.Is(err, store.ErrExists):
		return conflict(CodeExists, []uuid.UUID{rec.ID}, "record %s already exists", rec.ID)
	case errors.Is(err, store.ErrVersionConflict):
		return conflict(CodeVersionConflict, []uuid.UUID{rec.ID}, "record %s changed underneath", rec.ID)
	case errors.As(err, &im):
		return conflict(CodeImmutable, []uuid.UUID{rec.ID}, "%s", im.Message)
	case errors.Is(err, store.ErrTooLargeToIndex):
		// The fields checkIndexed bounds cannot get here; a value of
		// another indexed field can.
		return &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: "", Message: "holds a value too large for the database's indexes (about 2.7 KB an entry)"}}}
	}
	return err
}

// nameFact names the active fact a [CodeActiveFactExists] conflict ran
// into. It runs after the failed transaction has ended: asking inside it is
// impossible, and asking beside it would hold two connections at once, which
// can exhaust the pool under contention.
func (w *Writer) nameFact(ctx context.Context, err error) error {
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.fact == nil {
		return err
	}
	if other, ferr := store.FindActiveFact(ctx, w.db, ce.tenant, ce.fact.Scope, ce.fact.Payload); ferr == nil {
		ce.RecordIDs = []uuid.UUID{other}
	}
	ce.fact = nil
	return err
}
