package client

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/engram-dev/engram/api"
)

// Problem types a caller is likely to switch on; every type engramd
// answers is a stable URN of this form.
const (
	ProblemForbidden  = "urn:engram:problem:forbidden"
	ProblemValidation = "urn:engram:problem:validation-failed"
	ProblemNotFound   = "urn:engram:problem:not-found"
)

// Error is an error answer of engramd: its RFC 9457 problem, decoded.
// Problem.Status is the HTTP status and Problem.RetryAfter the Retry-After
// header of a 429 or 503. An answer that is not engramd's problem (a
// proxy's page, say) has the status text as its title and the start of the
// body as its detail. The API key appears in no Error.
type Error struct {
	Problem api.Problem
	// hasRetryAfter tells Retry-After: 0 (send again at once) from no
	// Retry-After.
	hasRetryAfter bool
}

// Error is the problem's title, its detail if any, and the status.
func (e *Error) Error() string {
	return e.Problem.Error() + " (HTTP " + strconv.Itoa(e.Problem.Status) + ")"
}

// Unwrap returns the problem, so that errors.As finds an *[api.Problem]
// too.
func (e *Error) Unwrap() error { return &e.Problem }

// StatusCode is the HTTP status of the answer.
func (e *Error) StatusCode() int { return e.Problem.Status }

// newError decodes the error answer res with body b.
func newError(res *http.Response, b []byte) *Error {
	var p api.Problem
	if json.Unmarshal(b, &p) != nil || p.Title == "" {
		text := strings.TrimSpace(string(b))
		if len(text) > 200 {
			text = text[:200] + "…"
		}
		p = api.Problem{Title: http.StatusText(res.StatusCode), Detail: text}
	}
	p.Status = res.StatusCode
	e := &Error{Problem: p}
	if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && s >= 0 {
		e.Problem.RetryAfter = time.Duration(s) * time.Second
		e.hasRetryAfter = true
	}
	return e
}
