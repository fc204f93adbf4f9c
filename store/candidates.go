package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
)

// Candidate statuses (substrate RFC §15.4: ingestion produces candidates in
// a staging area; the policy plane classifies them).
const (
	CandidatePending = "pending"
	CandidateDone    = "done"
	CandidateDropped = "dropped"
	CandidateDead    = "dead"
)

// Candidate is one staged event.
type Candidate struct {
	Tenant      string             `json:"-"`
	ID          uuid.UUID          `json:"id"`
	Seq         int64              `json:"seq"`
	AgentID     string             `json:"agent_id"`
	ThreadID    string             `json:"thread_id"`
	Kind        memory.EventKind   `json:"kind"`
	Time        time.Time          `json:"time"`
	Event       json.RawMessage    `json:"event"`
	DedupKey    []byte             `json:"-"`
	Sensitivity memory.Sensitivity `json:"sensitivity"`
	Redactions  []string           `json:"redactions,omitempty"`
	Status      string             `json:"status"`
	Attempts    int                `json:"attempts"`
	LastError   string             `json:"last_error,omitempty"`
	Decision    json.RawMessage    `json:"decision,omitempty"`
	RecordIDs   []uuid.UUID        `json:"record_ids,omitempty"`
	ReceivedAt  time.Time          `json:"received_at"`
}

// Staged is the answer for one staged event: its id, and whether it was a
// retry absorbed into an event staged before.
type Staged struct {
	ID        uuid.UUID
	Duplicate bool
}

// Stage writes a batch of events to the staging area in one transaction
// (substrate RFC §15.4): when it returns, every event is durable. Events
// are inserted in their order, so that a thread's events keep theirs. An
// event whose dedup key was staged before (a retry, write-path RFC
// §12.1.7), earlier in the batch or by an earlier one, is absorbed: it
// gets the first event's id and Duplicate set. A large batch is sent with
// COPY (see stageCopyMin), with the same answers.
func Stage(ctx context.Context, db pg.DBTX, tenant string, cands []Candidate) ([]Staged, error) {
	return stage(ctx, db, tenant, cands, stageCopyMin)
}

// stage is [Stage], sending a batch of copyMin or more new events with COPY.
func stage(ctx context.Context, db pg.DBTX, tenant string, cands []Candidate, copyMin int) ([]Staged, error) {
	out := make([]Staged, len(cands))
	first := make(map[string]int, len(cands)) // dedup key -> first index in this batch
	fresh := make([]int, 0, len(cands))       // the first of each key, in order
	for i, c := range cands {
		if j, seen := first[string(c.DedupKey)]; seen {
			out[i] = Staged{ID: cands[j].ID, Duplicate: true}
			continue
		}
		first[string(c.DedupKey)] = i
		fresh = append(fresh, i)
		out[i] = Staged{ID: c.ID}
	}
	if len(fresh) == 0 {
		return out, nil
	}
	err := pg.WithTx(ctx, db, func(ctx context.Context, tx pgx.Tx) error {
		return insertFresh(ctx, tx, tenant, cands, fresh, copyMin, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

const stagedIDsSQL = `SELECT dedup_key, id FROM candidates WHERE tenant_id = $1 AND dedup_key = ANY($2)`

// insertFresh inserts cands[fresh], whose dedup keys are distinct, and
// answers in out each candidate whose key was staged before with the first
// id.
func insertFresh(ctx context.Context, tx pgx.Tx, tenant string, cands []Candidate, fresh []int, copyMin int, out []Staged) error {
	insert := insertArrays
	if len(fresh) >= copyMin {
		insert = insertCopy
	}
	inserted, err := insert(ctx, tx, tenant, cands, fresh)
	if err != nil {
		return fmt.Errorf("stage events: %w", err)
	}
	if len(inserted) == len(fresh) {
		return nil
	}
	// Some were staged before: answer them with the first ids.
	added := make(map[string]bool, len(inserted))
	for _, k := range inserted {
		added[string(k)] = true
	}
	var old [][]byte
	for _, i := range fresh {
		if k := cands[i].DedupKey; !added[string(k)] {
			old = append(old, k)
		}
	}
	rows, err := tx.Query(ctx, stagedIDsSQL, tenant, old)
	if err != nil {
		return fmt.Errorf("find staged events: %w", err)
	}
	defer rows.Close()
	earlier := make(map[string]uuid.UUID, len(old))
	for rows.Next() {
		var k []byte
		var id uuid.UUID
		if err := rows.Scan(&k, &id); err != nil {
			return fmt.Errorf("find staged events: %w", err)
		}
		earlier[string(k)] = id
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("find staged events: %w", err)
	}
	for i, c := range cands {
		if id, ok := earlier[string(c.DedupKey)]; ok {
			out[i] = Staged{ID: id, Duplicate: true}
		}
	}
	if len(earlier) < len(old) {
		// A first staging was deleted (released or erased) between the
		// insert that met it and this read: its retry is neither stored
		// nor the duplicate of anything stored, and must not be
		// acknowledged. Nothing of the batch is; sent again, it is
		// staged anew, in its order.
		return fmt.Errorf("find staged events: %w", &pgconn.PgError{Severity: "ERROR", Code: pg.SerializationFailure,
			Message: fmt.Sprintf("%d staged events were deleted while their retries were staged", len(old)-len(earlier))})
	}
	return nil
}

const stageSQL = `
INSERT INTO candidates (tenant_id, id, agent_id, thread_id, kind, event_time, event, dedup_key, sensitivity, redactions)
SELECT $1, t.id, t.agent_id, t.thread_id, t.kind, t.event_time, t.event, t.dedup_key, t.sensitivity,
	string_to_array(t.redactions, ',')
FROM unnest($2::uuid[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::jsonb[], $8::bytea[], $9::text[], $10::text[])
	WITH ORDINALITY AS t(id, agent_id, thread_id, kind, event_time, event, dedup_key, sensitivity, redactions, ord)
ORDER BY t.ord
ON CONFLICT (tenant_id, dedup_key) DO NOTHING
RETURNING dedup_key`

// insertArrays inserts cands[fresh] in one statement, each column an
// array, and returns the dedup keys of those it inserted.
func insertArrays(ctx context.Context, tx pgx.Tx, tenant string, cands []Candidate, fresh []int) ([][]byte, error) {
	n := len(fresh)
	ids, times := make([]uuid.UUID, n), make([]time.Time, n)
	agents, threads, kinds, sens, redact := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	events, keys := make([]json.RawMessage, n), make([][]byte, n)
	for j, i := range fresh {
		c := &cands[i]
		ids[j], agents[j], threads[j], kinds[j], times[j] = c.ID, c.AgentID, c.ThreadID, string(c.Kind), c.Time
		events[j], keys[j], sens[j], redact[j] = c.Event, c.DedupKey, string(c.Sensitivity), strings.Join(c.Redactions, ",")
	}
	rows, err := tx.Query(ctx, stageSQL, tenant, ids, agents, threads, kinds, times, events, keys, sens, redact)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[[]byte])
}

// stageCopyMin is the smallest batch [Stage] sends with COPY; smaller ones
// go as arrays in one INSERT. COPY streams a batch while the server reads
// it, but its temporary table costs the database more CPU for a batch of
// the stream handler's size (500 at most) and twice the time for 50; from
// a few thousand events (a large atomic POST) it is as cheap for the
// database and faster (BenchmarkStage).
const stageCopyMin = 2000

// The COPY path: the batch is copied into a temporary table of this
// transaction, then inserted from it in its order, as stageSQL does.
const (
	stageTableSQL = `
CREATE TEMP TABLE candidates_in (
	ord bigint, id uuid, agent_id text, thread_id text, kind text, event_time timestamptz,
	event jsonb, dedup_key bytea, sensitivity text, redactions text
) ON COMMIT DROP`
	stageFromTableSQL = `
INSERT INTO candidates (tenant_id, id, agent_id, thread_id, kind, event_time, event, dedup_key, sensitivity, redactions)
SELECT $1, t.id, t.agent_id, t.thread_id, t.kind, t.event_time, t.event, t.dedup_key, t.sensitivity,
	string_to_array(t.redactions, ',')
FROM candidates_in t
ORDER BY t.ord
ON CONFLICT (tenant_id, dedup_key) DO NOTHING
RETURNING dedup_key`
	// Dropped at once, not at commit: a caller's transaction may stage
	// twice.
	dropStageTableSQL = `DROP TABLE candidates_in`
)

var stageColumns = []string{"ord", "id", "agent_id", "thread_id", "kind", "event_time", "event", "dedup_key", "sensitivity", "redactions"}

// insertCopy copies cands[fresh] into a temporary table and inserts them
// from it, returning the dedup keys of those it inserted.
func insertCopy(ctx context.Context, tx pgx.Tx, tenant string, cands []Candidate, fresh []int) ([][]byte, error) {
	if _, err := tx.Exec(ctx, stageTableSQL); err != nil {
		return nil, err
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"candidates_in"}, stageColumns, pgx.CopyFromSlice(len(fresh), func(j int) ([]any, error) {
		c := &cands[fresh[j]]
		return []any{int64(j), c.ID, c.AgentID, c.ThreadID, string(c.Kind), c.Time, c.Event, c.DedupKey,
			string(c.Sensitivity), strings.Join(c.Redactions, ",")}, nil
	}))
	if err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, stageFromTableSQL, tenant)
	if err != nil {
		return nil, err
	}
	inserted, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, dropStageTableSQL); err != nil {
		return nil, err
	}
	return inserted, nil
}

const candidateColumns = `tenant_id, id, seq, agent_id, thread_id, kind, event_time, event, sensitivity, redactions,
	status, attempts, COALESCE(last_error, ''), decision, record_ids, received_at`

func scanCandidate(row pgx.Row) (Candidate, error) {
	var c Candidate
	err := row.Scan(&c.Tenant, &c.ID, &c.Seq, &c.AgentID, &c.ThreadID, &c.Kind, &c.Time, &c.Event, &c.Sensitivity,
		&c.Redactions, &c.Status, &c.Attempts, &c.LastError, &c.Decision, &c.RecordIDs, &c.ReceivedAt)
	c.Time, c.ReceivedAt = c.Time.UTC(), c.ReceivedAt.UTC()
	return c, err
}

// claimSQL takes the oldest pending candidates of one partition of threads.
// Every thread belongs to exactly one partition, so one worker at a time
// sees a thread's events, in the order they were staged.
const claimSQL = `
SELECT ` + candidateColumns + `
FROM candidates
WHERE status = 'pending' AND next_attempt_at <= now()
	AND (hashtext(tenant_id || '/' || thread_id) & 2147483647) % $1 = $2
ORDER BY seq
LIMIT $3
FOR UPDATE SKIP LOCKED`

// Claim locks up to limit pending candidates of partition (of partitions)
// for the transaction the store runs on; call it on a store over a
// transaction, and settle each candidate with [Store.Settle] before commit.
func Claim(ctx context.Context, db pg.DBTX, partition, partitions, limit int) ([]Candidate, error) {
	rows, err := db.Query(ctx, claimSQL, partitions, partition, limit)
	if err != nil {
		return nil, fmt.Errorf("claim candidates: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Candidate, error) { return scanCandidate(row) })
	if err != nil {
		return nil, fmt.Errorf("claim candidates: %w", err)
	}
	return out, nil
}

// Settlement is the outcome of classifying one candidate.
type Settlement struct {
	Tenant    string
	ID        uuid.UUID
	Status    string // CandidateDone or CandidateDropped
	Decision  json.RawMessage
	RecordIDs []uuid.UUID
}

// settleSQL finds each candidate by its primary key (the lateral LIMIT 1
// keeps the plan a loop of key look-ups) and updates that row: as a
// prepared statement's generic plan on a table the planner has no
// statistics for, the plain join looks each candidate up among every
// pending candidate of its tenant in candidates_by_status, a cost that
// grows with the backlog. The rows are the batch's, locked since it
// claimed them.
const settleSQL = `
UPDATE candidates c
SET status = u.status, decision = u.decision, record_ids = u.record_ids::uuid[], processed_at = now(), last_error = NULL
FROM unnest($1::text[], $2::uuid[], $3::text[], $4::jsonb[], $5::text[]) AS u(tenant_id, id, status, decision, record_ids)
CROSS JOIN LATERAL (SELECT x.ctid AS row FROM candidates x WHERE x.tenant_id = u.tenant_id AND x.id = u.id LIMIT 1) AS x
WHERE c.ctid = x.row AND c.tenant_id = u.tenant_id AND c.status = 'pending'`

// Settle marks claimed candidates classified, in the transaction that wrote
// their records: a candidate is classified exactly once.
func Settle(ctx context.Context, db pg.DBTX, settled []Settlement) error {
	if len(settled) == 0 {
		return nil
	}
	tenants, statuses, recs := make([]string, len(settled)), make([]string, len(settled)), make([]string, len(settled))
	ids, decisions := make([]uuid.UUID, len(settled)), make([]json.RawMessage, len(settled))
	for i, st := range settled {
		tenants[i], ids[i], statuses[i], decisions[i] = st.Tenant, st.ID, st.Status, st.Decision
		parts := make([]string, len(st.RecordIDs))
		for j, id := range st.RecordIDs {
			parts[j] = id.String()
		}
		recs[i] = "{" + strings.Join(parts, ",") + "}"
	}
	tag, err := db.Exec(ctx, settleSQL, tenants, ids, statuses, decisions, recs)
	if err != nil {
		return fmt.Errorf("settle candidates: %w", err)
	}
	if int(tag.RowsAffected()) != len(settled) {
		return fmt.Errorf("settle candidates: %d of %d were still pending", tag.RowsAffected(), len(settled))
	}
	return nil
}

const failSQL = `
UPDATE candidates
SET attempts = attempts + 1, last_error = $3,
	status = CASE WHEN attempts + 1 >= $4 THEN 'dead' ELSE 'pending' END,
	next_attempt_at = now() + make_interval(secs => least(300, power(2, attempts + 1)))
WHERE tenant_id = $1 AND id = $2 AND status = 'pending'
RETURNING status`

// Fail records a failed attempt to classify a candidate: it is retried
// with exponential backoff (2 s, 4 s, … up to 5 min) and after maxAttempts
// becomes dead, with reason kept for GET /v1/candidates?status=dead. It
// reports whether the candidate is now dead.
func Fail(ctx context.Context, db pg.DBTX, tenant string, id uuid.UUID, reason string, maxAttempts int) (dead bool, err error) {
	var status string
	if err := db.QueryRow(ctx, failSQL, tenant, id, reason, maxAttempts).Scan(&status); err != nil {
		return false, fmt.Errorf("fail candidate: %w", err)
	}
	return status == CandidateDead, nil
}

const listCandidatesSQL = `
SELECT ` + candidateColumns + `
FROM candidates
WHERE tenant_id = $1 AND status = $2 AND seq > $3
ORDER BY seq
LIMIT $4`

// Candidates lists a tenant's candidates with a status, oldest first, after
// the candidate with sequence number after.
func Candidates(ctx context.Context, db pg.DBTX, tenant, status string, after int64, limit int) ([]Candidate, error) {
	rows, err := db.Query(ctx, listCandidatesSQL, tenant, status, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list candidates: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Candidate, error) { return scanCandidate(row) })
	if err != nil {
		return nil, fmt.Errorf("list candidates: %w", err)
	}
	return out, nil
}

const backlogSQL = `SELECT count(*), COALESCE(min(received_at), now()) FROM candidates WHERE status = 'pending'`

// Backlog counts pending candidates across tenants and says when the oldest
// was received.
func Backlog(ctx context.Context, db pg.DBTX) (n int64, oldest time.Time, err error) {
	if err := db.QueryRow(ctx, backlogSQL).Scan(&n, &oldest); err != nil {
		return 0, time.Time{}, fmt.Errorf("count backlog: %w", err)
	}
	return n, oldest.UTC(), nil
}

const lockPendingSQL = `SELECT true FROM candidates WHERE tenant_id = $1 AND id = $2 AND status = 'pending' FOR UPDATE`

// LockPending locks a staged event that is still pending; false when it is
// not (another worker settled it).
func LockPending(ctx context.Context, db pg.DBTX, tenant string, id uuid.UUID) (bool, error) {
	var pending bool
	err := db.QueryRow(ctx, lockPendingSQL, tenant, id).Scan(&pending)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("lock candidate: %w", err)
	}
	return pending, nil
}
