package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
)

// RecordFilter is the query of [Client.ListRecords]: each field set
// narrows the listing (GET /v1/records); the zero filter lists the active
// records, newest first.
type RecordFilter struct {
	Types         []memory.Type
	Statuses      []memory.Status // "all" for every status
	Tags          []string
	Sensitivities []memory.Sensitivity
	// Scope, when not nil, lists the records of that scope; an empty one
	// those without a scope.
	Scope              *string
	Subject, Predicate string
	Flag               memory.FlagKind
	// AgentID lists the records of that agent, ThreadID those of that
	// thread; ScopePrefix those whose scope starts with it; AnyTags those
	// with at least one of these tags.
	AgentID, ThreadID, ScopePrefix string
	AnyTags                        []string
	// UpdatedAfter and UpdatedBefore, when not zero, list the records last
	// updated strictly after, or strictly before, that time.
	UpdatedAfter, UpdatedBefore time.Time
	// AsOf lists the records as they were then.
	AsOf time.Time
	// Newest lists the newest records first; the default is oldest first.
	Newest bool
	Limit  int
	Cursor string
}

// Values is the filter as query parameters.
func (f RecordFilter) Values() url.Values {
	q := url.Values{}
	for _, t := range f.Types {
		q.Add("type", string(t))
	}
	for _, s := range f.Statuses {
		q.Add("status", string(s))
	}
	for _, t := range f.Tags {
		q.Add("tag", t)
	}
	for _, s := range f.Sensitivities {
		q.Add("sensitivity", string(s))
	}
	if f.Scope != nil {
		q.Set("scope", *f.Scope)
	}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("subject", f.Subject)
	set("predicate", f.Predicate)
	set("flag", string(f.Flag))
	set("cursor", f.Cursor)
	set("agent_id", f.AgentID)
	set("thread_id", f.ThreadID)
	set("scope_prefix", f.ScopePrefix)
	for _, t := range f.AnyTags {
		q.Add("tag_any", t)
	}
	for k, t := range map[string]time.Time{"updated_after": f.UpdatedAfter, "updated_before": f.UpdatedBefore} {
		if !t.IsZero() {
			q.Set(k, t.UTC().Format(time.RFC3339Nano))
		}
	}
	if !f.AsOf.IsZero() {
		q.Set("as_of", f.AsOf.UTC().Format(time.RFC3339Nano))
	}
	if f.Newest {
		q.Set("order", "newest")
	}
	if f.Limit != 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	return q
}

// CreateRecord creates a record through the write path's gates (POST
// /v1/records) and returns it as stored; rationale, when set, is recorded
// in its audit trail. rec is the new record's JSON document (a map, a
// json.RawMessage, or a struct with the fields to set): not a
// [memory.Record], whose zero fields would be sent as values.
func (c *Client) CreateRecord(ctx context.Context, rec any, rationale string, opts ...CallOption) (*memory.Record, error) {
	var q url.Values
	if rationale != "" {
		q = url.Values{"rationale": {rationale}}
	}
	var out memory.Record
	if err := c.Do(ctx, "POST", "/v1/records", q, rec, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetRecord returns a record (GET /v1/records/{id}).
func (c *Client) GetRecord(ctx context.Context, id uuid.UUID, opts ...CallOption) (*memory.Record, error) {
	var out memory.Record
	if err := c.Do(ctx, "GET", recordPath(id, ""), nil, nil, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListRecords returns one page of the records f selects (GET
// /v1/records); the page's NextCursor, set as f.Cursor, is the next.
func (c *Client) ListRecords(ctx context.Context, f RecordFilter, opts ...CallOption) (*api.RecordPage, error) {
	var out api.RecordPage
	if err := c.Do(ctx, "GET", "/v1/records", f.Values(), nil, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdateRecord revises working memory in place (PATCH /v1/records/{id}).
func (c *Client) UpdateRecord(ctx context.Context, id uuid.UUID, req api.UpdateRequest, opts ...CallOption) (*memory.Record, error) {
	var out memory.Record
	if err := c.Do(ctx, "PATCH", recordPath(id, ""), nil, req, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}

// Revision methods of POST /v1/records/{id}:{op}.
const (
	Supersede  = "supersede"
	Fork       = "fork"
	Contest    = "contest"
	Retract    = "retract"
	Rollback   = "rollback"
	Restore    = "restore"
	Quarantine = "quarantine"
	Release    = "release"
	Append     = "append"
	Purge      = "purge"
)

// Revise applies a revision method op (such as [Supersede]) to a record
// (POST /v1/records/{id}:{op}) and returns the answer, whose shape is the
// method's: {"superseded", "record"} for supersede, {"forked", "records"}
// for fork, {"records"} for contest, the record for the others.
func (c *Client) Revise(ctx context.Context, id uuid.UUID, op string, req api.ReviseRequest, opts ...CallOption) (json.RawMessage, error) {
	var out json.RawMessage
	if err := c.Do(ctx, "POST", recordPath(id, ":"+op), nil, req, &out, opts...); err != nil {
		return nil, err
	}
	return out, nil
}

// Merge merges req.RecordIDs into one record (POST /v1/records:merge).
func (c *Client) Merge(ctx context.Context, req api.ReviseRequest, opts ...CallOption) (json.RawMessage, error) {
	var out json.RawMessage
	if err := c.Do(ctx, "POST", "/v1/records:merge", nil, req, &out, opts...); err != nil {
		return nil, err
	}
	return out, nil
}

// Batch runs several operations in one transaction of the write path
// (POST /v1/records:batch): all are written, or, when one fails, none; its
// problem's Operation names it.
func (c *Client) Batch(ctx context.Context, req api.BatchRequest, opts ...CallOption) (*api.BatchResult, error) {
	var out api.BatchResult
	if err := c.Do(ctx, "POST", "/v1/records:batch", nil, req, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteRecord deletes a record (DELETE /v1/records/{id}) and returns the
// answer.
func (c *Client) DeleteRecord(ctx context.Context, id uuid.UUID, rationale string, opts ...CallOption) (json.RawMessage, error) {
	var q url.Values
	if rationale != "" {
		q = url.Values{"rationale": {rationale}}
	}
	var out json.RawMessage
	if err := c.Do(ctx, "DELETE", recordPath(id, ""), q, nil, &out, opts...); err != nil {
		return nil, err
	}
	return out, nil
}

// History returns every version of a record, oldest first (GET
// /v1/records/{id}/history).
func (c *Client) History(ctx context.Context, id uuid.UUID, opts ...CallOption) (*api.RecordHistory, error) {
	var out api.RecordHistory
	if err := c.Do(ctx, "GET", recordPath(id, "/history"), nil, nil, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}

// Audit returns a record's audit trail (GET /v1/records/{id}/audit).
func (c *Client) Audit(ctx context.Context, id uuid.UUID, opts ...CallOption) (*api.AuditTrail, error) {
	var out api.AuditTrail
	if err := c.Do(ctx, "GET", recordPath(id, "/audit"), nil, nil, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}

// Relations returns a record's relations (GET /v1/records/{id}/relations).
func (c *Client) Relations(ctx context.Context, id uuid.UUID, opts ...CallOption) (*api.RecordRelations, error) {
	var out api.RecordRelations
	if err := c.Do(ctx, "GET", recordPath(id, "/relations"), nil, nil, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}

func recordPath(id uuid.UUID, suffix string) string { return "/v1/records/" + id.String() + suffix }

// Outcomes of [Client.Admit]: how the write path took a new record
// (write-path RFC §12.3, §12.6), as its Engram-Write-Outcome header says.
const (
	// OutcomeCreated: the record is stored as it was sent.
	OutcomeCreated = "created"
	// OutcomeAbsorbed: a live record holds the same content; the answer is
	// that record, and nothing new was stored.
	OutcomeAbsorbed = "absorbed"
	// OutcomeMerged: the record was merged into a live near-duplicate, the
	// answer.
	OutcomeMerged = "merged"
	// OutcomeContested: the record contradicts an active one; both are
	// contested until resolved.
	OutcomeContested = "contested"
	// OutcomeQueued: the record is a draft waiting for a reviewer; its
	// review is [Admission.ReviewID].
	OutcomeQueued = "queued"
)

// Admission is the answer of [Client.Admit]: the record as the write path
// took it, the outcome ([OutcomeCreated] and the like) and, for a queued
// draft, the id of its review (GET /v1/reviews/{id}).
type Admission struct {
	Record   memory.Record
	Outcome  string
	ReviewID string
}

// Admit creates a record through the write path's gates, as
// [Client.CreateRecord] does (POST /v1/records), and also returns how the
// write path took it: created, absorbed into a duplicate, merged,
// contested, or queued for review.
func (c *Client) Admit(ctx context.Context, rec any, rationale string, opts ...CallOption) (*Admission, error) {
	var q url.Values
	if rationale != "" {
		q = url.Values{"rationale": {rationale}}
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	if raw, ok := rec.(json.RawMessage); ok {
		b = raw
	}
	res, err := c.send(ctx, "POST", "/v1/records", q, b, "application/json", opts)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	a := Admission{Outcome: res.Header.Get("Engram-Write-Outcome"), ReviewID: res.Header.Get("Engram-Review")}
	if err := json.NewDecoder(res.Body).Decode(&a.Record); err != nil {
		return nil, fmt.Errorf("decode POST /v1/records: %w", err)
	}
	if a.Outcome == "" {
		a.Outcome = OutcomeCreated
	}
	return &a, nil
}
