package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/store"
)

// Problem is an RFC 9457 problem details response; handlers return one as
// their error.
type Problem = api.Problem

// FieldError is one violation of a [Problem].
type FieldError = api.FieldError

const problemPrefix = "urn:engram:problem:"

func problem(status int, kind, title, detail string) *Problem {
	return &Problem{Type: problemPrefix + kind, Title: title, Status: status, Detail: detail}
}

func badParam(name, format string, args ...any) *Problem {
	p := problem(http.StatusBadRequest, "invalid-parameter", "Invalid query parameter", "")
	p.Errors = []FieldError{{Parameter: name, Message: fmt.Sprintf(format, args...)}}
	p.Detail = name + ": " + p.Errors[0].Message
	return p
}

var (
	errUnauthorized = problem(http.StatusUnauthorized, "unauthorized", "Unauthorized",
		"send an API key as Authorization: Bearer <key>")
	errRouteNotFound = problem(http.StatusNotFound, "not-found", "Not found", "no such endpoint")
	errMethod        = problem(http.StatusMethodNotAllowed, "method-not-allowed", "Method not allowed", "see the Allow header")
)

// writeProblem answers with err as a problem, mapping the store's and the
// schemas' typed errors to their status codes. Internal errors are logged
// and answered without detail: nothing from a failed query reaches a
// client. What a problem quotes from the request is redacted (SR-1).
func (s *Server) writeProblem(w http.ResponseWriter, r *http.Request, err error) {
	p := s.toProblem(r, err)
	p.Instance = redactPath(s.policy().Redactor(), r.URL.Path)
	w.Header().Set("Content-Type", "application/problem+json")
	if p.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="engram"`)
	}
	if p.RetryAfter > 0 {
		w.Header().Set("Retry-After", retryAfter(p.RetryAfter))
	}
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

func (s *Server) toProblem(r *http.Request, err error) *Problem {
	p := s.problemOf(r, err)
	s.redactProblem(p)
	return p
}

func (s *Server) problemOf(r *http.Request, err error) *Problem {
	var (
		p        *Problem
		ve       *schemas.ValidationError
		ce       *revise.ConflictError
		re       *revise.RejectedError
		tl       *revise.TooLargeError
		timeout  *revise.ApprovalTimeoutError
		rejected *revise.ReviewRejectedError
		maxBytes *http.MaxBytesError
	)
	switch {
	case errors.As(err, &p):
		cp := *p
		return &cp
	case errors.As(err, &ve):
		p := problem(http.StatusUnprocessableEntity, "validation-failed", "Validation failed",
			fmt.Sprintf("%d invalid field(s); see errors", len(ve.Violations)))
		for _, v := range ve.Violations {
			p.Errors = append(p.Errors, FieldError{Pointer: v.Pointer, Message: v.Message})
		}
		return p
	case errors.As(err, &re):
		// A gate of the write path refused the write (write-path RFC
		// §12.1.5): the gate and its structured reason, and the records
		// involved; nothing was written.
		p := problem(http.StatusUnprocessableEntity, "write-rejected", "Write rejected", re.Detail)
		p.Gate, p.Reason, p.RecordIDs = re.Gate, re.Reason, re.RecordIDs
		return p
	case errors.As(err, &ce):
		p := problem(http.StatusConflict, strings.ReplaceAll(ce.Code, "_", "-"), "Conflict", ce.Detail)
		p.RecordIDs = ce.RecordIDs
		return p
	case errors.As(err, &timeout):
		// 409, not 408: the request was whole; the write it asked for is
		// refused for want of a reviewer's decision (fail-closed, write-path
		// RFC §12.6.5), and repeating it as it is would not help.
		p := problem(http.StatusConflict, "approval-timeout", "Approval timed out", timeout.Error())
		p.RecordIDs = []uuid.UUID{timeout.RecordID}
		return p
	case errors.As(err, &rejected):
		p := problem(http.StatusConflict, "review-rejected", "Rejected by a reviewer", rejected.Error())
		p.RecordIDs = []uuid.UUID{rejected.Review.RecordID}
		return p
	case errors.As(err, &tl):
		p := problem(http.StatusRequestEntityTooLarge, "too-large", "Payload too large", tl.Error())
		p.Errors = []FieldError{{Pointer: tl.Pointer, Message: tl.Error()}}
		return p
	case errors.As(err, &maxBytes):
		return problem(http.StatusRequestEntityTooLarge, "too-large", "Request body too large",
			fmt.Sprintf("the body is over the limit of %d bytes", maxBytes.Limit))
	case errors.Is(err, store.ErrNotFound):
		return problem(http.StatusNotFound, "not-found", "Not found", "nothing with that id in this tenant")
	case errors.Is(err, store.ErrBadCursor):
		return badParam("cursor", "is not a cursor this server issued")
	}
	// A path and an error may quote what the client sent.
	red := s.policy().Redactor()
	msg, _ := red.String(err.Error())
	s.logger.ErrorContext(r.Context(), "request failed", slog.String("method", r.Method),
		slog.String("path", redactPath(red, r.URL.Path)), slog.String("error", msg))
	return problem(http.StatusInternalServerError, "internal", "Internal error", "the request failed; the server log has details")
}

// decodeJSON reads one JSON object from the body into v, refusing unknown
// fields and trailing data, and turns decoding failures into precise
// problems.
func decodeJSON(r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") && !strings.HasSuffix(strings.Split(ct, ";")[0], "+json") {
		return problem(http.StatusUnsupportedMediaType, "unsupported-media-type", "Unsupported media type",
			fmt.Sprintf("send application/json, not %s", ct))
	}
	return decodeStrict(r.Body, v, "")
}

// decodeStrict decodes one JSON value from rd into v; pointer prefixes the
// JSON pointers of field errors, for values nested in a larger body.
func decodeStrict(rd io.Reader, v any, pointer string) error {
	dec := json.NewDecoder(rd)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeProblem(err, pointer)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return problem(http.StatusBadRequest, "malformed-json", "Malformed JSON", "the body holds more than one JSON value")
	}
	return nil
}

// decodeRecord decodes a new record, nested at pointer in the body. Fields
// it leaves out take their defaults: zero is a value, absence is not.
func decodeRecord(raw json.RawMessage, pointer string) (memory.Record, error) {
	rec := memory.Record{Confidence: memory.DefaultConfidence, Salience: memory.DefaultSalience}
	if len(raw) == 0 || string(raw) == "null" {
		return rec, fieldProblem(pointer, "is required")
	}
	if err := decodeStrict(bytes.NewReader(raw), &rec, pointer); err != nil {
		return rec, err
	}
	if rec.Flags != nil {
		// Flags are raised by quarantine, never written with a record.
		return rec, fieldProblem(pointer+"/flags", "is set by the server: omit it")
	}
	return rec, nil
}

func decodeProblem(err error, pointer string) error {
	var (
		syntax   *json.SyntaxError
		typ      *json.UnmarshalTypeError
		maxBytes *http.MaxBytesError
	)
	switch {
	case errors.As(err, &maxBytes):
		return err
	case errors.Is(err, io.EOF):
		return problem(http.StatusBadRequest, "malformed-json", "Malformed JSON", "the body is empty")
	case errors.As(err, &syntax):
		return problem(http.StatusBadRequest, "malformed-json", "Malformed JSON",
			fmt.Sprintf("%s (at byte %d)", syntax.Error(), syntax.Offset))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return problem(http.StatusBadRequest, "malformed-json", "Malformed JSON", "the body ends in the middle of a value")
	case errors.As(err, &typ):
		p := problem(http.StatusUnprocessableEntity, "validation-failed", "Validation failed", "a field has the wrong type")
		p.Errors = []FieldError{{Pointer: pointer + "/" + strings.ReplaceAll(typ.Field, ".", "/"), Message: "must be " + jsonType(typ.Type.Kind().String())}}
		return p
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// The name goes in the pointer alone, which toProblem redacts: a
		// field's name may be a secret.
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		if u, err := strconv.Unquote(name); err == nil {
			name = u
		}
		p := problem(http.StatusUnprocessableEntity, "validation-failed", "Validation failed", "a field is not known; see errors")
		p.Errors = []FieldError{{Pointer: pointer + "/" + pointerEscaper.Replace(name), Message: "is not a known field"}}
		return p
	}
	// A value's own decoder refused it (a malformed id or time).
	p := problem(http.StatusUnprocessableEntity, "validation-failed", "Validation failed", err.Error())
	p.Errors = []FieldError{{Pointer: pointer, Message: err.Error()}}
	return p
}

// pointerEscaper escapes a field's name as a JSON pointer segment (RFC 6901).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func jsonType(kind string) string {
	switch kind {
	case "float64", "float32", "int", "int64", "int32":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	}
	return "of another type"
}

// writeJSON writes v; every record in it shows its current salience (see
// currentSalience), as of the request's time.
func writeJSON(w http.ResponseWriter, status int, v any) {
	if rec, ok := w.(*statusRecorder); ok {
		v = currentSalience(v, rec.at)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
