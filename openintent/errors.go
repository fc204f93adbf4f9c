package openintent

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Error is an error answer, in the shape both the OpenIntent SDK and the
// RFC's readers understand: message (the SDK's exceptions read it),
// errors on a 400, current_version and the current entry on a 409
// (RFC-0015 §3.2), current_count and max_capacity on a 429 (the
// MemoryCapacityError of the RFC's SDK semantics). Code is the RFC's error
// name (VERSION_MISMATCH, CAPACITY_EXCEEDED, ACCESS_DENIED,
// ENTRY_NOT_FOUND, …).
type Error struct {
	Status         int          `json:"status"`
	Code           string       `json:"error"`
	Message        string       `json:"message"`
	Errors         []fieldError `json:"errors,omitempty"`
	CurrentVersion *int         `json:"current_version,omitempty"`
	Current        *Entry       `json:"current,omitempty"`
	CurrentCount   *int         `json:"current_count,omitempty"`
	MaxCapacity    *int         `json:"max_capacity,omitempty"`
	retryAfter     time.Duration
}

func (e *Error) Error() string { return e.Message }

func notFound() *Error {
	return &Error{Status: http.StatusNotFound, Code: "ENTRY_NOT_FOUND", Message: "memory entry not found"}
}

func badRequest(message string, errs ...fieldError) *Error {
	if errs == nil {
		errs = []fieldError{}
	}
	return &Error{Status: http.StatusBadRequest, Code: "VALIDATION_ERROR", Message: message, Errors: errs}
}

// versionConflict is the 409 of a stale If-Match (RFC-0015 §3.2), with the
// entry as it is now.
func versionConflict(message string, current Entry) *Error {
	v := current.Version
	return &Error{Status: http.StatusConflict, Code: "VERSION_MISMATCH", Message: message, CurrentVersion: &v, Current: &current}
}

// capacityExceeded is the 429 of a full tier (RFC-0015 §9.4).
func capacityExceeded(message string, count, limit int) *Error {
	return &Error{Status: http.StatusTooManyRequests, Code: "CAPACITY_EXCEEDED", Message: message, CurrentCount: &count, MaxCapacity: &limit}
}

// asError turns an error of a /v1 call, or of this package, into an
// [*Error].
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	ce, ok := apiError(err)
	if !ok {
		return &Error{Status: http.StatusBadGateway, Code: "INTERNAL", Message: "engram could not be reached"}
	}
	p := ce.Problem
	msg := p.Detail
	if msg == "" {
		msg = p.Title
	}
	switch p.Status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusRequestEntityTooLarge:
		out := badRequest(msg)
		for _, fe := range p.Errors {
			field := strings.TrimPrefix(fe.Pointer, "/")
			if field == "" {
				field = fe.Parameter + fe.Header
			}
			out.Errors = append(out.Errors, fieldError{Field: fieldOf(field), Message: fe.Message})
		}
		return out
	case http.StatusUnauthorized:
		return &Error{Status: p.Status, Code: "UNAUTHORIZED", Message: msg}
	case http.StatusForbidden:
		return &Error{Status: p.Status, Code: "ACCESS_DENIED", Message: msg}
	case http.StatusNotFound:
		return notFound()
	case http.StatusConflict:
		return &Error{Status: p.Status, Code: "CONFLICT", Message: msg}
	case http.StatusTooManyRequests:
		return &Error{Status: p.Status, Code: "RATE_LIMITED", Message: msg, retryAfter: p.RetryAfter}
	}
	return &Error{Status: p.Status, Code: "INTERNAL", Message: msg, retryAfter: p.RetryAfter}
}

// fieldOf names the entry's field a pointer into the record this package
// wrote points at.
func fieldOf(pointer string) string {
	switch {
	case strings.HasPrefix(pointer, "payload/openintent/"):
		return strings.TrimPrefix(pointer, "payload/openintent/")
	case strings.HasPrefix(pointer, "payload"):
		return "value"
	case pointer == "lifecycle/expires_at":
		return "expires_at"
	}
	return pointer
}

// writeError writes e. The SDK reads a 409 whose body mentions a lease
// anywhere as a lease conflict, not a version conflict: such a word (from
// a value, say) never reaches a 409 body — the current entry is left out
// of it then, and a message naming one is replaced.
func writeError(w http.ResponseWriter, e *Error) {
	if e.Status == http.StatusConflict {
		if strings.Contains(strings.ToLower(e.Message), "lease") {
			e.Message = "the entry conflicts with its current state; read it again"
		}
		if e.Current != nil {
			b, _ := json.Marshal(e.Current)
			if strings.Contains(strings.ToLower(string(b)), "lease") {
				e.Current = nil
			}
		}
	}
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(e.retryAfter.Round(time.Second)/time.Second)))
	}
	writeJSON(w, e.Status, e)
}
