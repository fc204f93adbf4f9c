package openintent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/engram-dev/engram/memory"
)

// Memory tiers (RFC-0015 §2).
const (
	TierWorking  = "working"
	TierEpisodic = "episodic"
	TierSemantic = "semantic"
)

var (
	tiers         = []string{TierWorking, TierEpisodic, TierSemantic}
	priorities    = []string{"low", "normal", "high"}
	sensitivities = []string{"public", "internal", "confidential", "restricted"}
)

// payloadKey is the member of a working record's payload that holds the
// entry: a record whose payload has it is an OpenIntent entry.
const payloadKey = "openintent"

// TimeFormat is how every timestamp is written: six fraction digits and a
// numeric offset, which Python's datetime.fromisoformat reads (3.10's
// rejects "Z").
const TimeFormat = "2006-01-02T15:04:05.000000-07:00"

// Time is a timestamp written in [TimeFormat], always in UTC.
type Time struct{ time.Time }

// MarshalJSON writes t in [TimeFormat], in UTC: "+00:00".
func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.UTC().Format(TimeFormat) + `"`), nil
}

// UnmarshalJSON reads a timestamp as [parseTime] does.
func (t *Time) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := parseTime(s)
	if err != nil {
		return err
	}
	t.Time = v
	return nil
}

// parseTime reads an ISO 8601 timestamp: RFC 3339, or one without an
// offset — what Python's isoformat writes for a naive datetime — taken as
// UTC.
func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.ParseInLocation("2006-01-02T15:04:05.999999999", s, time.UTC)
}

// Entry is a memory entry as the wire carries it (RFC-0015 §1.1): every
// field, always, so that a client's parser finds each one.
type Entry struct {
	ID          string          `json:"id"`
	AgentID     string          `json:"agent_id"`
	Namespace   string          `json:"namespace"`
	Key         string          `json:"key"`
	Value       json.RawMessage `json:"value"`
	MemoryType  string          `json:"memory_type"`
	Version     int             `json:"version"`
	Scope       json.RawMessage `json:"scope"`
	Tags        []string        `json:"tags"`
	TTL         json.RawMessage `json:"ttl"`
	Pinned      bool            `json:"pinned"`
	Priority    string          `json:"priority"`
	Sensitivity *string         `json:"sensitivity"`
	CuratedBy   *string         `json:"curated_by"`
	CreatedAt   Time            `json:"created_at"`
	UpdatedAt   Time            `json:"updated_at"`
	ExpiresAt   *Time           `json:"expires_at"`
}

// stored is the entry as the record's payload keeps it, under
// [payloadKey]: what the record's own columns do not hold. Every field the
// client sent comes back as it was sent.
type stored struct {
	AgentID    string          `json:"agent_id"`
	Namespace  string          `json:"namespace"`
	Key        string          `json:"key"`
	Value      json.RawMessage `json:"value"`
	MemoryType string          `json:"memory_type"`
	Scope      json.RawMessage `json:"scope,omitempty"`
	TTL        json.RawMessage `json:"ttl,omitempty"`
	Pinned     bool            `json:"pinned"`
	Priority   string          `json:"priority"`
	CuratedBy  *string         `json:"curated_by,omitempty"`
	// TypedID is the entry's typed record: the episode of an episodic
	// entry, the fact of a semantic one (typed.go).
	TypedID string `json:"typed_id,omitempty"`
	// Extra holds the members of the create request this package does not
	// know, kept as they came.
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
}

// taskID is the scope's task_id, or "".
func (s stored) taskID() string { return scopeString(s.Scope, "task_id") }

func scopeString(scope json.RawMessage, name string) string {
	var m map[string]any
	_ = json.Unmarshal(scope, &m)
	v, _ := m[name].(string)
	return v
}

// entryOf reads the entry a record holds; ok is false for a record that is
// no entry.
func entryOf(rec memory.Record) (e Entry, s stored, ok bool) {
	if rec.Type != memory.Working {
		return e, s, false
	}
	var p map[string]json.RawMessage
	if json.Unmarshal(rec.Payload, &p) != nil || p[payloadKey] == nil {
		return e, s, false
	}
	if json.Unmarshal(p[payloadKey], &s) != nil || s.Namespace == "" || s.Key == "" {
		return e, s, false
	}
	e = Entry{
		ID: rec.ID.String(), AgentID: s.AgentID, Namespace: s.Namespace, Key: s.Key, Value: s.Value,
		MemoryType: s.MemoryType, Version: rec.Version, Scope: s.Scope, Tags: rec.Tags, TTL: s.TTL,
		Pinned: s.Pinned, Priority: s.Priority, CuratedBy: s.CuratedBy,
		CreatedAt: Time{rec.CreatedAt}, UpdatedAt: Time{rec.UpdatedAt},
	}
	if len(e.Value) == 0 {
		e.Value = json.RawMessage("{}")
	}
	if len(e.Scope) == 0 {
		e.Scope = json.RawMessage("{}")
	}
	if len(e.TTL) == 0 {
		e.TTL = json.RawMessage("null")
	}
	if e.Tags == nil {
		e.Tags = []string{}
	}
	e.Priority = cmpOr(e.Priority, "normal")
	sens := sensitivityOf(rec.Sensitivity)
	e.Sensitivity = &sens
	if at := rec.Lifecycle.ExpiresAt; at != nil {
		e.ExpiresAt = &Time{*at}
	}
	return e, s, true
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// sensitivityOf maps engram's five classes onto RFC-0015's four (§9.2):
// public is public, low internal, medium confidential, high and hyper
// restricted.
func sensitivityOf(s memory.Sensitivity) string {
	switch s {
	case memory.Public:
		return "public"
	case memory.Medium:
		return "confidential"
	case memory.High, memory.Hyper:
		return "restricted"
	default:
		return "internal"
	}
}

// sensitivityFrom maps RFC-0015's classes onto engram's; the inverse of
// [sensitivityOf] on its range.
func sensitivityFrom(s string) memory.Sensitivity {
	switch s {
	case "public":
		return memory.Public
	case "confidential":
		return memory.Medium
	case "restricted":
		return memory.High
	default:
		return memory.Low
	}
}

// fieldError is one entry of a 400 body's errors.
type fieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// MaxValueBytes is the largest value accepted (RFC-0015 §1.3: entries are
// structured state; bulk data goes in attachments).
const MaxValueBytes = 64 << 10

// createRequest is a decoded create (or batch upsert) body.
type createRequest struct {
	stored
	Tags        []string
	Sensitivity *string
	ExpiresAt   *time.Time
}

// known are the members of a create body this package reads.
var known = []string{"agent_id", "namespace", "key", "value", "memory_type", "scope", "tags", "ttl",
	"pinned", "priority", "sensitivity", "curated_by", "expires_at", "id", "version"}

// decodeCreate reads a create body; agent is the X-Agent-ID header, the
// agent_id when the body names none. Problems are returned as field errors.
func decodeCreate(body map[string]json.RawMessage, agent string) (createRequest, []fieldError) {
	var req createRequest
	var errs []fieldError
	bad := func(field, format string, args ...any) {
		errs = append(errs, fieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	str := func(name string, required bool) string {
		raw, ok := body[name]
		if !ok || string(raw) == "null" {
			if required {
				bad(name, "is required")
			}
			return ""
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			bad(name, "must be a string")
			return ""
		}
		if required && strings.TrimSpace(s) == "" {
			bad(name, "must not be empty")
		}
		return s
	}
	req.AgentID = cmpOr(str("agent_id", false), agent)
	if req.AgentID == "" {
		bad("agent_id", "is required (or the X-Agent-ID header)")
	}
	req.Namespace = str("namespace", true)
	req.Key = str("key", true)
	for _, f := range []struct{ name, v string }{{"agent_id", req.AgentID}, {"namespace", req.Namespace}, {"key", req.Key}} {
		if len(f.v) > 200 {
			bad(f.name, "is longer than 200 bytes")
		}
	}
	req.MemoryType = cmpOr(str("memory_type", false), TierWorking)
	if !slices.Contains(tiers, req.MemoryType) {
		bad("memory_type", "must be one of working, episodic, semantic")
	}
	if raw, ok := body["value"]; !ok || !isObject(raw) {
		bad("value", "is required: a JSON object")
	} else if len(raw) > MaxValueBytes {
		bad("value", "is over %d bytes; store bulk data as an attachment and reference it (RFC-0015 §1.3)", MaxValueBytes)
	} else {
		req.Value = compact(raw)
	}
	errs = append(errs, req.decodeMutable(body)...)
	if raw, ok := body["scope"]; ok && string(raw) != "null" {
		if !isObject(raw) {
			bad("scope", "must be an object, such as {\"task_id\": \"task_1\"}")
		} else {
			req.Scope = compact(raw)
			if len(req.taskID()) > 180 {
				bad("scope", "task_id is longer than 180 bytes")
			}
		}
	}
	if raw, ok := body["ttl"]; ok && string(raw) != "null" {
		if _, err := parseTTL(raw); err != nil {
			bad("ttl", "%s", err.Error())
		} else {
			req.TTL = compact(raw)
		}
	}
	if s := str("sensitivity", false); s != "" {
		if !slices.Contains(sensitivities, s) {
			bad("sensitivity", "must be null or one of public, internal, confidential, restricted")
		}
		req.Sensitivity = &s
	}
	if s := str("curated_by", false); s != "" {
		req.CuratedBy = &s
	}
	if s := str("expires_at", false); s != "" {
		t, err := parseTime(s)
		if err != nil {
			bad("expires_at", "must be an ISO 8601 timestamp with an offset, such as 2026-02-08T10:00:00+00:00")
		}
		req.ExpiresAt = &t
	}
	for name, raw := range body {
		if !slices.Contains(known, name) {
			if req.Extra == nil {
				req.Extra = map[string]json.RawMessage{}
			}
			req.Extra[name] = compact(raw)
		}
	}
	req.Priority = cmpOr(req.Priority, "normal")
	return req, errs
}

// decodeMutable reads the members an update may change besides the value:
// tags, pinned and priority.
func (req *createRequest) decodeMutable(body map[string]json.RawMessage) []fieldError {
	var errs []fieldError
	if raw, ok := body["tags"]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &req.Tags) != nil {
			errs = append(errs, fieldError{"tags", "must be an array of strings"})
		}
		for _, t := range req.Tags {
			if strings.TrimSpace(t) == "" || len(t) > 200 {
				errs = append(errs, fieldError{"tags", "each tag must be 1 to 200 bytes"})
				break
			}
		}
	}
	if raw, ok := body["pinned"]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &req.Pinned) != nil {
			errs = append(errs, fieldError{"pinned", "must be true or false"})
		}
	}
	if raw, ok := body["priority"]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &req.Priority) != nil || !slices.Contains(priorities, req.Priority) {
			errs = append(errs, fieldError{"priority", "must be one of low, normal, high"})
		}
	}
	return errs
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return false
	}
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// TaskLifetime is the ttl of an entry that lives as long as its task
// (RFC-0015 §1.1): it is archived and deleted when the task completes.
const TaskLifetime = "task_lifetime"

// parseTTL reads a ttl (RFC-0015 §1.1): "task_lifetime" (no time, zero),
// "duration:<ISO 8601 duration>", or, as the SDK page has it, a number of
// seconds.
func parseTTL(raw json.RawMessage) (time.Duration, error) {
	var secs float64
	if json.Unmarshal(raw, &secs) == nil {
		if secs <= 0 {
			return 0, fmt.Errorf("must be a positive number of seconds")
		}
		return time.Duration(secs * float64(time.Second)), nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return 0, fmt.Errorf("must be null, %q, \"duration:<ISO 8601>\" or seconds", TaskLifetime)
	}
	if s == TaskLifetime {
		return 0, nil
	}
	iso, ok := strings.CutPrefix(s, "duration:")
	if !ok {
		return 0, fmt.Errorf("must be null, %q, \"duration:<ISO 8601>\" (such as duration:PT24H) or seconds", TaskLifetime)
	}
	d, err := isoDuration(iso)
	if err != nil {
		return 0, err
	}
	return d, nil
}

var isoPattern = regexp.MustCompile(`^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$`)

// isoDuration reads an ISO 8601 duration of weeks, days, hours, minutes
// and seconds (years and months have no fixed length).
func isoDuration(s string) (time.Duration, error) {
	m := isoPattern.FindStringSubmatch(s)
	if m == nil || s == "P" || strings.HasSuffix(s, "T") {
		return 0, fmt.Errorf("%q is not an ISO 8601 duration of weeks, days, hours, minutes and seconds, such as PT24H", s)
	}
	var d time.Duration
	for i, unit := range []time.Duration{7 * 24 * time.Hour, 24 * time.Hour, time.Hour, time.Minute, time.Second} {
		if m[i+1] == "" {
			continue
		}
		v, err := strconv.ParseFloat(m[i+1], 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not an ISO 8601 duration", s)
		}
		d += time.Duration(v * float64(unit))
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration", s)
	}
	return d, nil
}

// expiry is when an entry created at now expires: expires_at when given
// (it takes precedence, §1.1), else now plus its ttl's duration, else
// never.
func (req createRequest) expiry(now time.Time) *time.Time {
	if req.ExpiresAt != nil {
		t := req.ExpiresAt.UTC()
		return &t
	}
	if len(req.TTL) == 0 {
		return nil
	}
	d, err := parseTTL(req.TTL)
	if err != nil || d == 0 {
		return nil
	}
	t := now.Add(d).UTC()
	return &t
}
