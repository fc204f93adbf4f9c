package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/policy"
	"github.com/engram-dev/engram/revise"
)

// redaction is one request's pass through the policy's redactor (SR-1):
// what the records API, feedback and retrieval are given is redacted before
// it is decoded, as the ingester redacts events, so nothing reaches a table
// unredacted. It gathers what it found, for the policy's on_secret and the
// sensitivity of the records written.
type redaction struct {
	pol   *policy.Policy
	found []policy.Finding
}

func (s *Server) redaction() *redaction { return &redaction{pol: s.policy()} }

// decode reads the JSON body into v as decodeJSON does, after redacting
// every string, object key and value under a key that names a secret.
func (rd *redaction) decode(r *http.Request, v any) error {
	var raw json.RawMessage
	if err := decodeJSON(r, &raw); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return decodeProblem(err, "")
	}
	doc, found := rd.pol.Redactor().Value(doc)
	rd.found = append(rd.found, found...)
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encode redacted body: %w", err)
	}
	return decodeStrict(b, v, "")
}

// string redacts one value from outside the body (a header, a query
// parameter).
func (rd *redaction) string(s string) string {
	s, found := rd.pol.Redactor().String(s)
	rd.found = append(rd.found, found...)
	return s
}

// change is the request's audit identity (see change), redacted.
func (rd *redaction) change(r *http.Request, rationale string) revise.Change {
	ch := change(r, rationale)
	ch.Actor, ch.Rationale = rd.string(ch.Actor), rd.string(ch.Rationale)
	return ch
}

// check refuses the write with a secret-leakage problem when something was
// redacted and the policy rejects such writes. The problem names the
// labels, never a value.
func (rd *redaction) check() error {
	if len(rd.found) == 0 || !rd.pol.RejectSecrets() {
		return nil
	}
	var labels []string
	for _, f := range rd.found {
		labels = append(labels, f.Label)
	}
	slices.Sort(labels)
	return problem(http.StatusUnprocessableEntity, "secret-leakage", "Secrets refused",
		fmt.Sprintf("the request holds secrets or personal data (%s) and the policy rejects such writes", strings.Join(slices.Compact(labels), ", ")))
}

// raise raises a record's sensitivity to what redaction found in the
// request, as the policy plane does for an event's records.
func (rd *redaction) raise(rec *memory.Record) {
	// Personal data makes the record PII-bearing (write-path RFC
	// §12.10.4): the write path tags it.
	rec.PersonalData = rec.PersonalData || policy.AnyPersonal(rd.found)
	found := policy.MaxSensitivity(rd.found)
	if found == "" {
		return
	}
	if rec.Sensitivity == "" {
		rec.Sensitivity = memory.DefaultSensitivity
	}
	rec.Sensitivity = rec.Sensitivity.Max(found)
}

// redactProblem redacts what a problem quotes from the request — a field's
// name in a pointer, a parameter's value — so that no answer echoes a
// secret (SR-1). Problems shared by every request are copied first.
func (s *Server) redactProblem(p *Problem) {
	red := s.policy().Redactor()
	p.Detail, _ = red.String(p.Detail)
	p.Errors = slices.Clone(p.Errors)
	for i := range p.Errors {
		e := &p.Errors[i]
		e.Pointer, _ = red.String(e.Pointer)
		e.Parameter, _ = red.String(e.Parameter)
		e.Header, _ = red.String(e.Header)
		e.Message, _ = red.String(e.Message)
	}
}

// redactPath redacts a request's path whole (a private key's base64 holds
// slashes), then segment by segment and each part of a custom method's
// {id}:{op}: read whole, user@host:op is taken for scp's syntax, not an
// address.
func redactPath(red *policy.Redactor, path string) string {
	path, _ = red.String(path)
	segs := strings.Split(path, "/")
	for i, seg := range segs {
		parts := strings.Split(seg, ":")
		for j := range parts {
			parts[j], _ = red.String(parts[j])
		}
		segs[i] = strings.Join(parts, ":")
	}
	return strings.Join(segs, "/")
}
