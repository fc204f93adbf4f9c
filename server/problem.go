package server

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/access"
	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/internal/pg"
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

// plural is n things in words: "1 invalid field", "2 invalid fields".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

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
	// errUnknownKey answers a key that is sent but matches no live key:
	// apart from a missing one, so that a stale key says so. It never
	// quotes the key.
	errUnknownKey = problem(http.StatusUnauthorized, "unauthorized", "Unauthorized",
		"the API key sent is unknown or revoked; the keys engramd generates when none are configured "+
			"change on each start (use the ones it printed last, or configure lasting ones: ENGRAM_API_KEYS)")
	errRouteNotFound = problem(http.StatusNotFound, "not-found", "Not found", "no such endpoint")
	errMethod        = problem(http.StatusMethodNotAllowed, "method-not-allowed", "Method not allowed", "see the Allow header")
	// errInvalidUTF8 is the problem an event that is not UTF-8 gets too.
	errInvalidUTF8 = problem(http.StatusUnprocessableEntity, "invalid-utf8", "Invalid UTF-8", "the body is not valid UTF-8")
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
	if p := leaseProblem(err); p != nil {
		return p
	}
	var (
		p        *Problem
		ve       *schemas.ValidationError
		ce       *revise.ConflictError
		re       *revise.RejectedError
		tl       *revise.TooLargeError
		timeout  *revise.ApprovalTimeoutError
		rejected *revise.ReviewRejectedError
		maxBytes *http.MaxBytesError
		denied   *access.DeniedError
		over     *access.OverBudgetError
	)
	switch {
	case errors.As(err, &p):
		cp := *p
		return &cp
	case errors.As(err, &denied):
		// Access control refused (write-path RFC §12.8.2, §12.8.5): the
		// rule that decided, never the record's content.
		s.metrics.denials.WithLabelValues(denied.Reason).Inc()
		p := problem(http.StatusForbidden, "access-denied", "Access denied", denied.Detail)
		p.Rule, p.Reason = denied.Rule, denied.Reason
		if denied.Pointer != "" {
			p.Errors = []FieldError{{Pointer: denied.Pointer, Message: denied.Detail}}
		}
		return p
	case errors.As(err, &over):
		// The agent's session spent its write budget (§12.11.2): nothing
		// of this request was written.
		s.metrics.denials.WithLabelValues(access.ReasonBudget).Inc()
		p := problem(http.StatusTooManyRequests, "budget-exceeded", "Write budget exceeded", over.Error())
		p.Budget, p.Reason, p.RetryAfter = over.Budget, access.ReasonBudget, over.RetryAfter
		return p
	case errors.As(err, &ve):
		p := problem(http.StatusUnprocessableEntity, "validation-failed", "Validation failed",
			plural(len(ve.Violations), "invalid field")+"; see errors")
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
	case sealProblem(err) != nil:
		return sealProblem(err)
	case pg.Unavailable(err):
		// No primary takes statements: the database is unreachable, or a
		// failover is under way (the daemon's pool reconnects to the new
		// primary by database_url's hosts and target_session_attrs).
		// Nothing of a write that fails here was committed, and staging
		// and revisions are safe to send again (write-path RFC §12.1.6:
		// idempotency), so the client is told when to.
		s.logger.WarnContext(r.Context(), "database unavailable", slog.String("method", r.Method),
			slog.String("path", redactPath(s.policy().Redactor(), r.URL.Path)))
		p := problem(http.StatusServiceUnavailable, "database-unavailable", "Database unavailable",
			"no primary database answers right now (a failover or a restart); send the request again after Retry-After")
		p.RetryAfter = unavailableRetry
		return p
	case transient(err):
		// PostgreSQL aborted the request's transaction to break a
		// deadlock or a serialization conflict with another: nothing was
		// written, and the same request a moment later will likely pass.
		s.logger.WarnContext(r.Context(), "request lost a conflict with another", slog.String("method", r.Method),
			slog.String("path", redactPath(s.policy().Redactor(), r.URL.Path)))
		p := problem(http.StatusServiceUnavailable, "conflict-retry", "Try again",
			"the request conflicted with another one at the same moment and was undone; send it again")
		p.RetryAfter = time.Second
		return p
	case timedOut(err):
		// A statement outlasted the database's statement or lock timeout
		// (database.*): its transaction was undone.
		s.logger.WarnContext(r.Context(), "request timed out in the database", slog.String("method", r.Method),
			slog.String("path", redactPath(s.policy().Redactor(), r.URL.Path)))
		p := problem(http.StatusServiceUnavailable, "timeout", "Try again",
			"the database did not finish the request within its timeout (a lock held by another, or a statement too long); nothing was written; send it again")
		p.RetryAfter = time.Second
		return p
	}
	// A path and an error may quote what the client sent.
	red := s.policy().Redactor()
	msg, _ := red.String(err.Error())
	s.logger.ErrorContext(r.Context(), "request failed", slog.String("method", r.Method),
		slog.String("path", redactPath(red, r.URL.Path)), slog.String("error", msg))
	return problem(http.StatusInternalServerError, "internal", "Internal error", "the request failed; the server log has details")
}

// timedOut reports whether err is a statement ended by a timeout.
func timedOut(err error) bool {
	code, _ := pg.Code(err)
	return code == pg.LockNotAvailable || code == pg.QueryCanceled
}

// unavailableRetry is the Retry-After of a 503 for want of a primary: about
// how long a failover manager takes to promote a replica.
const unavailableRetry = 2 * time.Second

// transient reports whether err is PostgreSQL breaking a deadlock or a
// serialization conflict: the request may pass when sent again.
func transient(err error) bool {
	code, _ := pg.Code(err)
	return code == pg.DeadlockDetected || code == pg.SerializationFailure
}

// decodeJSON reads one JSON value from the body into v, refusing unknown
// fields, trailing data and what PostgreSQL cannot store, and turns
// decoding failures into precise problems.
func decodeJSON(r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") && !strings.HasSuffix(strings.Split(ct, ";")[0], "+json") {
		return problem(http.StatusUnsupportedMediaType, "unsupported-media-type", "Unsupported media type",
			fmt.Sprintf("send application/json, not %s", ct))
	}
	doc, err := io.ReadAll(r.Body)
	if err != nil {
		return decodeProblem(err, "")
	}
	return decodeStrict(doc, v, "")
}

// decodeStrict decodes exactly one JSON value from doc into v (see
// [schemas.Decode]), after refusing what PostgreSQL cannot store: a body
// that is not UTF-8; strings and keys holding NUL or an unpaired surrogate,
// numbers beyond a double or numeric's scale ([schemas.CheckStorable]). pointer
// prefixes the JSON pointers of field errors, for values nested in a larger
// body.
func decodeStrict(doc []byte, v any, pointer string) error {
	if !utf8.Valid(doc) {
		return errInvalidUTF8
	}
	if err := schemas.CheckStorable(doc); err != nil {
		var ve *schemas.ValidationError
		if errors.As(err, &ve) {
			for i := range ve.Violations {
				ve.Violations[i].Pointer = pointer + ve.Violations[i].Pointer
			}
		}
		return err
	}
	if want := nullTarget(doc, v); want != "" {
		// json.Unmarshal takes null for "no value" and leaves v as it
		// was: a body of null would be a request with every field absent.
		return nullProblem(pointer, want)
	}
	if err := schemas.Decode(doc, v); err != nil {
		return decodeProblem(err, pointer)
	}
	return nil
}

// nullProblem refuses a null at pointer where want (an object, an array)
// belongs. The body's root is "/", the pointer a body of the wrong type
// gets too.
func nullProblem(pointer, want string) *Problem {
	where := "the body"
	if pointer == "" {
		pointer = "/"
	} else {
		where = strings.TrimPrefix(pointer, "/")
	}
	p := problem(http.StatusUnprocessableEntity, "validation-failed", "Validation failed", where+" must be "+want+", not null")
	p.Errors = []FieldError{{Pointer: pointer, Message: "must be " + want + ", not null"}}
	return p
}

// nullTarget is what v, a pointer, takes when doc is the JSON null and v
// a request (an object, an array); empty otherwise. A raw value
// (json.RawMessage, any) takes null as it is: its reader decides.
func nullTarget(doc []byte, v any) string {
	if string(bytes.TrimSpace(doc)) != "null" {
		return ""
	}
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return ""
	}
	switch t = t.Elem(); {
	case t == reflect.TypeFor[json.RawMessage]():
		return ""
	case t.Kind() == reflect.Struct || t.Kind() == reflect.Map:
		return "an object"
	case t.Kind() == reflect.Slice:
		return "an array"
	}
	return ""
}

// decodeRecord decodes a new record, nested at pointer in the body. Fields
// it leaves out take their defaults: zero is a value, absence is not.
func decodeRecord(raw json.RawMessage, pointer string) (memory.Record, error) {
	rec := memory.Record{Confidence: memory.DefaultConfidence, Salience: memory.DefaultSalience}
	if pointer == "" && string(bytes.TrimSpace(raw)) == "null" {
		return rec, nullProblem(pointer, "an object")
	}
	if len(raw) == 0 || string(raw) == "null" {
		return rec, fieldProblem(pointer, "is required")
	}
	if err := decodeStrict(raw, &rec, pointer); err != nil {
		return rec, err
	}
	if rec.Flags != nil {
		// Flags are raised by quarantine, never written with a record.
		return rec, fieldProblem(pointer+"/flags", "is set by the server: omit it")
	}
	return rec, nil
}

// checkUnstorable refuses a request whose path or query parameters, or the
// headers stored with what it writes, hold text PostgreSQL's text cannot
// store: the NUL character or bytes that are not UTF-8. None needs either.
func checkUnstorable(r *http.Request) error {
	for _, name := range storedHeaders {
		if msg := unstorable(r.Header.Get(name)); msg != "" {
			p := problem(http.StatusBadRequest, "invalid-header", "Invalid header", name+": "+msg)
			p.Errors = []FieldError{{Header: name, Message: msg}}
			return p
		}
	}
	for _, name := range wildcards(r.Pattern) {
		if msg := unstorable(r.PathValue(name)); msg != "" {
			p := badParam(cmp.Or(pathParams[name], name), "%s", msg)
			p.Title = "Invalid path parameter"
			return p
		}
	}
	q := r.URL.Query()
	for _, name := range slices.Sorted(maps.Keys(q)) {
		msg := unstorable(name)
		for _, v := range q[name] {
			msg = cmp.Or(msg, unstorable(v))
		}
		if msg != "" {
			return badParam(strings.ToValidUTF8(name, "\uFFFD"), "%s", msg)
		}
	}
	return nil
}

// storedHeaders are the headers whose values are stored: the actor of an
// audit entry, the media type of an artifact.
var storedHeaders = []string{"X-Engram-Actor", "Content-Type"}

// unstorable says why PostgreSQL's text cannot store s, or returns "".
func unstorable(s string) string {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return "must not contain the NUL character (U+0000)"
	case !utf8.ValidString(s):
		return "must be UTF-8"
	}
	return ""
}

// pathParams names the routes' wildcards as the OpenAPI document does:
// {idop} is the {id} of /v1/records/{id}:{op}.
var pathParams = map[string]string{"idop": "id", "nameop": "name"}

// wildcards lists the names of a route pattern's wildcards.
func wildcards(pattern string) []string {
	var names []string
	for {
		_, rest, ok := strings.Cut(pattern, "{")
		if !ok {
			return names
		}
		name, after, _ := strings.Cut(rest, "}")
		names = append(names, strings.TrimSuffix(name, "..."))
		pattern = after
	}
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
	case errors.Is(err, schemas.ErrTrailingData):
		return problem(http.StatusBadRequest, "malformed-json", "Malformed JSON", "the body holds more than its one JSON value")
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
	if rec := recorderOf(w); rec != nil {
		v = currentSalience(v, rec.at)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// recorderOf finds the request's [statusRecorder] under w and the writers
// wrapping it (an idempotent write's capture), or nil.
func recorderOf(w http.ResponseWriter) *statusRecorder {
	for {
		switch x := w.(type) {
		case *statusRecorder:
			return x
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return nil
		}
	}
}
