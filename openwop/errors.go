package openwop

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/engram-dev/engram/client"
)

// Error codes of the OpenWOP error envelope this adapter answers.
const (
	CodeValidation      = "validation_error"
	CodeSecretLeakage   = "secret_leakage"
	CodeUnauthenticated = "unauthenticated"
	CodeForbidden       = "forbidden"
	CodeNotFound        = "not_found"
	// CodeMethodNotAllowed answers a method an OpenWOP path does not
	// serve, with an Allow header.
	CodeMethodNotAllowed = "method_not_allowed"
	CodeConflict         = "version_conflict"
	CodeTooLarge         = "payload_too_large"
	// CodeUnsupportedMediaType answers a body sent as anything but JSON.
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeRateLimited          = "rate_limited"
	CodeInternal             = "internal_error"
)

// statuses are each code's HTTP status.
var statuses = map[string]int{
	CodeValidation:           http.StatusBadRequest,
	CodeSecretLeakage:        http.StatusUnprocessableEntity,
	CodeUnauthenticated:      http.StatusUnauthorized,
	CodeForbidden:            http.StatusForbidden,
	CodeNotFound:             http.StatusNotFound,
	CodeMethodNotAllowed:     http.StatusMethodNotAllowed,
	CodeUnsupportedMediaType: http.StatusUnsupportedMediaType,
	CodeConflict:             http.StatusConflict,
	CodeTooLarge:             http.StatusRequestEntityTooLarge,
	CodeRateLimited:          http.StatusTooManyRequests,
	CodeInternal:             http.StatusInternalServerError,
}

// Error is an OpenWOP error envelope: a stable code, a message and, where
// it helps, details (the field at fault, the labels of the secrets found).
// No message quotes a secret.
type Error struct {
	Code    string         `json:"error"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
	// RetryAfter is the Retry-After header of a rate_limited answer, in
	// seconds; 0 sends none.
	RetryAfter int `json:"-"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Status is the HTTP status of the error's code.
func (e *Error) Status() int {
	if s, ok := statuses[e.Code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// invalid is a validation_error about one field of the request.
func invalid(field, message string) *Error {
	return &Error{Code: CodeValidation, Message: field + " " + message, Details: map[string]any{"field": field}}
}

// fromAPI translates an error of the /v1 API into the envelope: the
// problem's status picks the code, its detail (redacted by the API) is the
// message.
func fromAPI(err error) *Error {
	var we *Error
	if errors.As(err, &we) {
		return we
	}
	var ce *client.Error
	if !errors.As(err, &ce) {
		return &Error{Code: CodeInternal, Message: "the memory store did not answer"}
	}
	p := ce.Problem
	msg := p.Detail
	if msg == "" {
		msg = p.Title
	}
	if msg == "" {
		msg = http.StatusText(p.Status)
	}
	out := &Error{Message: msg, Details: map[string]any{"problemType": p.Type}}
	switch {
	case strings.HasSuffix(p.Type, ":secret-leakage"):
		out.Code = CodeSecretLeakage
	case p.Status == http.StatusBadRequest || p.Status == http.StatusUnprocessableEntity:
		out.Code = CodeValidation
	case p.Status == http.StatusUnauthorized:
		out.Code = CodeUnauthenticated
	case p.Status == http.StatusForbidden:
		out.Code = CodeForbidden
	case p.Status == http.StatusNotFound:
		out.Code = CodeNotFound
	case p.Status == http.StatusConflict:
		out.Code = CodeConflict
	case p.Status == http.StatusRequestEntityTooLarge:
		out.Code = CodeTooLarge
	case p.Status == http.StatusTooManyRequests:
		out.Code = CodeRateLimited
		out.RetryAfter = int(p.RetryAfter.Seconds())
	default:
		out.Code = CodeInternal
	}
	return out
}

// statusOf is the HTTP status of an error answer of the /v1 API, 0 for
// any other error.
func statusOf(err error) int {
	var ce *client.Error
	if errors.As(err, &ce) {
		return ce.StatusCode()
	}
	return 0
}

func writeError(w http.ResponseWriter, e *Error) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	writeJSON(w, e.Status(), e)
}
