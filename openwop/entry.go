package openwop

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/engram-dev/engram/memory"
)

// Entry is a MemoryEntry (memory-entry.schema.json): what list, get and
// put answer.
type Entry struct {
	ID        string     `json:"id"`
	Content   string     `json:"content"`
	Tags      []string   `json:"tags"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// MaxEntryBytes caps an entry's content, advertised as
// capabilities.memory.maxEntrySizeBytes: well under the write path's
// default payload cap (64 KiB), which the content counts against once
// encoded.
const MaxEntryBytes = 32 << 10

// MaxTagBytes caps a tag, as the write path does (revise.MaxTagBytes) and
// the schema's maxLength of 256 characters allows.
const MaxTagBytes = 256

// contentPredicate is the predicate of an entry's fact: its object is the
// content.
const contentPredicate = "content"

// putRequest is the body of a put: the entry without what the host
// assigns.
type putRequest struct {
	Content   string
	Tags      []string
	ExpiresAt *time.Time
}

// decodePut reads a put's body: content (required), tags and expiresAt;
// id and createdAt are the host's to assign (RFC 0004 §A), and nothing
// else is a field of an entry. A field's value is never quoted back, nor
// an unknown field's name unless quote answers it.
func decodePut(body []byte, now time.Time, quote func(string) string) (putRequest, *Error) {
	var req putRequest
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return req, &Error{Code: CodeValidation, Message: "the body must be a JSON object: {\"content\": …, \"tags\": […], \"expiresAt\": …}"}
	}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		switch name {
		case "content", "tags", "expiresAt":
		case "id", "createdAt":
			return req, invalid("/"+name, "is assigned by the host: omit it")
		default:
			if n := quote(name); n != "" {
				return req, invalid("/"+n, "is not a field of a memory entry")
			}
			return req, &Error{Code: CodeValidation, Message: "the body has a field that is not one of a memory entry's: content, tags, expiresAt"}
		}
	}
	raw, ok := fields["content"]
	if !ok || isNull(raw) {
		return req, invalid("/content", "is required")
	}
	if json.Unmarshal(raw, &req.Content) != nil {
		return req, invalid("/content", "must be a string")
	}
	// capabilities.schema.json, memory.maxEntrySizeBytes: "Hosts SHOULD
	// reject put exceeding this with validation_error".
	if len(req.Content) > MaxEntryBytes {
		return req, &Error{Code: CodeValidation, Message: "/content is over the limit of " + itoa(MaxEntryBytes) + " bytes (maxEntrySizeBytes)",
			Details: map[string]any{"field": "/content", "maxEntrySizeBytes": MaxEntryBytes}}
	}
	if raw, ok := fields["tags"]; ok && !isNull(raw) {
		var tags []string
		if json.Unmarshal(raw, &tags) != nil {
			return req, invalid("/tags", "must be an array of strings")
		}
		for i, tag := range tags {
			if len(tag) > MaxTagBytes {
				return req, invalid("/tags/"+itoa(i), "is over the limit of "+itoa(MaxTagBytes)+" bytes")
			}
			// Empty tags are tolerated and dropped (§G), and so are repeats.
			if tag != "" && !slices.Contains(req.Tags, tag) {
				req.Tags = append(req.Tags, tag)
			}
		}
	}
	if raw, ok := fields["expiresAt"]; ok && !isNull(raw) {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return req, invalid("/expiresAt", "must be an RFC 3339 date-time string")
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return req, invalid("/expiresAt", "must be an RFC 3339 date-time, such as 2026-12-31T00:00:00Z")
		}
		// A pending write with expiresAt in the past is refused (§E).
		if !t.After(now) {
			return req, invalid("/expiresAt", "is not in the future: the entry would never be readable")
		}
		t = t.UTC()
		req.ExpiresAt = &t
	}
	if req.Tags == nil {
		req.Tags = []string{}
	}
	return req, nil
}

// record is the /v1 record a put creates: a fact of the ref's scope and
// agent whose object is the content, under a subject of its own so that
// entries never contradict one another.
func (req putRequest) record(ref MemoryRef) (map[string]any, error) {
	subject, err := entrySubject()
	if err != nil {
		return nil, err
	}
	rec := map[string]any{
		"type":     memory.Semantic,
		"scope":    ref.scope(),
		"agent_id": ref.Agent,
		"tags":     req.Tags,
		"payload": map[string]any{
			"kind": "semantic", "subject": subject, "predicate": contentPredicate, "object": req.Content,
			"validity": map[string]any{"mode": "global"},
		},
	}
	if req.ExpiresAt != nil {
		rec["lifecycle"] = map[string]any{"expires_at": req.ExpiresAt.Format(time.RFC3339Nano)}
	}
	return rec, nil
}

// entrySubject is a new subject: 32 random letters a–p (128 bits), with
// no digit for the redactor's number detectors to take for a phone or a
// card number.
func entrySubject() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	out := make([]byte, 0, 14+32)
	out = append(out, "openwop-entry-"...)
	for _, c := range b {
		out = append(out, 'a'+c>>4, 'a'+c&0x0f)
	}
	return string(out), nil
}

// visible reports whether rec is one of ref's entries that a caller may
// read at now: live, of the ref's scope, created by the snapshot (when
// set) and not expired (RFC 0004 §A, §E).
func visible(rec memory.Record, ref MemoryRef, snapshot *time.Time, now time.Time) bool {
	if rec.Type != memory.Semantic || rec.Scope != ref.scope() || !rec.Live() {
		return false
	}
	if snapshot != nil && rec.CreatedAt.After(*snapshot) {
		return false
	}
	exp := rec.Lifecycle.ExpiresAt
	return exp == nil || now.Before(*exp)
}

// entryOf is the entry rec stands for.
func entryOf(rec memory.Record) Entry {
	e := Entry{ID: rec.ID.String(), Tags: rec.Tags, CreatedAt: rec.CreatedAt.UTC()}
	var p struct {
		Object json.RawMessage `json:"object"`
	}
	_ = json.Unmarshal(rec.Payload, &p)
	// An entry's object is its content; a fact written into the scope by
	// other means shows its object as JSON text.
	if json.Unmarshal(p.Object, &e.Content) != nil {
		e.Content = string(bytes.TrimSpace(p.Object))
	}
	if e.Tags == nil {
		e.Tags = []string{}
	}
	if exp := rec.Lifecycle.ExpiresAt; exp != nil {
		t := exp.UTC()
		e.ExpiresAt = &t
	}
	return e
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }
