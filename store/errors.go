package store

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
)

// ErrNotFound means no record (or artifact) with that id exists in the
// caller's tenant. Records of other tenants are indistinguishable from
// missing ones.
var ErrNotFound = errors.New("not found")

// ErrBadCursor means a pagination cursor was not one this store issued.
var ErrBadCursor = errors.New("invalid cursor")

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
)

// ConflictError is a revision refused because of the current state of the
// records it names. Nothing was written.
type ConflictError struct {
	Code      string
	Detail    string
	RecordIDs []uuid.UUID

	fact *memory.Record // for CodeActiveFactExists: the fact that ran into another
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
