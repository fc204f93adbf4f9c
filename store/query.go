package store

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/engram-dev/engram/internal/pg"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/memory"
)

// Filter selects records for [List]. Zero fields do not filter.
type Filter struct {
	Types []memory.Type
	// Statuses defaults to the active set (active and contested).
	Statuses      []memory.Status
	Scope         *string
	Tags          []string // records having every one of these tags
	Sensitivities []memory.Sensitivity
	Subject       string
	Predicate     string
	// Flag selects the records flagged with it now (flags have no history).
	Flag memory.FlagKind
	// AgentID selects the records of that agent (their agent_id), ThreadID
	// those of that thread (their thread_id).
	AgentID, ThreadID string
	// ScopePrefix selects the records whose scope starts with it.
	ScopePrefix string
	// AnyTags selects the records having at least one of these tags.
	AnyTags []string
	// UpdatedAfter and UpdatedBefore select the records last updated
	// strictly after, or strictly before, the time.
	UpdatedAfter, UpdatedBefore *time.Time
	// AsOf, when set, lists the records as they were at that time, from the
	// version log.
	AsOf *time.Time
	// Newest lists the newest records first (descending id, which is
	// creation order: ids are UUIDv7); the default is oldest first.
	Newest bool
	Limit  int
	Cursor string
	// Visible, when set, keeps the records a key may read (write-path RFC
	// §12.8.5); nil lists everything of the tenant.
	Visible *Visibility
}

// Visibility is what a key may read, as a listing selects it: the layers
// it reads whole, the layers it reads only for its own agent, its
// clearance and its domains.
type Visibility struct {
	Layers []memory.Type
	// Own are read only where agent_id is Agent (never when Agent is empty).
	Own   []memory.Type
	Agent string
	// MaxSensitivity is the clearance: nothing more sensitive is listed.
	MaxSensitivity memory.Sensitivity
	// Domains, when not empty, keeps the records each of whose domain:X
	// tags names one of them.
	Domains []string
}

// Page is one page of a listing. NextCursor is empty on the last page.
type Page struct {
	Records    []memory.Record
	NextCursor string
}

// DefaultLimit and MaxLimit bound a page.
const (
	DefaultLimit = 50
	MaxLimit     = 1000
)

// listWhere filters a listing; unset parameters are NULL and match all.
// The cursor ($9) and the order follow it: oldestFirst or newestFirst.
const listWhere = `
	($2::text[] IS NULL OR type = ANY($2))
	AND status = ANY($3)
	AND ($4::text IS NULL OR scope = $4)
	AND ($5::text[] IS NULL OR tags @> $5)
	AND ($6::text[] IS NULL OR sensitivity = ANY($6))
	AND ($7::text IS NULL OR subject = $7)
	AND ($8::text IS NULL OR predicate = $8)
	AND ($11::text IS NULL OR id IN (SELECT f.record_id FROM record_flags f WHERE f.tenant_id = $1 AND f.flag = $11))
	AND ($12::text[] IS NULL OR type = ANY($12) OR (type = ANY($13) AND $14 <> '' AND agent_id = $14))
	AND ($15::int IS NULL OR array_position('{public,low,medium,high,hyper}'::text[], sensitivity) - 1 <= $15)
	AND ($16::text[] IS NULL OR NOT EXISTS (
		SELECT 1 FROM unnest(tags) t WHERE t LIKE 'domain:_%' AND substr(t, 8) <> ALL ($16)))
	AND ($17::text IS NULL OR agent_id = $17)
	AND ($18::text IS NULL OR starts_with(scope, $18))
	AND ($19::text[] IS NULL OR tags && $19)
	AND ($20::timestamptz IS NULL OR updated_at > $20)
	AND ($21::timestamptz IS NULL OR updated_at < $21)
	AND ($22::text IS NULL OR thread_id = $22)`

// oldestFirst and newestFirst end a listing: the page after the cursor $9,
// in id order or its reverse.
const (
	oldestFirst = `
	AND ($9::uuid IS NULL OR id > $9)
ORDER BY id
LIMIT $10`
	newestFirst = `
	AND ($9::uuid IS NULL OR id < $9)
ORDER BY id DESC
LIMIT $10`
)

const (
	listSQL       = `SELECT ` + recordColumns + ` FROM records WHERE tenant_id = $1 AND ` + listWhere + oldestFirst
	listNewestSQL = `SELECT ` + recordColumns + ` FROM records WHERE tenant_id = $1 AND ` + listWhere + newestFirst
)

// versionsAsOf is each record of a tenant as it was at $23: the last
// snapshot recorded by then.
const versionsAsOf = `
WITH r AS (
	SELECT DISTINCT ON (v.record_id) s.*
	FROM record_versions v, jsonb_populate_record(NULL::records, v.snapshot) s
	WHERE v.tenant_id = $1 AND v.recorded_at <= $23
	ORDER BY v.record_id, v.version DESC
)`

const (
	listAsOfSQL       = versionsAsOf + ` SELECT ` + recordColumns + ` FROM r WHERE ` + listWhere + oldestFirst
	listAsOfNewestSQL = versionsAsOf + ` SELECT ` + recordColumns + ` FROM r WHERE ` + listWhere + newestFirst
)

// args are the listing's parameters $12 to $16: all NULL without a
// visibility, which match every record.
func (v *Visibility) args() []any {
	if v == nil {
		return []any{nil, nil, nil, nil, nil}
	}
	layers := strs(v.Layers)
	if layers == nil {
		layers = []string{} // reads no layer whole: not NULL, which is all
	}
	own := strs(v.Own)
	if own == nil {
		own = []string{}
	}
	var rank *int
	if v.MaxSensitivity != "" {
		r := v.MaxSensitivity.Rank()
		rank = &r
	}
	var domains []string
	if len(v.Domains) > 0 {
		domains = v.Domains
	}
	return []any{layers, own, v.Agent, rank, domains}
}

// List returns one page of a tenant's records, in id (creation) order, or
// its reverse with f.Newest.
func List(ctx context.Context, db pg.DBTX, tenant string, f Filter) (Page, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	var after *uuid.UUID
	if f.Cursor != "" {
		id, err := decodeCursor(f.Cursor)
		if err != nil {
			return Page{}, err
		}
		after = &id
	}
	statuses := f.Statuses
	if len(statuses) == 0 {
		statuses = []memory.Status{memory.Active, memory.Contested}
	}
	// QueryExecModeExec plans each listing with its actual parameters: a
	// cached generic plan cannot drop the filters left NULL and falls back
	// to a sequential scan.
	args := []any{pgx.QueryExecModeExec, tenant, strs(f.Types), strs(statuses), f.Scope, strs(f.Tags), strs(f.Sensitivities),
		nilIfZero(f.Subject), nilIfZero(f.Predicate), after, limit + 1, nilIfZero(string(f.Flag))}
	args = append(args, f.Visible.args()...)
	args = append(args, nilIfZero(f.AgentID), nilIfZero(f.ScopePrefix), strs(f.AnyTags), f.UpdatedAfter, f.UpdatedBefore,
		nilIfZero(f.ThreadID))
	query := listSQL
	if f.Newest {
		query = listNewestSQL
	}
	if f.AsOf != nil {
		query, args = listAsOfSQL, append(args, *f.AsOf)
		if f.Newest {
			query = listAsOfNewestSQL
		}
	}
	rows, err := db.Query(ctx, query, args...)
	if err != nil {
		return Page{}, fmt.Errorf("list records: %w", err)
	}
	recs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (memory.Record, error) { return scanRecord(row) })
	if err != nil {
		return Page{}, fmt.Errorf("list records: %w", err)
	}
	var page Page
	if len(recs) > limit {
		recs = recs[:limit]
		page.NextCursor = encodeCursor(recs[limit-1].ID)
	}
	if err := complete(ctx, db, tenant, recs, f.AsOf); err != nil {
		return Page{}, err
	}
	page.Records = recs
	return page, nil
}

const getAsOfSQL = `
SELECT ` + recordColumns + ` FROM (
	SELECT v.version AS v_version, s.*
	FROM record_versions v, jsonb_populate_record(NULL::records, v.snapshot) s
	WHERE v.tenant_id = $1 AND v.record_id = $2 AND v.recorded_at <= $3
) x
ORDER BY v_version DESC
LIMIT 1`

// GetAsOf returns a record as it was at time at, from the version log. It
// is [ErrNotFound] if the record did not exist yet (or has been purged).
func GetAsOf(ctx context.Context, db pg.DBTX, tenant string, id uuid.UUID, at time.Time) (memory.Record, error) {
	r, err := scanRecord(db.QueryRow(ctx, getAsOfSQL, tenant, id, at))
	if err != nil {
		return r, err
	}
	recs := []memory.Record{r}
	if err := complete(ctx, db, tenant, recs, &at); err != nil {
		return r, err
	}
	return recs[0], nil
}

// Version is one revision of a record from the version log.
type Version struct {
	Version    int
	RecordedAt time.Time
	Record     memory.Record
}

const historySQL = `
SELECT v_version, v_recorded_at, ` + recordColumns + ` FROM (
	SELECT v.version AS v_version, v.recorded_at AS v_recorded_at, s.*
	FROM record_versions v, jsonb_populate_record(NULL::records, v.snapshot) s
	WHERE v.tenant_id = $1 AND v.record_id = $2
) x
ORDER BY v_version`

// History returns every revision of a record, oldest first.
func History(ctx context.Context, db pg.DBTX, tenant string, id uuid.UUID) ([]Version, error) {
	rows, err := db.Query(ctx, historySQL, tenant, id)
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Version, error) {
		var v Version
		var r memory.Record
		var scanErr error
		r, scanErr = scanRecord(prefixRow{row: row, dst: []any{&v.Version, &v.RecordedAt}})
		v.Record, v.RecordedAt = r, v.RecordedAt.UTC()
		return v, scanErr
	})
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	if len(out) == 0 {
		return nil, ErrNotFound
	}
	// Each version of an episode shows the entries appended by then.
	entries, err := episodeEntries(ctx, db, tenant, []memory.Record{out[len(out)-1].Record}, nil)
	if err != nil {
		return nil, err
	}
	if es := entries[id]; len(es) > 0 {
		for i := range out {
			until := out[i].RecordedAt
			if i == len(out)-1 {
				until = time.Now() // the latest version shows every entry
			}
			if out[i].Record.Payload, err = mergeEntries(out[i].Record.Payload, es, &until); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// prefixRow scans leading columns into dst before handing the rest to a
// record scan.
type prefixRow struct {
	row pgx.Row
	dst []any
}

func (p prefixRow) Scan(dest ...any) error { return p.row.Scan(append(p.dst, dest...)...) }

// AuditEntry is one audited action on a record (substrate RFC §15A.8).
type AuditEntry struct {
	ID        int64
	RecordID  uuid.UUID
	Action    string
	Actor     string
	At        time.Time
	Version   *int // the record's version the action made, if it made one
	Rationale string
	Evidence  []memory.Source
}

const auditSQL = `
SELECT id, record_id, action, actor, at, version, rationale, evidence
FROM audit_log WHERE tenant_id = $1 AND record_id = $2 ORDER BY id`

// Audit returns the audit trail of a record, oldest first. It outlives a
// purge.
func Audit(ctx context.Context, db pg.DBTX, tenant string, id uuid.UUID) ([]AuditEntry, error) {
	rows, err := db.Query(ctx, auditSQL, tenant, id)
	if err != nil {
		return nil, fmt.Errorf("read audit: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (AuditEntry, error) {
		var e AuditEntry
		err := row.Scan(&e.ID, &e.RecordID, &e.Action, &e.Actor, &e.At, &e.Version, &e.Rationale, &e.Evidence)
		e.At = e.At.UTC()
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("read audit: %w", err)
	}
	if len(out) == 0 {
		return nil, ErrNotFound
	}
	return out, nil
}

// Edge is a relation seen from one record: outgoing (the record is the
// source) or incoming (the record is the target).
type Edge struct {
	SourceID  uuid.UUID
	Predicate memory.Predicate
	TargetID  uuid.UUID
	Weight    *float64
	CreatedAt time.Time
}

const relationsSQL = `
SELECT source_id, predicate, target_id, weight, created_at
FROM relations WHERE tenant_id = $1 AND (source_id = $2 OR target_id = $2)
ORDER BY created_at, source_id, predicate, target_id`

// Relations returns every relation a record takes part in, either end.
func Relations(ctx context.Context, db pg.DBTX, tenant string, id uuid.UUID) ([]Edge, error) {
	if _, err := Get(ctx, db, tenant, id); err != nil {
		return nil, err
	}
	rows, err := db.Query(ctx, relationsSQL, tenant, id)
	if err != nil {
		return nil, fmt.Errorf("read relations: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Edge, error) {
		var e Edge
		err := row.Scan(&e.SourceID, &e.Predicate, &e.TargetID, &e.Weight, &e.CreatedAt)
		e.CreatedAt = e.CreatedAt.UTC()
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("read relations: %w", err)
	}
	return out, nil
}

const outgoingSQL = `
SELECT source_id, predicate, target_id, weight
FROM relations
WHERE tenant_id = $1 AND source_id = ANY($2) AND ($3::timestamptz IS NULL OR created_at <= $3)
ORDER BY created_at, predicate, target_id`

// attachRelations sets the outgoing relations of recs (as they were at
// asOf, when set) with one query.
func attachRelations(ctx context.Context, db pg.DBTX, tenant string, recs []memory.Record, asOf *time.Time) error {
	if len(recs) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(recs))
	at := make(map[uuid.UUID]int, len(recs))
	for i, r := range recs {
		ids[i], at[r.ID] = r.ID, i
	}
	rows, err := db.Query(ctx, outgoingSQL, tenant, ids, asOf)
	if err != nil {
		return fmt.Errorf("read relations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var src uuid.UUID
		var rel memory.Relation
		if err := rows.Scan(&src, &rel.Predicate, &rel.TargetID, &rel.Weight); err != nil {
			return fmt.Errorf("read relations: %w", err)
		}
		recs[at[src]].Relations = append(recs[at[src]].Relations, rel)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read relations: %w", err)
	}
	return nil
}

// cursorEncoding writes a cursor, the last record id of a page. Strict, and
// of one length, it reads back only what it wrote: base64 otherwise
// accepts stray low bits in the last character and ignores newlines.
var cursorEncoding = base64.RawURLEncoding.Strict()

func encodeCursor(id uuid.UUID) string { return cursorEncoding.EncodeToString(id[:]) }

func decodeCursor(c string) (uuid.UUID, error) {
	if len(c) != cursorEncoding.EncodedLen(len(uuid.Nil)) {
		return uuid.Nil, ErrBadCursor
	}
	b, err := cursorEncoding.DecodeString(c)
	if err != nil || len(b) != len(uuid.Nil) {
		return uuid.Nil, ErrBadCursor
	}
	return uuid.UUID(b), nil
}

// strs converts a list of named strings to the []string the exec query
// mode can encode; an empty list is NULL, which filters nothing.
func strs[T ~string](s []T) []string {
	if len(s) == 0 {
		return nil
	}
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = string(v)
	}
	return out
}

func nilIfZero(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
