package store

import "errors"

// ErrNotFound means no record (or artifact) with that id exists in the
// caller's tenant. Records of other tenants are indistinguishable from
// missing ones.
var ErrNotFound = errors.New("not found")

// ErrBadCursor means a pagination cursor was not one this package issued.
var ErrBadCursor = errors.New("invalid cursor")

// Errors of writes the database refused.
var (
	// ErrVersionConflict: an update guarded by the record's previous version
	// found another version stored.
	ErrVersionConflict = errors.New("the record changed underneath")
	// ErrActiveFactExists: another active fact has the same scope, subject,
	// predicate and condition set (the records_one_active_fact index).
	ErrActiveFactExists = errors.New("an active fact with the same scope, subject, predicate and conditions exists")
	// ErrExists: a record with that id exists.
	ErrExists = errors.New("the record exists")
	// ErrTooLargeToIndex: a value is over the size an index entry can hold.
	ErrTooLargeToIndex = errors.New("a value is too large to index")
	// ErrEntryKeyTaken: another OpenIntent memory entry has the same agent,
	// namespace and key (the records_openintent_key index; OpenIntent
	// RFC-0015 §1.2).
	ErrEntryKeyTaken = errors.New("a memory entry with the same agent, namespace and key exists")
)

// ImmutableError is a change a trigger refused: it would rewrite what may
// only grow or never change (an episodic timeline, a record's identity,
// the version log).
type ImmutableError struct{ Message string }

func (e *ImmutableError) Error() string { return e.Message }
